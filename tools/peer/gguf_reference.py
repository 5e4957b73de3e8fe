#!/usr/bin/python3
"""Independent test-only GGUF writer, reader, quantizers and dequantizers.

Written from the published definitions (gguf-py's GGUFValueType / GGMLQuantizationType /
GGUFWriter layout, ggml's block structs and the reference rows of ggml-quants.c), not from
Strata's C++ and not copied from either source. Used by make_gguf_goldens.py to write
tests/golden/gguf/, against which Strata's ReadGguf is checked (shared/design/formats.md
section 4).

File layout (little-endian throughout):
    b"GGUF", u32 version (2 or 3), u64 tensor count, u64 metadata count,
    metadata: key (u64 length + UTF-8 bytes), u32 value type, value,
    tensor infos: name (u64 length + bytes), u32 n_dims, n_dims x u64 dims (ggml ne order:
        innermost first), u32 ggml type, u64 offset (relative to the data section),
    zero padding up to a multiple of the alignment (file offset), the data section: each
    tensor's bytes at its offset, zero padded to the alignment (the last one too).
The alignment is the UINT32 metadata value `general.alignment` (default 32).

Values: UINT8..INT32, FLOAT32, BOOL (1 byte, 0/1), UINT64, INT64, FLOAT64 as their packed
little-endian scalars; STRING = u64 length + bytes; ARRAY = u32 element type, u64 count,
the elements packed without their own type (an element array again carries its element
type and count).

In Python a metadata value is (vtype, value); an ARRAY's value is an Arr(elem_type, items),
where the items of an array of arrays are Arr's themselves.

Block types (array of structs along the innermost dim, rows in row-major order):
    Q8_0  {f16 d; i8 qs[32]}            34 bytes, x[j] = qs[j] * d
    Q4_0  {f16 d; u8 qs[16]}            18 bytes, x[j] = ((qs[j] & 15) - 8) * d,
                                                  x[j+16] = ((qs[j] >> 4) - 8) * d
    MXFP4 {u8 e; u8 qs[16]}             17 bytes, x[j] = KVALUES_MXFP4[qs[j] & 15] * 2^(e-128),
                                                  x[j+16] = KVALUES_MXFP4[qs[j] >> 4] * 2^(e-128)
ggml's MXFP4 table is the e2m1 values doubled and its scale GGML_E8M0_TO_FP32_HALF(e) is
2^(e-128) for every e (0 and 1 included, as its bit patterns 0x00200000 << e), so the value
is e2m1(code) * 2^(e-127), the OCP value, except that code 8 gives +0.0 (the OCP -0.0).

Run it to execute the self-check:  /usr/bin/python3 tools/peer/gguf_reference.py
"""
import struct

import numpy as np

F32 = np.float32

GGUF_MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32
MAX_NESTING = 64  # this reader's limit on arrays of arrays (levels of ARRAY)


class VT:
    """GGUF metadata value types (gguf-py's GGUFValueType)."""
    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


VT_NAMES = {v: k for k, v in vars(VT).items() if not k.startswith("_")}

# struct format of the fixed-size value types (BOOL is one byte, 0 or 1).
_SCALAR = {
    VT.UINT8: "<B", VT.INT8: "<b", VT.UINT16: "<H", VT.INT16: "<h",
    VT.UINT32: "<I", VT.INT32: "<i", VT.FLOAT32: "<f", VT.BOOL: "<B",
    VT.UINT64: "<Q", VT.INT64: "<q", VT.FLOAT64: "<d",
}


class GT:
    """The ggml tensor types Strata reads (ggml_type / GGMLQuantizationType)."""
    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q8_0 = 8
    I8 = 24
    I16 = 25
    I32 = 26
    I64 = 27
    F64 = 28
    BF16 = 30
    MXFP4 = 39


GT_NAMES = {v: k for k, v in vars(GT).items() if not k.startswith("_")}

# (elements per block, bytes per block)
BLOCK = {
    GT.F32: (1, 4), GT.F16: (1, 2), GT.Q4_0: (32, 18), GT.Q8_0: (32, 34),
    GT.I8: (1, 1), GT.I16: (1, 2), GT.I32: (1, 4), GT.I64: (1, 8), GT.F64: (1, 8),
    GT.BF16: (1, 2), GT.MXFP4: (32, 17),
}

