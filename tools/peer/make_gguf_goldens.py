#!/usr/bin/python3
"""Writes the GGUF goldens of tests/golden/gguf/ with gguf_reference.py (an independent
writer; shared/design/formats.md section 4).

    /usr/bin/python3 tools/peer/make_gguf_goldens.py [OUT_DIR]

OUT_DIR (default tests/golden/gguf) is cleared first. It receives:
  mixed_v3.gguf     version 3, alignment 32: metadata of every value type (strings, arrays
                    of uint32/strings/bools/float32, an array of arrays of int8, an empty
                    array, an empty string, escapes, UTF-8) and a tensor of every type
                    Strata reads, an empty tensor, a rank-0 and a rank-4 tensor.
  v2_align64.gguf   version 2, general.alignment 64: f32, q8_0, q4_0 tensors.
  FILE.TENSOR.f32   every tensor's dequantized values (ggml's definitions), raw
                    little-endian float32 in logical row-major order (dims reversed).
  manifest.txt      `FILE TENSOR GGML_TYPE_NAME SHAPE` (SHAPE logical, `4,64`; `-` for rank 0).
  metadata.txt      `FILE KEY TYPE VALUE` (its header documents the rendering).
  hostile/*.gguf    small files (< 4 KB) with exactly one defect each, and
  hostile/expected.txt  `FILE LEVEL WHAT`: LEVEL `file` (the whole file refused) or
                    `tensor:NAME` (that tensor refused, the others import).

The hostile files follow this policy (gguf_reference.read_gguf implements it, and every
file is checked against it here):
  file level: bad magic; version not 2 or 3; any count, length, string or n_dims whose
    bytes run past the end of the file; an unknown metadata value type; arrays nested more
    than 64 levels; general.alignment not a UINT32, 0, or not a power of two; a duplicate
    tensor name; and, for the tensors that pass their own checks, an offset not a multiple
    of the alignment, a range past the end of the data (offset + size computed without
    wrapping), two non-empty ranges that overlap (a 0-byte tensor overlaps nothing).
  per tensor: n_dims > 4 when its dims fit in the file; a dims product >= 2^63; an unknown
    ggml type; an innermost dim not a multiple of the block size. Such a tensor takes no
    part in the file-level range checks (its size is unknown), so it is given no special
    place in the data.
Deterministic: fixed seeds, no dependence on time or platform.
"""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_reference as g  # noqa: E402
from gguf_reference import GT, VT, Arr  # noqa: E402

F32 = np.float32
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "golden", "gguf")

rng = np.random.default_rng(20250301)