# numpy dtype of the plain (block size 1) types
_PLAIN = {
    GT.F32: "<f4", GT.F16: "<f2", GT.I8: "<i1", GT.I16: "<i2", GT.I32: "<i4",
    GT.I64: "<i8", GT.F64: "<f8",
}

# ggml-common.h's kvalues_mxfp4: e2m1 values doubled, code 8 (-0) as 0.
KVALUES_MXFP4 = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12],
                         dtype=np.int64)


class Arr:
    """A metadata array: elem_type (a VT) and its items (Arr's for an array of arrays)."""

    def __init__(self, elem_type, items):
        self.elem_type = int(elem_type)
        self.items = list(items)

    def __eq__(self, other):
        return (isinstance(other, Arr) and self.elem_type == other.elem_type
                and self.items == other.items)

    def __repr__(self):
        return "Arr(%s, %r)" % (VT_NAMES.get(self.elem_type, self.elem_type), self.items)


# ---------------------------------------------------------------------------------------
# Serialisation of the pieces.


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v)


def pack_string(s):
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return u64(len(b)) + b


def pack_value(vtype, value):
    """The bytes of a value WITHOUT its u32 type."""
    if vtype in _SCALAR:
        if vtype == VT.BOOL:
            if not isinstance(value, bool):
                raise TypeError("BOOL wants a bool")
            return struct.pack("<B", 1 if value else 0)
        return struct.pack(_SCALAR[vtype], value)
    if vtype == VT.STRING:
        return pack_string(value)
    if vtype == VT.ARRAY:
        if not isinstance(value, Arr):
            raise TypeError("ARRAY wants an Arr")
        out = bytearray(u32(value.elem_type) + u64(len(value.items)))
        for item in value.items:
            out += pack_value(value.elem_type, item)
        return bytes(out)
    raise ValueError("unknown value type %r" % (vtype,))


def pack_kv(key, vtype, value):
    return pack_string(key) + u32(vtype) + pack_value(vtype, value)


def pad_to(n, alignment):
    return (n + alignment - 1) // alignment * alignment


def nbytes(gtype, ne):
    """Bytes of a tensor of ggml type gtype and dims ne (innermost first)."""
    bs, ts = BLOCK[gtype]
    if ne and ne[0] % bs:
        raise ValueError("innermost dim %d is not a multiple of the block size %d" % (ne[0], bs))
    n = 1
    for d in ne:
        n *= d
    return n // bs * ts


def build_gguf(kvs, tensors, version=3, magic=GGUF_MAGIC, alignment=DEFAULT_ALIGNMENT,
               n_kv=None, n_tensors=None):
    """Low-level assembler, no validation (also used for the hostile files).

    kvs: list of (key, vtype, value) or raw bytes (an already packed key/value).
    tensors: list of dicts: name (str/bytes), ne (dims innermost first; n_dims = len(ne)),
        type (int), data (bytes: the tensor's bytes), optional offset (default: the running
        offset, each tensor's data padded to the alignment).
    alignment: the one used for padding (the caller puts general.alignment in kvs).
    Returns (bytes, positions): positions has 'n_tensors', 'n_kv', 'version',
    'kv' (list of dicts key_len/type/value) and 'ti' (list of dicts name_len/n_dims/dims/
    type/offset), 'infos_end' (before the padding), 'data_start' and 'data' (each tensor's
    absolute data position).
    """
    pos = {"kv": [], "ti": []}
    out = bytearray(magic)
    pos["version"] = len(out)
    out += u32(version)
    pos["n_tensors"] = len(out)
    out += u64(len(tensors) if n_tensors is None else n_tensors)
    pos["n_kv"] = len(out)
    out += u64(len(kvs) if n_kv is None else n_kv)
    for kv in kvs:
        p = {"key_len": len(out)}
        if isinstance(kv, (bytes, bytearray)):
            out += kv
        else:
            key, vtype, value = kv
            out += pack_string(key)
            p["type"] = len(out)
            out += u32(vtype)
            p["value"] = len(out)
            out += pack_value(vtype, value)
        pos["kv"].append(p)
    # the data is laid out in order, each tensor at the running offset (padded); an
    # explicit offset only changes what the tensor info says
    running, auto = 0, []
    for t in tensors:
        auto.append(running)
        running = pad_to(running + len(t["data"]), alignment)
    for t, a in zip(tensors, auto):
        off = a if t.get("offset") is None else t["offset"]
        p = {"name_len": len(out)}
        out += pack_string(t["name"])
        p["n_dims"] = len(out)
        out += u32(len(t["ne"]))
        p["dims"] = len(out)
        for d in t["ne"]:
            out += u64(d)
        p["type"] = len(out)
        out += u32(t["type"])
        p["offset"] = len(out)
        out += u64(off)
        pos["ti"].append(p)
    pos["infos_end"] = len(out)
    out += bytes(pad_to(len(out), alignment) - len(out))
    pos["data_start"] = len(out)
    pos["data"] = []
    for t, a in zip(tensors, auto):
        pos["data"].append(pos["data_start"] + a)
        out += t["data"]
        out += bytes(pad_to(len(t["data"]), alignment) - len(t["data"]))
    return bytes(out), pos


class GGUFWriter:
    """A checked writer: metadata in insertion order, tensors in insertion order.

    The alignment is that of the general.alignment key when one is added (it must be a
    UINT32 power of two), else 32. add_tensor takes the LOGICAL shape (outermost first)
    and the tensor's bytes in ggml order (for block types: the blocks of each row)."""

    def __init__(self, version=3):
        if version not in (2, 3):
            raise ValueError("GGUF version must be 2 or 3")
        self.version = version
        self.kvs = []
        self.tensors = []

    def add(self, key, vtype, value):
        if any(k == key for k, _, _ in self.kvs):
            raise ValueError("duplicate key " + key)
        if key == "general.alignment":
            if vtype != VT.UINT32 or value <= 0 or value & (value - 1):
                raise ValueError("general.alignment must be a UINT32 power of two")
        self.kvs.append((key, vtype, value))

    @property
    def alignment(self):
        for k, _, v in self.kvs:
            if k == "general.alignment":
                return v
        return DEFAULT_ALIGNMENT

    def add_tensor(self, name, gtype, shape, data):
        if any(t["name"] == name for t in self.tensors):
            raise ValueError("duplicate tensor " + name)
        ne = [int(d) for d in reversed(tuple(shape))]
        if len(ne) > 4:
            raise ValueError("at most 4 dims")
        data = bytes(data)
        if nbytes(gtype, ne) != len(data):
            raise ValueError("%s: %d bytes, want %d" % (name, len(data), nbytes(gtype, ne)))
        self.tensors.append({"name": name, "ne": ne, "type": gtype, "data": data})

    def tobytes(self):
        return build_gguf(self.kvs, self.tensors, version=self.version,
                          alignment=self.alignment)[0]

    def write(self, path):
        with open(path, "wb") as f:
            f.write(self.tobytes())


# ---------------------------------------------------------------------------------------
# Element codecs.


def f16_bytes(x):
    """float32 -> IEEE half bytes, round to nearest even (ggml's GGML_FP32_TO_FP16)."""
    return np.asarray(x, dtype=np.float32).astype("<f2").tobytes()


def bf16_bits(x):
    """float32 -> bfloat16 bit patterns (uint16), round to nearest even; NaN kept quiet."""
    b = np.asarray(x, dtype=np.float32).reshape(-1).view(np.uint32).astype(np.uint64)
    nan = (b & 0x7FFFFFFF) > 0x7F800000
    r = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    r = np.where(nan, (b >> 16) | 0x40, r)
    return r.astype(np.uint16)


# ---------------------------------------------------------------------------------------
# Quantizers (rows of a multiple of 32 along the last axis; float32 arithmetic, one
# rounding per operation as ggml's reference rows written without FMA contraction).


def _blocks(x):
    x = np.asarray(x, dtype=np.float32)
    if x.shape[-1] % 32:
        raise ValueError("last dim must be a multiple of 32")
    return x.reshape(-1, 32)


def quantize_q8_0(x):
    """ggml quantize_row_q8_0_ref: d = amax/127, id = 1/d (0 if d == 0),
    q = roundf(x*id) (half away from zero), d stored as float16."""
    b = _blocks(x)
    out = bytearray()
    for row in b:
        amax = F32(0)
        for v in row:
            amax = max(amax, F32(abs(v)))
        d = F32(amax / F32(127))
        inv = F32(F32(1) / d) if d != 0 else F32(0)
        t = (row * inv).astype(np.float32)
        # roundf: half away from zero; floor(|t| + 0.5) exact in float64 for |t| < 2^52
        q = np.sign(t.astype(np.float64)) * np.floor(np.abs(t.astype(np.float64)) + 0.5)
        out += f16_bytes(d) + q.astype(np.int8).tobytes()
    return bytes(out)