def rnd(shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def shape_text(shape):
    return ",".join(str(d) for d in shape) if shape else "-"


# ---------------------------------------------------------------------------------------
# The tensors of the two valid files: (name, ggml type, logical shape, bytes).


def tensors_mixed():
    out = []

    x = rnd((3, 5))
    x[0, 1] = -0.0
    x[1, 2] = np.float32(1e-45)            # smallest float32 subnormal
    x[2, 4] = np.float32(3.4028234663852886e38)
    out.append(("w_f32", GT.F32, (3, 5), x.astype("<f4").tobytes()))

    out.append(("empty", GT.F32, (0, 32), b""))

    h = rnd((4, 8)).astype(np.float16).view(np.uint16).reshape(-1).copy()
    # subnormals, max, -inf, inf, -0, 1 + 2^-10
    h[:7] = [0x0001, 0x03FF, 0x7BFF, 0xFC00, 0x7C00, 0x8000, 0x3C01]
    out.append(("w_f16", GT.F16, (4, 8), h.astype("<u2").tobytes()))

    b = g.bf16_bits(rnd((2, 16), 100.0))
    b[:6] = [0x0001, 0x007F, 0x7F7F, 0xFF80, 0x8000, 0x3F81]  # subnormals, max, -inf, -0
    out.append(("w_bf16", GT.BF16, (2, 16), b.astype("<u2").tobytes()))

    out.append(("w_i8", GT.I8, (7,),
                np.array([-128, -1, 0, 1, 127, 42, -100], "<i1").tobytes()))
    out.append(("w_i16", GT.I16, (2, 3),
                np.array([-32768, 32767, 0, -1, 1234, -4321], "<i2").tobytes()))
    # integers chosen exactly representable in float32 (the golden is float32)
    out.append(("w_i32", GT.I32, (3,),
                np.array([-2 ** 31, 2 ** 31 - 128, -7], "<i4").tobytes()))
    out.append(("w_i64", GT.I64, (2, 2),
                np.array([-2 ** 63, 2 ** 62, -1, 3 * 2 ** 40], "<i8").tobytes()))
    d = np.array([0.1, -2.5, 1e30, -0.0, 3.4028234663852886e38, 2.0 ** -149], np.float32)
    out.append(("w_f64", GT.F64, (2, 3), d.astype("<f8").tobytes()))

    x = rnd((4, 64))
    x[0] *= F32(1e-3)
    x[2] *= F32(1e3)
    x[3, :32] = 0                                           # amax 0: d = 0
    x[3, 32:40] = [127, 0.5, -0.5, 2.5, -2.5, 1.5, -126.5, 63.5]  # halves away from zero
    out.append(("w_q8", GT.Q8_0, (4, 64), g.quantize_q8_0(x)))

    x = rnd((3, 96))
    x[0] *= F32(0.01)
    x[2] *= F32(100)
    x[1, 32:64] = 0                                         # d = -0.0 -> values -0.0
    x[2, 64:68] = [3, -3, 1, 2]                              # |x| ties: the first (+3) wins
    x[2, 68:96] = 0.5
    out.append(("w_q4", GT.Q4_0, (3, 96), g.quantize_q4_0(x)))

    x = rnd((1, 64))
    x[0, 32:] *= F32(1e4)
    row0 = g.quantize_mxfp4(x)
    codes = [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 1] * 2  # every code but 8 (-0)
    packed = bytes(codes[j] | (codes[j + 16] << 4) for j in range(16))
    rev = bytes(codes[31 - j] | (codes[15 - j] << 4) for j in range(16))
    row1 = bytes([1]) + packed + bytes([200]) + rev  # e = 1: values 2^-127..; e = 200
    out.append(("w_mxfp4", GT.MXFP4, (2, 64), row0 + row1))

    x = rnd((2, 1, 2, 32), 4.0)
    out.append(("blk.0.w_q8_r4", GT.Q8_0, (2, 1, 2, 32), g.quantize_q8_0(x)))

    out.append(("scalar", GT.F32, (), np.array([3.25], "<f4").tobytes()))
    return out


def metadata_mixed():
    return [
        ("general.architecture", VT.STRING, "llama"),
        ("general.name", VT.STRING, "Strata GGUF golden \u00fc\u2013\u65e5"),
        ("general.alignment", VT.UINT32, 32),
        ("llama.context_length", VT.UINT32, 4096),
        ("tokenizer.ggml.tokens", VT.ARRAY, Arr(VT.STRING, ["a", "bc", ""])),
        ("test.nested", VT.ARRAY, Arr(VT.ARRAY, [Arr(VT.INT8, [1, -2, 3]), Arr(VT.INT8, []),
                                                 Arr(VT.INT8, [-128, 127])])),
        ("test.array_u32", VT.ARRAY, Arr(VT.UINT32, [1, 2, 4294967295])),
        ("test.array_bool", VT.ARRAY, Arr(VT.BOOL, [True, False, True])),
        ("test.array_f32", VT.ARRAY, Arr(VT.FLOAT32, [0.5, -1.25, float(np.float32(0.1))])),
        ("test.array_empty", VT.ARRAY, Arr(VT.INT32, [])),
        ("test.uint8", VT.UINT8, 255),
        ("test.int8", VT.INT8, -128),
        ("test.uint16", VT.UINT16, 65535),
        ("test.int16", VT.INT16, -32768),
        ("test.uint32", VT.UINT32, 4294967295),
        ("test.int32", VT.INT32, -2147483648),
        ("test.float32", VT.FLOAT32, float(np.float32(0.1))),
        ("test.bool_true", VT.BOOL, True),
        ("test.bool_false", VT.BOOL, False),
        ("test.uint64", VT.UINT64, 2 ** 64 - 1),
        ("test.int64", VT.INT64, -2 ** 63),
        ("test.float64", VT.FLOAT64, -1.25e-300),
        ("test.string_empty", VT.STRING, ""),
        ("test.string_escapes", VT.STRING, 'quote " backslash \\ tab\t newline\n end'),
    ]


def tensors_v2():
    x = rnd((2, 8))
    q8 = rnd((3, 64), 0.5)
    q4 = rnd((2, 64), 2.0)
    return [("w_f32", GT.F32, (2, 8), x.astype("<f4").tobytes()),
            ("w_q8", GT.Q8_0, (3, 64), g.quantize_q8_0(q8)),
            ("w_q4", GT.Q4_0, (2, 64), g.quantize_q4_0(q4))]


def metadata_v2():
    return [("general.architecture", VT.STRING, "llama"),
            ("general.alignment", VT.UINT32, 64),
            ("general.name", VT.STRING, "v2 align64"),
            ("general.quantization_version", VT.UINT32, 2)]


METADATA_HEADER = """\
# metadata.txt: the metadata of each golden GGUF file, one key a line, in file order:
#   FILE KEY TYPE VALUE   (split on the first three spaces: VALUE may contain spaces)
# TYPE: UINT8 INT8 UINT16 INT16 UINT32 INT32 FLOAT32 BOOL STRING UINT64 INT64 FLOAT64, or
#   ARRAY<T> for an array of T (ARRAY<ARRAY<INT8>>: an array of arrays of INT8).
# VALUE: integers in decimal; BOOL true / false; FLOAT32 and FLOAT64 as Python's repr() of
#   the value (a FLOAT32 widened exactly to double first, so strtod and a cast to float
#   give it back); STRING in double quotes with \\ and " escaped as \\\\ and \\", every byte
#   below 0x20 and 0x7f as \\xHH (two lower-case hex digits), every other character as its
#   UTF-8 bytes; ARRAY as [v1,v2,...] without spaces, each element rendered the same way
#   (arrays of arrays nested: [[1,-2,3],[],[-128,127]]; an empty array is []).
# Lines that start with # are comments.
"""


# ---------------------------------------------------------------------------------------
# Hostile files.


def hostile_cases():
    """-> list of (file, level, what, bytes, expected error keyword(s) or None)."""
    A = {"name": "a", "ne": [16, 2], "type": GT.F32,
         "data": np.arange(32, dtype="<f4").tobytes()}                       # 128 bytes
    xb = (np.arange(64, dtype=np.float32) - 31.5) / 4
    B = {"name": "b", "ne": [64, 1], "type": GT.Q8_0, "data": g.quantize_q8_0(xb)}  # 68 bytes
    kvs = [("general.architecture", VT.STRING, "llama"),
           ("general.alignment", VT.UINT32, 32),
           ("general.name", VT.STRING, "hostile"),
           ("test.array_u64", VT.ARRAY, Arr(VT.UINT64, [1, 2, 3]))]
    base, pos = g.build_gguf(kvs, [A, B])
    ok = g.read_gguf(base)
    assert all(t["error"] is None for t in ok["tensors"])
    data_size = len(base) - pos["data_start"]

    def patch(at, b):
        return base[:at] + b + base[at + len(b):]

    def with_tensors(ts, kv=kvs):
        return g.build_gguf(kv, ts)[0]

    cases = []

    def add(name, level, what, data, keys=None):
        cases.append((name, level, what, data, keys))

    add("bad_magic.gguf", "file", "bad magic GGUX", patch(0, b"GGUX"), "bad magic")
    add("version_1.gguf", "file", "version 1", patch(pos["version"], g.u32(1)), "version")
    add("version_4.gguf", "file", "version 4", patch(pos["version"], g.u32(4)), "version")
    add("tensor_count_2p40.gguf", "file", "tensor count 2^40",
        patch(pos["n_tensors"], g.u64(2 ** 40)), "past the end")
    add("kv_count_2p60.gguf", "file", "metadata count 2^60",
        patch(pos["n_kv"], g.u64(2 ** 60)), ("past the end", "unknown value type"))
    add("kv_count_plus_one.gguf", "file",
        "metadata count one more than the keys present (no tensors; the file ends)",
        (lambda b, p: b[:p["infos_end"]])(*g.build_gguf(kvs, [], n_kv=len(kvs) + 1)),
        "past the end")
    at = pos["kv"][2]["value"]  # general.name's u64 length
    add("string_past_end.gguf", "file", "string length one byte past the end of the file",
        patch(at, g.u64(len(base) - (at + 8) + 1)), "past the end")
    add("key_length_2p63.gguf", "file", "key length 2^63",
        patch(pos["kv"][1]["key_len"], g.u64(2 ** 63)), "past the end")
    add("array_count_2p62.gguf", "file",
        "array of 2^62 UINT64 (count*8 wraps to 0 in 64 bits)",
        patch(pos["kv"][3]["value"] + 4, g.u64(2 ** 62)), "past the end")
    # nested arrays: as deep as fits in 4 KB (12 bytes a level)
    depth = 0
    while True:
        v = Arr(VT.INT8, [7])
        for _ in range(depth):
            v = Arr(VT.ARRAY, [v])
        deep = g.build_gguf(kvs + [("test.deep", VT.ARRAY, v)], [A, B])[0]
        if len(deep) > 4000:
            break
        good_deep, good_depth = deep, depth + 1
        depth += 1
    assert g.read_gguf(good_deep, max_depth=None)  # valid but for the depth
    add("nested_arrays_deep.gguf", "file",
        "arrays nested %d levels (more than 64)" % good_depth, good_deep, "nested")
    add("value_type_13.gguf", "file", "unknown metadata value type 13",
        patch(pos["kv"][2]["type"], g.u32(13)), "unknown value type")
    add("alignment_0.gguf", "file", "general.alignment 0",
        patch(pos["kv"][1]["value"], g.u32(0)), "power of two")
    add("alignment_3.gguf", "file", "general.alignment 3 (not a power of two)",
        patch(pos["kv"][1]["value"], g.u32(3)), "power of two")
    kv64 = [kvs[0], ("general.alignment", VT.UINT64, 32)] + kvs[2:]
    add("alignment_uint64.gguf", "file", "general.alignment a UINT64, not a UINT32",
        with_tensors([A, B], kv64), "not a UINT32")
    add("n_dims_2p31.gguf", "file", "n_dims 2^31 (its dims run past the end)",
        patch(pos["ti"][1]["n_dims"], g.u32(2 ** 31)), "past the end")
    add("tensor_name_2p40.gguf", "file", "tensor name length 2^40",
        patch(pos["ti"][1]["name_len"], g.u64(2 ** 40)), "past the end")
    add("duplicate_tensor_name.gguf", "file", "two tensors named a",
        with_tensors([A, dict(B, name="a")]), "duplicate")
    add("offset_misaligned.gguf", "file", "offset of b 144: not a multiple of 32",
        patch(pos["ti"][1]["offset"], g.u64(128 + 16)), "not a multiple")
    off = 160
    assert off % 32 == 0 and off + 68 > data_size and off >= 128
    add("offset_past_end.gguf", "file",
        "b at offset %d: its 68 bytes end past the %d-byte data" % (off, data_size),
        patch(pos["ti"][1]["offset"], g.u64(off)), "past the end")
    add("offset_wraps.gguf", "file", "b at offset 2^64-32 (offset+size wraps to 36)",
        patch(pos["ti"][1]["offset"], g.u64(2 ** 64 - 32)), "past the end")
    add("overlap.gguf", "file", "b at offset 96 overlaps a [0,128)",
        patch(pos["ti"][1]["offset"], g.u64(96)), "overlap")
    add("truncated_q8_0.gguf", "file", "the file ends 17 bytes into b's second q8_0 block",
        base[:pos["data"][1] + 34 + 17], "past the end")
    # per tensor: the defective tensor between a and b, with bytes of its own
    add("n_dims_5.gguf", "tensor:bad5d", "n_dims 5 (more than 4)",
        with_tensors([A, {"name": "bad5d", "ne": [2, 1, 1, 1, 1], "type": GT.F32,
                          "data": bytes(8)}, B]))
    add("dims_overflow.gguf", "tensor:huge",
        "dims 2^32 x 2^32: the product overflows int64 (and wraps to 0 in 64 bits)",
        with_tensors([A, {"name": "huge", "ne": [2 ** 32, 2 ** 32], "type": GT.F32,
                          "data": b""}, B]))
    add("type_99.gguf", "tensor:mystery", "unknown ggml type 99",
        with_tensors([A, {"name": "mystery", "ne": [32], "type": 99, "data": bytes(32)}, B]))
    add("q8_0_ne0_48.gguf", "tensor:odd", "q8_0 innermost dim 48, not a multiple of 32",
        with_tensors([A, {"name": "odd", "ne": [48, 1], "type": GT.Q8_0,
                          "data": g.quantize_q8_0(np.ones(64, np.float32))}, B]))

    # check every case against the policy
    want_a = g.tensor_values([t for t in ok["tensors"] if t["name"] == "a"][0])
    want_b = g.tensor_values([t for t in ok["tensors"] if t["name"] == "b"][0])
    for name, level, what, data, keys in cases:
        assert len(data) < 4096, name
        if level == "file":
            try:
                g.read_gguf(data)
            except g.GGUFError as e:
                keys = (keys,) if isinstance(keys, str) else keys
                assert any(k in str(e) for k in keys), (name, str(e))
            else:
                raise AssertionError(name + " was accepted")
        else:
            bad = level.split(":", 1)[1]
            r = g.read_gguf(data)
            for t in r["tensors"]:
                if t["name"] == bad:
                    assert t["error"], name
                else:
                    assert t["error"] is None, (name, t["error"])
                    want = want_a if t["name"] == "a" else want_b
                    assert np.array_equal(g.tensor_values(t), want), name
            assert sorted(t["name"] for t in r["tensors"]) == sorted(["a", "b", bad])
    return cases


# ---------------------------------------------------------------------------------------


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(os.path.join(OUT, "hostile"))
    manifest, meta = [], [METADATA_HEADER]
    for fname, version, kvs, tensors in (
            ("mixed_v3.gguf", 3, metadata_mixed(), tensors_mixed()),
            ("v2_align64.gguf", 2, metadata_v2(), tensors_v2())):
        w = g.GGUFWriter(version)
        for k, t, v in kvs:
            w.add(k, t, v)
        for name, gt, shape, raw in tensors:
            w.add_tensor(name, gt, shape, raw)
        buf = w.tobytes()
        with open(os.path.join(OUT, fname), "wb") as f:
            f.write(buf)
        # read back with the reader and write the goldens from what it reads
        r = g.read_gguf(buf)
        assert r["version"] == version and r["alignment"] == w.alignment
        assert [(k, t, v) for k, t, v in r["kv"]] == kvs
        for k, t, v in r["kv"]:
            meta.append("%s %s %s %s\n" % (fname, k, g.render_type(t, v), g.render_value(t, v)))
        assert [t["name"] for t in r["tensors"]] == [t[0] for t in tensors]
        for t, (name, gt, shape, raw) in zip(r["tensors"], tensors):
            assert t["error"] is None and t["type"] == gt and t["shape"] == tuple(shape)
            assert t["raw"] == raw
            v = g.tensor_values(t)
            v32 = v.astype(np.float32)
            assert np.array_equal(v32.astype(np.float64), v, equal_nan=True), name  # exact
            assert v32.shape == tuple(shape)
            with open(os.path.join(OUT, "%s.%s.f32" % (fname, name)), "wb") as f:
                f.write(v32.astype("<f4").tobytes())
            manifest.append("%s %s %s %s\n" % (fname, name, g.GT_NAMES[gt], shape_text(shape)))
    with open(os.path.join(OUT, "manifest.txt"), "w") as f:
        f.writelines(manifest)
    with open(os.path.join(OUT, "metadata.txt"), "w", encoding="utf-8") as f:
        f.writelines(meta)
    lines = []
    for name, level, what, data, _ in hostile_cases():
        with open(os.path.join(OUT, "hostile", name), "wb") as f:
            f.write(data)
        lines.append("%s %s %s\n" % (name, level, what))
    with open(os.path.join(OUT, "hostile", "expected.txt"), "w") as f:
        f.writelines(lines)
    total = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(OUT) for n in ns)
    assert total < 400 * 1024, total
    print("wrote %d tensors, %d hostile files, %d bytes in all to %s"
          % (len(manifest), len(lines), total, OUT))


if __name__ == "__main__":
    main()