def quantize_q4_0(x):
    """ggml quantize_row_q4_0_ref: max = the value of largest |x| (scan from amax = +0.0,
    replaced only on strictly greater, so the first on ties and +0.0 for an all-zero
    block), d = max / -8, id = 1/d (0 if d == 0), q = MIN(15, (int8)(x*id + 8.5f)) with
    each operation rounded to float32; d stored as float16."""
    b = _blocks(x)
    out = bytearray()
    for row in b:
        amax, vmax = F32(0), F32(0)
        for v in row:
            if amax < abs(v):
                amax, vmax = F32(abs(v)), F32(v)
        d = F32(vmax / F32(-8))
        inv = F32(F32(1) / d) if d != 0 else F32(0)
        t = (row * inv).astype(np.float32)
        u = (t + F32(8.5)).astype(np.float32)
        q = np.minimum(15, np.trunc(u.astype(np.float64)).astype(np.int64))
        if (q < 0).any():
            raise AssertionError("q4_0 code below 0")
        q = q.astype(np.uint8)
        out += f16_bytes(d) + (q[:16] | (q[16:] << 4)).astype(np.uint8).tobytes()
    return bytes(out)


def quantize_mxfp4(x):
    """After ggml quantize_row_mxfp4_ref: e = floor(log2(amax)) - 2 + 127 (0 for an all-zero
    block; computed exactly with frexp, clamped to [0, 254]), each element the first code of
    least |KVALUES_MXFP4[c] * 2^(e-128) - x| (exact in float64; code 8 is never chosen as
    code 0 has the same value and comes first)."""
    b = _blocks(x)
    out = bytearray()
    for row in b:
        amax = float(np.max(np.abs(row.astype(np.float64))))
        if amax > 0:
            _, k = np.frexp(amax)  # amax = m * 2^k, m in [0.5, 1): floor(log2) = k - 1
            e = min(254, max(0, int(k) - 1 - 2 + 127))
        else:
            e = 0
        d = 2.0 ** (e - 128)
        grid = KVALUES_MXFP4.astype(np.float64) * d
        err = np.abs(grid[None, :] - row.astype(np.float64)[:, None])
        codes = np.argmin(err, axis=1).astype(np.uint8)  # first minimum
        out += bytes([e]) + (codes[:16] | (codes[16:] << 4)).astype(np.uint8).tobytes()
    return bytes(out)


def encode_plain(gtype, x):
    """Bytes of the plain types from values (float types rounded RNE, ints exact)."""
    a = np.asarray(x)
    if gtype == GT.BF16:
        return bf16_bits(a.astype(np.float32)).astype("<u2").tobytes()
    return a.astype(_PLAIN[gtype]).tobytes()


def encode(gtype, x):
    if gtype == GT.Q8_0:
        return quantize_q8_0(x)
    if gtype == GT.Q4_0:
        return quantize_q4_0(x)
    if gtype == GT.MXFP4:
        return quantize_mxfp4(x)
    return encode_plain(gtype, x)


# ---------------------------------------------------------------------------------------
# Dequantizers: raw bytes of one tensor -> float64 array of its LOGICAL shape (outermost
# first). Every value of the types here is exact in float64 (I64 beyond 2^53 excepted).


def dequantize(gtype, raw, shape):
    shape = tuple(int(d) for d in shape)
    n = 1
    for d in shape:
        n *= d
    ne = list(reversed(shape))
    raw = bytes(raw)
    if nbytes(gtype, ne) != len(raw):
        raise ValueError("byte count does not match the shape")
    if gtype in _PLAIN:
        v = np.frombuffer(raw, dtype=_PLAIN[gtype]).astype(np.float64)
    elif gtype == GT.BF16:
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        v = bits.view(np.float32).astype(np.float64)
    elif gtype == GT.Q8_0:
        blk = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 34)
        d = blk[:, :2].copy().view("<f2").astype(np.float64)          # (nb, 1)
        q = blk[:, 2:].copy().view(np.int8).astype(np.float64)        # (nb, 32)
        v = (q * d).reshape(-1)
    elif gtype == GT.Q4_0:
        blk = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 18)
        d = blk[:, :2].copy().view("<f2").astype(np.float64)
        qs = blk[:, 2:].astype(np.int64)
        q = np.concatenate([qs & 15, qs >> 4], axis=1) - 8           # j, then j + 16
        v = (q.astype(np.float64) * d).reshape(-1)
    elif gtype == GT.MXFP4:
        blk = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 17)
        scale = np.ldexp(1.0, blk[:, :1].astype(np.int64) - 128)    # GGML_E8M0_TO_FP32_HALF
        qs = blk[:, 1:].astype(np.int64)
        codes = np.concatenate([qs & 15, qs >> 4], axis=1)
        v = (KVALUES_MXFP4[codes].astype(np.float64) * scale).reshape(-1)
    else:
        raise ValueError("unsupported ggml type %r" % (gtype,))
    assert v.size == n
    return v.reshape(shape)


# ---------------------------------------------------------------------------------------
# A small strict reader (self-checks, and the generator's check of every hostile file).
#
# Policy (the one tests/golden/gguf/hostile/expected.txt encodes):
#   file level (GGUFError): bad magic; version not 2 or 3; any read past the end of the
#     file (counts, lengths, strings, n_dims whose dims do not fit); an unknown metadata
#     value type; arrays nested more than MAX_NESTING levels; general.alignment not a
#     UINT32, 0 or not a power of two; a duplicate tensor name; for the tensors that pass
#     their own checks: an offset not a multiple of the alignment, a range past the end of
#     the data, two non-empty ranges that overlap.
#   per tensor (recorded in the tensor's 'error', the others import): n_dims > 4 (its dims
#     fit in the file), a dims product that overflows int64 (or a dim >= 2^63), an unknown
#     ggml type, an innermost dim not a multiple of the block size. Such a tensor takes no
#     part in the file-level range checks (its byte size is unknown).


class GGUFError(Exception):
    pass


class _Cursor:
    def __init__(self, buf):
        self.buf = buf
        self.pos = 0

    def take(self, n):
        if n < 0 or n > len(self.buf) - self.pos:
            raise GGUFError("read of %d bytes at %d past the end of the file (%d bytes)"
                            % (n, self.pos, len(self.buf)))
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def unpack(self, fmt):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self):
        n = self.unpack("<Q")
        return self.take(n)  # checks n against the remaining bytes before anything else


def _read_value(c, vtype, depth, max_depth):
    if vtype in _SCALAR:
        v = c.unpack(_SCALAR[vtype])
        if vtype == VT.BOOL:
            if v not in (0, 1):
                raise GGUFError("BOOL byte %d" % v)
            return v == 1
        return v
    if vtype == VT.STRING:
        return c.string().decode("utf-8")
    if vtype == VT.ARRAY:
        if max_depth is not None and depth >= max_depth:
            raise GGUFError("arrays nested more than %d levels" % max_depth)
        et = c.unpack("<I")
        if et not in VT_NAMES:
            raise GGUFError("unknown array element type %d" % et)
        n = c.unpack("<Q")
        # every element takes at least one byte: refuse a count the file cannot hold
        min_size = struct.calcsize(_SCALAR[et]) if et in _SCALAR else (8 if et == VT.STRING
                                                                          else 12)
        if n > (len(c.buf) - c.pos) // min_size:
            raise GGUFError("array of %d elements past the end of the file" % n)
        return Arr(et, [_read_value(c, et, depth + 1, max_depth) for _ in range(n)])
    raise GGUFError("unknown value type %d" % vtype)


def read_gguf(buf, max_depth=MAX_NESTING):
    """-> dict(version, alignment, kv=[(key, vtype, value)], tensors=[dict(name, ne, shape,
    type, offset, error)], data_start). Raises GGUFError for a file-level error."""
    if isinstance(buf, str):
        with open(buf, "rb") as f:
            buf = f.read()
    c = _Cursor(bytes(buf))
    if c.take(4) != GGUF_MAGIC:
        raise GGUFError("bad magic")
    version = c.unpack("<I")
    if version not in (2, 3):
        raise GGUFError("unsupported version %d" % version)
    n_tensors = c.unpack("<Q")
    n_kv = c.unpack("<Q")
    kv = []
    for _ in range(n_kv):  # runs off the end (GGUFError) long before a lying count ends
        key = c.string().decode("utf-8")
        vtype = c.unpack("<I")
        kv.append((key, vtype, _read_value(c, vtype, 0, max_depth)))
    alignment = DEFAULT_ALIGNMENT
    for key, vtype, value in kv:
        if key == "general.alignment":
            if vtype != VT.UINT32:
                raise GGUFError("general.alignment is not a UINT32")
            if value == 0 or value & (value - 1):
                raise GGUFError("general.alignment %d is not a power of two" % value)
            alignment = value
    tensors = []
    names = set()
    for _ in range(n_tensors):
        name = c.string().decode("utf-8")
        if name in names:
            raise GGUFError("duplicate tensor name " + name)
        names.add(name)
        n_dims = c.unpack("<I")
        ne = [c.unpack("<Q") for _ in range(n_dims)] if n_dims * 8 <= len(c.buf) - c.pos \
            else c.take(n_dims * 8)  # the take raises
        gtype = c.unpack("<I")
        offset = c.unpack("<Q")
        err = None
        n = 1
        for d in ne:
            n *= d
        if n_dims > 4:
            err = "n_dims %d > 4" % n_dims
        elif any(d >= 2 ** 63 for d in ne) or n >= 2 ** 63:
            err = "dims product overflows int64"
        elif gtype not in BLOCK:
            err = "unknown ggml type %d" % gtype
        elif ne and ne[0] % BLOCK[gtype][0]:
            err = "innermost dim %d not a multiple of %d" % (ne[0], BLOCK[gtype][0])
        tensors.append({"name": name, "ne": ne, "shape": tuple(reversed(ne)), "type": gtype,
                        "offset": offset, "error": err})
    if n_tensors > 0:
        start = pad_to(c.pos, alignment)
        if start > len(c.buf):
            raise GGUFError("data section past the end of the file")
    else:
        start = c.pos
    data_size = len(c.buf) - start
    ranges = []
    for t in tensors:
        if t["error"]:
            continue
        if t["offset"] % alignment:
            raise GGUFError("%s: offset %d not a multiple of %d" % (t["name"], t["offset"],
                                                                      alignment))
        nb = nbytes(t["type"], t["ne"])
        if t["offset"] > data_size or nb > data_size - t["offset"]:
            raise GGUFError("%s: range past the end of the data" % t["name"])
        t["nbytes"] = nb
        t["raw"] = c.buf[start + t["offset"]:start + t["offset"] + nb]
        if nb:
            ranges.append((t["offset"], t["offset"] + nb, t["name"]))
    ranges.sort()
    for (a0, a1, an), (b0, b1, bn) in zip(ranges, ranges[1:]):
        if b0 < a1:
            raise GGUFError("tensors %s and %s overlap" % (an, bn))
    return {"version": version, "alignment": alignment, "kv": kv, "tensors": tensors,
            "data_start": start}


def tensor_values(info):
    """Dequantized float64 values (logical shape) of a tensor read by read_gguf."""
    return dequantize(info["type"], info["raw"], info["shape"])


# ---------------------------------------------------------------------------------------
# Metadata rendering of metadata.txt (see make_gguf_goldens.py for the documentation).


def render_type(vtype, value):
    if vtype == VT.ARRAY:
        et = value.elem_type
        if et == VT.ARRAY:
            inner = {render_type(VT.ARRAY, it) for it in value.items}
            if len(inner) != 1:
                raise ValueError("render_type: arrays of arrays must be homogeneous")
            return "ARRAY<%s>" % inner.pop()
        return "ARRAY<%s>" % VT_NAMES[et]
    return VT_NAMES[vtype]


def render_value(vtype, value):
    if vtype == VT.ARRAY:
        return "[" + ",".join(render_value(value.elem_type, it) for it in value.items) + "]"
    if vtype == VT.STRING:
        out = ['"']
        for ch in value:
            if ch == "\\":
                out.append("\\\\")
            elif ch == '"':
                out.append('\\"')
            elif ord(ch) < 0x20 or ord(ch) == 0x7F:
                out.append("\\x%02x" % ord(ch))
            else:
                out.append(ch)
        out.append('"')
        return "".join(out)
    if vtype == VT.BOOL:
        return "true" if value else "false"
    if vtype == VT.FLOAT32:
        return repr(float(np.float32(value)))
    if vtype == VT.FLOAT64:
        return repr(float(value))
    return str(int(value))


# ---------------------------------------------------------------------------------------
# Self-check.

if __name__ == "__main__":
    def same(a, b):
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        assert a.shape == b.shape, (a.shape, b.shape)
        assert np.array_equal(a, b), (a, b)
        assert np.array_equal(np.signbit(a), np.signbit(b)), "signed zeros differ"

    # -- hand-made blocks --------------------------------------------------------------
    # q8_0: d = 0.25 (f16 0x3400), qs = -128, -127, ..., 127 spread over 32 values.
    qs = np.array([-128, -127, -1, 0, 1, 2, 3, 127] * 4, dtype=np.int8)
    blk = bytes([0x00, 0x34]) + qs.tobytes()
    same(dequantize(GT.Q8_0, blk, (32,)), qs.astype(np.float64) * 0.25)
    # q4_0: d = -0.5 (f16 0xB800), qs[j] = j | (15 - j) << 4.
    blk = bytes([0x00, 0xB8]) + bytes([j | ((15 - j) << 4) for j in range(16)])
    want = [(j - 8) * -0.5 for j in range(16)] + [(15 - j - 8) * -0.5 for j in range(16)]
    same(dequantize(GT.Q4_0, blk, (1, 32)), np.array([want]))
    # q4_0 with d = -0.0 (all-zero block as ggml writes it): codes 8 -> (8-8) * -0.0 = -0.0
    same(dequantize(GT.Q4_0, bytes([0x00, 0x80]) + bytes([0x88] * 16), (32,)),
         np.full(32, -0.0))
    # mxfp4: e = 127 -> values are the e2m1 values; e = 0 -> 2^-128 times the table.
    e2m1 = [0, .5, 1, 1.5, 2, 3, 4, 6, 0, -.5, -1, -1.5, -2, -3, -4, -6]
    blk = bytes([127]) + bytes([j | ((15 - j) << 4) for j in range(16)])
    same(dequantize(GT.MXFP4, blk, (32,)), np.array(e2m1 + e2m1[::-1]))
    blk = bytes([0]) + bytes([0x11] * 16)
    same(dequantize(GT.MXFP4, blk, (32,)), np.full(32, 2.0 ** -128))
    assert np.float32(2.0 ** -128) == 2.0 ** -128  # a float32 subnormal, exact
    same(dequantize(GT.MXFP4, bytes([255]) + bytes([0x01] + [0] * 15), (32,))[0], 2.0 ** 127)

    # -- quantizers ----------------------------------------------------------------------
    # q8_0: amax 127 -> d = 1, id = 1; halves round away from zero.
    x = np.zeros(32, np.float32)
    x[:6] = [127, 0.5, -0.5, 2.5, -2.5, 1.49]
    b = quantize_q8_0(x)
    assert b[:2] == bytes([0x00, 0x3C]), b[:2].hex()  # f16(1.0)
    assert list(np.frombuffer(b[2:8], np.int8)) == [127, 1, -1, 3, -3, 1]
    # q4_0: first of |x| ties wins: -3 before +3 -> d = 0.375, id = 1/0.375f.
    x = np.zeros(32, np.float32)
    x[:4] = [1, -3, 3, 0.75]
    b = quantize_q4_0(x)
    assert struct.unpack("<e", b[:2])[0] == 0.375
    codes = [b[2 + j] & 15 for j in range(16)] + [b[2 + j] >> 4 for j in range(16)]
    # x*id + 8.5: 1 -> 2.6666667+8.5 = 11.17 -> 11; -3 -> -8+8.5 -> 0; 3 -> 16.5 -> 15;
    # 0.75 -> 2+8.5 -> 10; 0 -> 8
    assert codes[:5] == [11, 0, 15, 10, 8], codes[:5]
    # q4_0 all-zero block (-0.0 values included): max = +0.0 -> d = -0.0, codes 8.
    z = np.zeros(32, np.float32)
    z[3] = -0.0
    assert quantize_q4_0(z) == bytes([0x00, 0x80]) + bytes([0x88] * 16)
    # mxfp4: amax 6 -> e = floor(log2 6) - 2 + 127 = 127, grid = e2m1 values exactly.
    x = np.array(e2m1[:8] + [-v for v in e2m1[1:8]] + [0.25] + [0] * 16, np.float32)
    b = quantize_mxfp4(x)
    assert b[0] == 127
    same(dequantize(GT.MXFP4, b, (32,))[:15], x[:15])
    # cross-check with the format reference (another peer's code) on random data
    try:
        import formats_reference as fr
        rng = np.random.default_rng(7)
        r = (rng.standard_normal((8, 64)) * np.array([[1e-3], [1], [1e3], [7]] * 2)).astype(
            np.float32)
        r[0, :32] = 0
        r[1, 5] = -r[1].max() * 2
        for name, fn, bl in (("q8_0", quantize_q8_0, 34), ("q4_0", quantize_q4_0, 18)):
            v, s, _ = fr.quantize(name, r, r.shape)
            mine = fn(r)
            mine_s = b"".join(mine[i:i + 2] for i in range(0, len(mine), bl))
            mine_v = b"".join(mine[i + 2:i + bl] for i in range(0, len(mine), bl))
            assert mine_s == s, name + " scales differ from formats_reference"
            if name == "q4_0":  # theirs: uint4 in element order, element 2i low nibble
                t = np.frombuffer(v, np.uint8)
                theirs = np.stack([t & 15, t >> 4], axis=1).reshape(-1, 32)
                m = np.frombuffer(mine_v, np.uint8).reshape(-1, 16)
                mine_codes = np.concatenate([m & 15, m >> 4], axis=1)
                assert np.array_equal(mine_codes, theirs), "q4_0 codes differ"
            else:
                assert mine_v == v, name + " codes differ from formats_reference"
        print("cross-check with formats_reference: q8_0 and q4_0 bytes agree")
    except ImportError:
        print("formats_reference not importable: cross-check skipped")

    # -- writer / reader round trip ------------------------------------------------------
    for version, align in ((3, None), (2, 64), (3, 16)):
        w = GGUFWriter(version)
        w.add("general.architecture", VT.STRING, "llama")
        if align:
            w.add("general.alignment", VT.UINT32, align)
        w.add("a.u8", VT.UINT8, 200)
        w.add("a.b", VT.BOOL, True)
        w.add("a.f32", VT.FLOAT32, 0.5)
        w.add("a.strs", VT.ARRAY, Arr(VT.STRING, ["x", "", "yz"]))
        w.add("a.nest", VT.ARRAY, Arr(VT.ARRAY, [Arr(VT.INT8, [1, -2]), Arr(VT.INT8, [])]))
        w.add("a.u64", VT.UINT64, 2 ** 64 - 1)
        rng = np.random.default_rng(version)
        vals = {}
        for name, gt, shape in (("t_f32", GT.F32, (3, 5)), ("t_q8", GT.Q8_0, (2, 64)),
                                ("t_q4", GT.Q4_0, (1, 32)), ("t_mx", GT.MXFP4, (2, 32)),
                                ("t_bf", GT.BF16, (4,)), ("t_e", GT.F32, (0, 4))):
            x = rng.standard_normal(shape).astype(np.float32)
            raw = encode(gt, x)
            vals[name] = dequantize(gt, raw, shape)
            w.add_tensor(name, gt, shape, raw)
        buf = w.tobytes()
        r = read_gguf(buf)
        assert r["version"] == version
        assert r["alignment"] == (align or 32)
        assert r["data_start"] % r["alignment"] == 0
        assert len(buf) % r["alignment"] == 0
        assert [(k, t, v) for k, t, v in r["kv"]] == w.kvs, r["kv"]
        for t in r["tensors"]:
            assert t["error"] is None
            assert t["offset"] % r["alignment"] == 0
            same(tensor_values(t), vals[t["name"]])
        # quantization error is bounded (sanity of the quantizers on random data)
        x = rng.standard_normal((2, 64)).astype(np.float32)
        for gt, tol in ((GT.Q8_0, 1 / 127), (GT.Q4_0, 1 / 7), (GT.MXFP4, 0.5)):
            d = dequantize(gt, encode(gt, x), x.shape)
            amax = np.abs(x).reshape(-1, 32).max(axis=1).repeat(32).reshape(x.shape)
            assert (np.abs(d - x) <= tol * amax + 1e-12).all(), GT_NAMES[gt]
    # the reader refuses a few things
    for bad in (b"GGUX" + buf[4:], buf[:4] + u32(1) + buf[8:], buf[:40]):
        try:
            read_gguf(bad)
        except GGUFError:
            pass
        else:
            raise AssertionError("accepted a bad file")
    print("gguf_reference self-check: OK")
