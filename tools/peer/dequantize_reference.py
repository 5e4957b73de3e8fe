#!/usr/bin/python3
"""Independent numpy reference of Dequantize and of the ue8m0 block quantization.

Written from shared/design/values.md sections 1 and 2, formats.md sections 1, 2 and 4 and
representation-cli.md "Scale layouts" (and, where they point at one, the format's own
reference: ggml's dequantize_row_q8_0 / _q4_0 / _mxfp4, DeepSeek-V3's weight_dequant,
DeepGEMM's per_block_cast_to_fp8(use_ue8m0=True)), not from Strata's C++. Element codecs,
block extents and the swizzle come from the sibling formats_reference.py.

Arithmetic of one value (values.md section 1):
    1. the element code and the block scale are decoded exactly to float32 (e8m0 e is
       2^(e-127), 255 is NaN; e4m3 0x7F/0xFF are NaN; float16 widens exactly);
    2. p = element * scale, one float32 multiplication (IEEE, round to nearest even);
    3. nvfp4_ts: p * g; nvfp4_ts_recip: p / g' -- again one float32 operation each;
    4. the float32 result rounded (nearest even, overflow to infinity) to `to`.
Every step is IEEE float32 arithmetic, so a NaN scale makes its whole block NaN (NaN * 0 is
NaN) and inf * 0 is NaN, as the contract asks.

API (bytes arguments accept bytes, bytearray or a uint8 numpy array):
    dequantize(fmt, value_bytes, scale_bytes, shape, blocked_mode=None,
               scale_layout="row_major", tensor_scale_bytes=None, to="float32")
    dequantize_gguf_blocks(fmt, raw_bytes, shape, to="float32")
    quantize_block128x128_ue8m0(x, shape) -> (code_bytes, scale_bytes)
    gguf_blocks_to_planar(fmt, raw_bytes, shape) -> (value_bytes, scale_bytes)
    planar_to_gguf_blocks(fmt, value_bytes, scale_bytes, shape) -> raw_bytes
    unswizzle_128x4(carrier, grid, blocked_mode) -> row-major scale bytes (uint8 array)
    round_float32(x, to), bfloat16_bits(x)
    peer_gguf_q8_0(raw, shape), peer_gguf_q4_0(raw, shape),
    peer_deepseek_weight_dequant(codes_uint8, scale_inv_f32, n, k)
Results: float32 -> np.float32 array, float16 -> np.float16 array, bfloat16 -> np.uint16
array of bit patterns (numpy has no bfloat16). The sign and payload of a NaN are not part
of the contract: compare NaN positions, not NaN bits (see same_bits).

Run it to execute the self-check:  /usr/bin/python3 tools/peer/dequantize_reference.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import formats_reference as fr  # noqa: E402  (the sibling, found through the line above)

F32 = np.float32

# fmt -> (element codec, scale codec). Element codecs: e4m3 = float8_e4m3fn, e2m1 =
# float4_e2m1fn (packed), i8 = int8, u4 = uint4 (packed) read as q - 8.
_FORMATS = {
    "mxfp8_e4m3": ("e4m3", "e8m0"),
    "mxfp4": ("e2m1", "e8m0"),
    "nvfp4": ("e2m1", "e4m3"),
    "nvfp4_ts": ("e2m1", "e4m3"),
    "nvfp4_ts_recip": ("e2m1", "e4m3"),
    "fp8_e4m3_tensorwise": ("e4m3", "f32"),
    "fp8_e4m3_rowwise": ("e4m3", "f32"),
    "fp8_e4m3_block1x128": ("e4m3", "f32"),
    "fp8_e4m3_block128x128": ("e4m3", "f32"),
    "fp8_e4m3_block128x128_ue8m0": ("e4m3", "e8m0"),
    "q8_0": ("i8", "f16"),
    "q4_0": ("u4", "f16"),
}
FORMATS = tuple(_FORMATS)
# The 1-D 16/32 formats with float8 scales: the only ones swizzled_128x4 applies to.
_SWIZZLABLE = ("mxfp8_e4m3", "mxfp4", "nvfp4", "nvfp4_ts", "nvfp4_ts_recip")
_MX_BLOCK = {"mxfp8_e4m3": 32, "mxfp4": 32, "nvfp4": 16}
_SCALE_SIZE = {"e8m0": 1, "e4m3": 1, "f32": 4, "f16": 2}
TARGETS = ("float32", "bfloat16", "float16")

# ---------------------------------------------------------------------------------------
# Exact decode tables (float32).

E4M3_F32 = fr.e4m3_value(np.arange(256, dtype=np.uint8)).astype(np.float32)
E2M1_F32 = fr.e2m1_value(np.arange(16, dtype=np.uint8)).astype(np.float32)


def _e8m0_table():
    # Built from the float32 bit patterns (not ldexp) so that the self-check's ldexp
    # comparison is independent: e >= 1 is the normal 2^(e-127); e = 0 is 2^-127, the
    # float32 subnormal 0x00400000; 255 is NaN.
    bits = np.arange(256, dtype=np.uint32) << 23
    bits[0] = 0x00400000
    bits[255] = 0x7FC00000
    return bits.view(np.float32).copy()


E8M0_F32 = _e8m0_table()


def _as_u8(b):
    """bytes / bytearray / memoryview / numpy array -> flat uint8 array (no copy if it can)."""
    if isinstance(b, np.ndarray):
        return np.ascontiguousarray(b).reshape(-1).view(np.uint8)
    return np.frombuffer(b, dtype=np.uint8)


def _prod(shape):
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def _unpack4(u8, count):
    """Packed 4-bit codes, two per byte, low nibble first -> `count` codes (uint8)."""
    out = np.empty(u8.size * 2, dtype=np.uint8)
    out[0::2] = u8 & 15
    out[1::2] = u8 >> 4
    return out[:count]


def _pack4(codes):
    c = np.asarray(codes, dtype=np.uint8).reshape(-1)
    if c.size % 2:
        c = np.concatenate([c, np.zeros(1, np.uint8)])
    return (c[0::2] | (c[1::2] << 4)).astype(np.uint8)


def _decode_elements(codec, value_bytes, count):
    u8 = _as_u8(value_bytes)
    need = (count + 1) // 2 if codec in ("e2m1", "u4") else count
    if u8.size != need:
        raise ValueError("value bytes: %d, expected %d" % (u8.size, need))
    if codec == "e4m3":
        return E4M3_F32[u8]
    if codec == "i8":
        return u8.view(np.int8).astype(np.float32)
    codes = _unpack4(u8, count)
    if codec == "e2m1":
        return E2M1_F32[codes]
    return codes.astype(np.float32) - F32(8)  # uint4 q -> q - 8, exact


def _decode_scales(codec, u8, count):
    if u8.size != count * _SCALE_SIZE[codec]:
        raise ValueError("scale bytes: %d, expected %d" % (u8.size, count * _SCALE_SIZE[codec]))
    if codec == "e8m0":
        return E8M0_F32[u8]
    if codec == "e4m3":
        return E4M3_F32[u8]
    if codec == "f32":
        return np.frombuffer(u8.tobytes(), dtype="<f4").astype(np.float32)
    return np.frombuffer(u8.tobytes(), dtype="<f2").astype(np.float32)  # exact widening


# ---------------------------------------------------------------------------------------
# Rounding float32 to the output dtype.


def bfloat16_bits(x):
    """float32 -> bfloat16 bit patterns (uint16), round to nearest even from the bits.

    Adding 0x7FFF plus the kept LSB and truncating rounds to nearest, ties to even; a carry
    out of the largest finite binade lands on the infinity pattern (overflow to infinity).
    NaN keeps its sign and top payload bits with the quiet bit set (never becomes inf).
    """
    a = np.asarray(x, dtype=np.float32)
    b = a.reshape(-1).view(np.uint32).astype(np.uint64)
    nan = (b & 0x7FFFFFFF) > 0x7F800000
    rounded = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    quiet = (b >> 16) | 0x0040
    return np.where(nan, quiet, rounded).astype(np.uint16).reshape(a.shape)


def round_float32(x, to):
    """float32 values -> `to` (nearest even, overflow to infinity)."""
    x = np.asarray(x, dtype=np.float32)
    if to == "float32":
        return x.copy()
    if to == "float16":
        # numpy's float32 -> float16 cast is IEEE RNE with overflow to inf (checked below
        # against an exact float64 rounding).
        with np.errstate(all="ignore"):
            return x.astype(np.float16)
    if to == "bfloat16":
        return bfloat16_bits(x)
    raise TypeError("dequantize: unsupported target dtype %r (float32, bfloat16, float16)"
                    % (to,))


def _check_to(to):
    if to not in TARGETS:
        raise TypeError("dequantize: unsupported target dtype %r (float32, bfloat16, float16)"
                        % (to,))


# ---------------------------------------------------------------------------------------
# Blocks and scale layouts.


def _norm_mode(m, rank):
    if m is None:
        raise ValueError("this format needs a blocked mode")
    m = int(m)
    if m < 0:
        m += rank
    if not 0 <= m < rank:
        raise ValueError("blocked mode out of range")
    return m


def block_extents(fmt, shape, blocked_mode=None):
    """Per-mode block extent for every format here (`whole` written as the extent)."""
    shape = tuple(int(n) for n in shape)
    if fmt in _MX_BLOCK:
        b = _MX_BLOCK[fmt]
        m = _norm_mode(blocked_mode, len(shape))
        if shape[m] % b:
            raise ValueError("%s: blocked extent %d is not a multiple of %d" % (fmt, shape[m], b))
        return [b if i == m else 1 for i in range(len(shape))]
    if fmt == "fp8_e4m3_block128x128_ue8m0":
        return fr.block_extents("fp8_e4m3_block128x128", shape)
    if fmt not in _FORMATS:
        raise ValueError("unknown format %r" % (fmt,))
    return fr.block_extents(fmt, shape, blocked_mode)


def block_grid(shape, blocks):
    """Number of blocks along each mode (ceil-divided: ragged edges count)."""
    return tuple(-(-int(n) // int(b)) for n, b in zip(shape, blocks))


def _swizzle_modes(grid, blocked_mode):
    rank = len(grid)
    if rank < 2:
        raise ValueError("swizzled_128x4 needs rank >= 2")
    bm = _norm_mode(blocked_mode, rank)
    if bm not in (rank - 2, rank - 1):
        raise ValueError("swizzled_128x4 needs the blocked mode among the last two")
    return bm, (rank - 1 if bm == rank - 2 else rank - 2)


def unswizzle_128x4(carrier, grid, blocked_mode):
    """swizzled_128x4 scale carrier -> row-major scale bytes over `grid` (uint8 array).

    Gathers each scale from the carrier index of representation-cli.md "Scale layouts":
    batch*Rp*Bp + (r/128)*(Bp/4)*512 + (b/4)*512 + (r%32)*16 + ((r/32)%4)*4 + b%4.
    """
    grid = tuple(int(g) for g in grid)
    bm, om = _swizzle_modes(grid, blocked_mode)
    R, nb = grid[om], grid[bm]
    Rp, Bp = 128 * -(-R // 128), 4 * -(-nb // 4)
    batches = _prod(grid[:-2])
    c = _as_u8(carrier)
    if c.size != batches * Rp * Bp:
        raise ValueError("swizzled scales: %d bytes, expected %d" % (c.size, batches * Rp * Bp))
    r = np.arange(R, dtype=np.int64)
    b = np.arange(nb, dtype=np.int64)
    batch = np.arange(batches, dtype=np.int64)
    r_part = (r // 128) * (Bp // 4) * 512 + (r % 32) * 16 + ((r // 32) % 4) * 4
    b_part = (b // 4) * 512 + b % 4
    idx = batch[:, None, None] * (Rp * Bp) + r_part[None, :, None] + b_part[None, None, :]
    if bm == len(grid) - 2:  # grid's last two modes are (b, r)
        idx = idx.transpose(0, 2, 1)
    return c[idx.reshape(-1)]


# ---------------------------------------------------------------------------------------
# Dequantize.


def dequantize(fmt, value_bytes, scale_bytes, shape, blocked_mode=None,
               scale_layout="row_major", tensor_scale_bytes=None, to="float32"):
    """Logical values of a block-scaled Tensor (values.md section 1), as an array of `shape`.

    Args:
      fmt: a name of FORMATS.
      value_bytes: codes row-major over `shape` (4-bit codes two per byte, low nibble
        first).
      scale_bytes: one scale per block, row-major over the block grid (ceil-divided for the
        ragged formats), or the swizzled_128x4 carrier for the 1-D 16/32 formats with
        float8 scales. float32/float16 scales little-endian.
      shape: logical shape.
      blocked_mode: the blocked mode of the 1-D formats (mx*, nvfp4*, block1x128).
      scale_layout: "row_major" or "swizzled_128x4".
      tensor_scale_bytes: nvfp4_ts / nvfp4_ts_recip only: the float32 g / g' (4 bytes).
      to: "float32", "bfloat16" (returned as uint16 bit patterns) or "float16".

    The nvfp4_ts order is rn32(rn32(code * s_b) * g), and nvfp4_ts_recip
    rn32(rn32(code * s_b) / g'): values.md says "the product of element and block scale
    rounded once to float32 ...; for nvfp4_ts that product times g, for nvfp4_ts_recip
    divided by g', rounded once". code * s_b is always exact in float32 (at most 2 + 4
    significant bits, magnitudes 2^-10 .. 2688), so the result is the exact
    code * s_b * g rounded once. It is NOT code * rn32(s_b * g) (a kernel folding g into
    the block scale), which can differ by one ulp; nor a multiplication by 1/g'.

    Raises:
      TypeError: `to` is not float32, bfloat16 or float16.
      ValueError: unknown format or layout, wrong byte counts, a bad blocked mode.
    """
    shape = tuple(int(n) for n in shape)
    if fmt not in _FORMATS:
        raise ValueError("unknown format %r" % (fmt,))
    _check_to(to)
    elem_codec, scale_codec = _FORMATS[fmt]
    blocks = block_extents(fmt, shape, blocked_mode)
    grid = block_grid(shape, blocks)
    codes = _decode_elements(elem_codec, value_bytes, _prod(shape)).reshape(shape)

    raw = _as_u8(scale_bytes)
    if scale_layout == "swizzled_128x4":
        if fmt not in _SWIZZLABLE:
            raise ValueError("swizzled_128x4 does not apply to %s" % fmt)
        raw = unswizzle_128x4(raw, grid, blocked_mode)
    elif scale_layout != "row_major":
        raise ValueError("unknown scale layout %r" % (scale_layout,))
    scales = _decode_scales(scale_codec, raw, _prod(grid)).reshape(grid)
    # Value coordinate x reads the scale of block floor(x_m / b_m) along every mode.
    per_value = np.asarray(scales[np.ix_(*[np.arange(n) // b for n, b in zip(shape, blocks)])])

    with np.errstate(all="ignore"):
        y = (codes * per_value).astype(np.float32)
        if fmt in ("nvfp4_ts", "nvfp4_ts_recip"):
            if tensor_scale_bytes is None:
                raise ValueError("%s needs tensor_scale_bytes" % fmt)
            t = np.frombuffer(_as_u8(tensor_scale_bytes).tobytes(), dtype="<f4")
            if t.size != 1:
                raise ValueError("the tensor scale is one float32")
            g = F32(t[0])
            y = (y * g) if fmt == "nvfp4_ts" else (y / g)
        elif tensor_scale_bytes is not None:
            raise ValueError("%s has no tensor scale" % fmt)
    return round_float32(np.asarray(y, dtype=np.float32).reshape(shape), to)


# ---------------------------------------------------------------------------------------
# GGUF array-of-structs blocks (formats.md section 4).

_GGUF_STRUCT = {
    "q8_0": np.dtype([("d", "<f2"), ("qs", "i1", (32,))]),   # 34 bytes
    "q4_0": np.dtype([("d", "<f2"), ("qs", "u1", (16,))]),   # 18 bytes
    "mxfp4": np.dtype([("e", "u1"), ("qs", "u1", (16,))]),   # 17 bytes
}


def _gguf_records(fmt, raw_bytes, shape):
    if fmt not in _GGUF_STRUCT:
        raise ValueError("unknown GGUF block format %r" % (fmt,))
    shape = tuple(int(n) for n in shape)
    if not shape or shape[-1] % 32:
        raise ValueError("GGUF blocks need a last extent that is a multiple of 32")
    st = _GGUF_STRUCT[fmt]
    u8 = _as_u8(raw_bytes)
    nblocks = _prod(shape) // 32
    if u8.size != nblocks * st.itemsize:
        raise ValueError("GGUF %s: %d bytes, expected %d" % (fmt, u8.size, nblocks * st.itemsize))
    return np.frombuffer(u8.tobytes(), dtype=st), shape


def _nibbles_j_then_j16(qs):
    """Struct nibble order: element j in the low nibble of qs[j], j + 16 in its high one."""
    return np.concatenate([qs & 15, qs >> 4], axis=1)


def dequantize_gguf_blocks(fmt, raw_bytes, shape, to="float32"):
    """Values of GGUF q8_0 / q4_0 / mxfp4 blocks; blocks run along the last logical mode.

    q8_0 {f16 d; i8 qs[32]}: qs[j] * d. q4_0 {f16 d; u8 qs[16]}: (q - 8) * d. mxfp4
    {u8 e; u8 qs[16]}: e2m1(q) * 2^(e-127), the OCP meaning: e = 255 is NaN and nibble 8 is
    -0.0. NOTE: ggml reads e = 255 as a finite scale and nibble 8 as +0.0 (its doubled
    table times 2^(e-128)); values.md keeps the OCP meaning. Each product is one float32
    multiplication (exact for q8_0 / q4_0 / finite mxfp4), then rounded to `to`.
    """
    _check_to(to)
    rec, shape = _gguf_records(fmt, raw_bytes, shape)
    if fmt == "q8_0":
        d = rec["d"].astype(np.float32)
        q = rec["qs"].astype(np.float32)
    elif fmt == "q4_0":
        d = rec["d"].astype(np.float32)
        q = _nibbles_j_then_j16(rec["qs"]).astype(np.float32) - F32(8)
    else:
        d = E8M0_F32[rec["e"]]
        q = E2M1_F32[_nibbles_j_then_j16(rec["qs"])]
    with np.errstate(all="ignore"):
        y = (q * d[:, None]).astype(np.float32)
    return round_float32(y.reshape(shape), to)


def gguf_blocks_to_planar(fmt, raw_bytes, shape):
    """GGUF blocks -> (value_bytes, scale_bytes) as dequantize() reads them (q4_0 / mxfp4
    codes in element order, two per byte, low nibble first)."""
    rec, shape = _gguf_records(fmt, raw_bytes, shape)
    if fmt == "q8_0":
        return rec["qs"].tobytes(), rec["d"].astype("<f2").tobytes()
    codes = _nibbles_j_then_j16(rec["qs"])
    scales = rec["d"].astype("<f2") if fmt == "q4_0" else rec["e"]
    return _pack4(codes).tobytes(), scales.tobytes()


def planar_to_gguf_blocks(fmt, value_bytes, scale_bytes, shape):
    """(value_bytes, scale_bytes) of q8_0 / q4_0 / mxfp4 (last-mode blocks of 32) -> GGUF."""
    if fmt not in _GGUF_STRUCT:
        raise ValueError("unknown GGUF block format %r" % (fmt,))
    shape = tuple(int(n) for n in shape)
    if not shape or shape[-1] % 32:
        raise ValueError("GGUF blocks need a last extent that is a multiple of 32")
    nblocks = _prod(shape) // 32
    rec = np.zeros(nblocks, dtype=_GGUF_STRUCT[fmt])
    v, s = _as_u8(value_bytes), _as_u8(scale_bytes)
    if fmt == "q8_0":
        rec["qs"] = v.view(np.int8).reshape(nblocks, 32)
    else:
        c = _unpack4(v, nblocks * 32).reshape(nblocks, 32)
        rec["qs"] = c[:, :16] | (c[:, 16:] << 4)
    if fmt == "mxfp4":
        rec["e"] = s
    else:
        rec["d"] = np.frombuffer(s.tobytes(), dtype="<f2")
    return rec.tobytes()


# ---------------------------------------------------------------------------------------
# fp8_e4m3_block128x128_ue8m0 quantization (values.md section 2).


def ue8m0_ceil_exponent(sf):
    """Biased exponent of sf rounded up to a power of two, from its float32 bits.

    The exponent field, plus one where the mantissa is not zero, clamped to [1, 254]
    (never log2). Non-finite sf (the contract is silent; it cannot happen for finite
    input) follows the same rule: inf and NaN have field 255 and clamp to 254.
    """
    bits = np.asarray(sf, dtype=np.float32).view(np.uint32) & np.uint32(0x7FFFFFFF)
    e = ((bits >> 23) & 0xFF).astype(np.int64) + ((bits & 0x7FFFFF) != 0)
    return np.clip(e, 1, 254).astype(np.uint8)


def quantize_block128x128_ue8m0(x, shape):
    """DeepGEMM's per_block_cast_to_fp8(use_ue8m0=True) over the last two modes.

    Per 128x128 block (ragged at the edges; leading modes are batch, block extent 1):
    amax = max |x| clamped to >= float32(1e-4); sf = amax / 448 (float32); e = the
    power-of-two ceiling's biased exponent by the bits; code = e4m3(x * (1 / 2^(e-127)))
    with the reciprocal and the product in float32.

    NOTE: the contract is silent on non-finite input. The literal rule is applied: a NaN
    makes amax NaN, whose exponent field 255 clamps to 254 (DeepGEMM's log2 form would
    store 255, NaN); an infinity gives 254 and codes saturated to +-448.

    Returns:
      (codes row-major over shape, e8m0 exponents row-major over the block grid), bytes.
    """
    shape = tuple(int(n) for n in shape)
    if len(shape) < 2:
        raise ValueError("block128x128 needs rank >= 2")
    xf = np.asarray(x, dtype=np.float32).reshape(shape)
    lead, (n, k) = shape[:-2], shape[-2:]
    gn, gk = -(-n // 128), -(-k // 128)
    # Zero padding to whole blocks leaves every amax as it is (|x| >= 0).
    padded = np.zeros(lead + (gn * 128, gk * 128), dtype=np.float32)
    padded[..., :n, :k] = xf
    tiles = padded.reshape(lead + (gn, 128, gk, 128))
    with np.errstate(all="ignore"):
        amax = np.abs(tiles).max(axis=(-3, -1)) if tiles.size else np.zeros(lead + (gn, gk),
                                                                           np.float32)
        amax = np.maximum(amax.astype(np.float32), F32(1e-4))  # NaN stays NaN, as torch
        sf = (amax / F32(448)).astype(np.float32)
        e = ue8m0_ceil_exponent(sf)
        pow2 = (e.astype(np.uint32) << 23).view(np.float32)  # e >= 1: a normal float32
        inv = (F32(1) / pow2).astype(np.float32)
        inv_full = np.repeat(np.repeat(inv, 128, axis=-2), 128, axis=-1)[..., :n, :k]
        codes = fr.e4m3((xf * inv_full).astype(np.float32))
    return np.asarray(codes, np.uint8).tobytes(), e.tobytes()


# ---------------------------------------------------------------------------------------
# Numpy peers for the benchmarks, written the way the field writes them.


def peer_gguf_q8_0(raw, shape):
    """gguf-py quants.py Q8_0 dequantization (split d and qs, widen, multiply), float32."""
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 34)
    d, qs = np.split(blocks, [2], axis=1)
    d = d.view(np.float16).astype(np.float32)
    qs = qs.view(np.int8).astype(np.float32)
    return (d * qs).reshape(shape)


def peer_gguf_q4_0(raw, shape):
    """gguf-py quants.py Q4_0 dequantization (low nibbles then high, minus 8), float32."""
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 18)
    n_blocks = blocks.shape[0]
    d, qs = np.hsplit(blocks, [2])
    d = d.view(np.float16).astype(np.float32)
    shifts = np.array([0, 4], dtype=np.uint8).reshape((1, 1, 2, 1))
    qs = qs.reshape((n_blocks, -1, 1, 16)) >> shifts
    qs = (qs & np.uint8(0x0F)).reshape((n_blocks, -1)).astype(np.int8) - np.int8(8)
    return (d * qs.astype(np.float32)).reshape(shape)


def peer_deepseek_weight_dequant(codes_uint8, scale_inv_f32, n, k, block_size=128):
    """DeepSeek-V3 inference/kernel.py weight_dequant in numpy: y = float32(x) * s of the
    128x128 block, stored as bfloat16 (the default dtype there). Returns uint16 bits."""
    x = np.asarray(codes_uint8, dtype=np.uint8).reshape(n, k)
    s = np.asarray(scale_inv_f32, dtype=np.float32).reshape(-(-n // block_size),
                                                            -(-k // block_size))
    s = np.repeat(np.repeat(s, block_size, axis=0), block_size, axis=1)[:n, :k]
    y = E4M3_F32[x] * s
    return bfloat16_bits(y)


# ---------------------------------------------------------------------------------------
# Comparison helper.


def same_bits(a, b):
    """True when a and b have one shape and dtype, NaN at the same places and identical
    bits elsewhere (NaN sign and payload are not part of the contract)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype == np.uint16:  # bfloat16 bits
        na, nb = (a & 0x7FFF) > 0x7F80, (b & 0x7FFF) > 0x7F80
    else:
        na, nb = np.isnan(a), np.isnan(b)
    ua = a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)
    ub = b.view(np.uint16 if b.dtype.itemsize == 2 else np.uint32)
    return bool(np.array_equal(na, nb) and np.array_equal(ua[~na], ub[~nb]))


# ---------------------------------------------------------------------------------------
# Self-check.


def _self_check():
    checks = [0]

    def check(cond, what):
        if not cond:
            raise AssertionError(what)
        checks[0] += 1

    def bits32(v):
        return int(np.asarray(v, np.float32).reshape(-1).view(np.uint32)[0])

    def f32_from_bits(u):
        return np.array([u], np.uint32).view(np.float32)

    def exact_round(x64, mant_bits, min_exp, max_finite):
        """Oracle: float64 values (each a float32) rounded to a binary format with
        `mant_bits` fraction bits and smallest quantum 2^min_exp, ties to even, overflow
        to inf -- through frexp and rint, not through bit tricks."""
        x64 = np.asarray(x64, np.float64)
        out = np.full(x64.shape, np.nan)
        fin = np.isfinite(x64)
        m, e = np.frexp(x64[fin])               # x = m * 2^e, 0.5 <= |m| < 1
        q = np.maximum(e - 1 - mant_bits, min_exp)
        r = np.ldexp(np.rint(np.ldexp(x64[fin], -q)), q)  # exact scalings; rint is RNE
        r = np.where(np.abs(r) > max_finite, np.copysign(np.inf, r), r)
        out[fin] = np.copysign(r, x64[fin])      # keeps -0.0
        out[np.isinf(x64)] = x64[np.isinf(x64)]
        return out

    def spread(per_block, blocks, shape):
        """Per-block array -> per-value array (np.repeat along each mode, then cropped)."""
        a = np.asarray(per_block)
        for m, b in enumerate(blocks):
            a = np.repeat(a, b, axis=m).take(np.arange(shape[m]), axis=m)
        return a

    rng = np.random.default_rng(20240611)

    # -- decode tables ------------------------------------------------------------------
    e = np.arange(255)
    check(np.array_equal(E8M0_F32[:255].astype(np.float64), np.ldexp(1.0, e - 127)),
          "e8m0 table is 2^(e-127)")
    check(np.isnan(E8M0_F32[255]), "e8m0 255 is NaN")
    check(bits32(E8M0_F32[0]) == 0x00400000, "e8m0 0 is the subnormal 2^-127")
    check(np.isnan(E4M3_F32[0x7F]) and np.isnan(E4M3_F32[0xFF]), "e4m3 NaN codes")
    check(np.isnan(E4M3_F32).sum() == 2, "e4m3 has two NaN codes")
    check(E4M3_F32[0x01] == 2.0 ** -9 and E4M3_F32[0x07] == 7 * 2.0 ** -9, "e4m3 subnormals")
    check(bits32(E4M3_F32[0x80]) == 0x80000000 and bits32(E4M3_F32[0]) == 0, "e4m3 +-0")
    check(bits32(E2M1_F32[8]) == 0x80000000 and E2M1_F32[15] == -6, "e2m1 -0 and -6")

    # -- rounding to bfloat16 / float16 -------------------------------------------------
    for src, want in [(0x3F808000, 0x3F80),   # 1 + 2^-8: tie -> even (down)
                      (0x3F818000, 0x3F82),   # 1 + 3*2^-8: tie -> even (up)
                      (0x3F808001, 0x3F81),   # just above the tie
                      (0x7F7F7FFF, 0x7F7F),   # just below the last tie: largest bf16
                      (0x7F7F8000, 0x7F80),   # tie, odd LSB -> rounds up to inf
                      (0x7F7FFFFF, 0x7F80),   # float32 max -> inf
                      (0xFF7FFFFF, 0xFF80),   # -max -> -inf
                      (0x7F800000, 0x7F80), (0xFF800000, 0xFF80),
                      (0x80000000, 0x8000), (0x00000000, 0x0000),
                      (0x00008000, 0x0000),   # subnormal tie -> even zero
                      (0x00018000, 0x0002),   # subnormal tie -> even up
                      (0x00400000, 0x0040),   # 2^-127 exact
                      (0x7F800001, 0x7FC0),   # signaling NaN -> quiet, not inf
                      (0xFFC00001, 0xFFC0)]:  # NaN keeps its sign
        got = int(bfloat16_bits(f32_from_bits(src))[0])
        check(got == want, "bf16(%#010x) = %#06x, want %#06x" % (src, got, want))
    rand32 = rng.integers(0, 2 ** 32, 200000, dtype=np.uint64).astype(np.uint32)
    rand32[:4] = [0x7F7F8000, 0x477FF000, 0x477FEFFF, 0x33000000]  # 65520, below it, 2^-25
    vals = rand32.view(np.float32)
    fin = np.isfinite(vals)
    want_bf = exact_round(vals.astype(np.float64), 7, -133, 3.3895313892515355e38)
    got_bf = fr.widen(bfloat16_bits(vals), "bfloat16").astype(np.float64)
    check(np.array_equal(got_bf[fin], want_bf[fin]) and
          np.array_equal(np.signbit(got_bf[fin]), np.signbit(want_bf[fin])),
          "bfloat16 rounding equals the frexp oracle on 200k random floats")
    check(np.array_equal(np.isnan(got_bf), np.isnan(vals)), "bf16 keeps NaN as NaN")
    want_h = exact_round(vals.astype(np.float64), 10, -24, 65504.0)
    got_h = round_float32(vals, "float16").astype(np.float64)
    check(np.array_equal(got_h[fin], want_h[fin]) and
          np.array_equal(np.signbit(got_h[fin]), np.signbit(want_h[fin])),
          "float16 rounding equals the frexp oracle on 200k random floats")
    check(np.array_equal(np.isnan(got_h), np.isnan(vals)), "f16 keeps NaN as NaN")
    check(got_h[1] == np.inf and got_h[2] == 65504 and got_h[3] == 0, "f16 65520 / 2^-25")

    # -- every format against a float64 oracle over random codes and scales ------------
    def rand_scales(codec, count):
        if codec in ("e8m0", "e4m3"):
            return rng.integers(0, 256, count, dtype=np.uint8)
        if codec == "f16":
            return rng.integers(0, 2 ** 16, count, dtype=np.uint16).view(np.uint8)
        s = (rng.standard_normal(count) * np.exp2(rng.integers(-140, 120, count))).astype(
            np.float32)
        s[rng.random(count) < 0.05] = 0
        s[rng.random(count) < 0.02] = np.inf
        s[rng.random(count) < 0.02] = np.nan
        return s.astype("<f4").view(np.uint8)

    cases = [("mxfp8_e4m3", (4, 96), 1), ("mxfp8_e4m3", (64, 3), 0),
             ("mxfp4", (2, 3, 64), -1), ("nvfp4", (5, 48), 1), ("nvfp4", (32, 2), 0),
             ("nvfp4_ts", (3, 32), -1), ("nvfp4_ts_recip", (16, 5), 0),
             ("fp8_e4m3_tensorwise", (7, 9), None), ("fp8_e4m3_tensorwise", (), None),
             ("fp8_e4m3_rowwise", (2, 5, 7), None),
             ("fp8_e4m3_block1x128", (3, 300), 1), ("fp8_e4m3_block1x128", (200, 3), 0),
             ("fp8_e4m3_block128x128", (2, 130, 257), None),
             ("fp8_e4m3_block128x128_ue8m0", (300, 129), None),
             ("q8_0", (3, 64), None), ("q4_0", (2, 96), None)]
    for fmt, shape, mode in cases:
        elem_codec, scale_codec = _FORMATS[fmt]
        n = _prod(shape)
        blocks = block_extents(fmt, shape, mode)
        grid = block_grid(shape, blocks)
        nbytes = (n + 1) // 2 if elem_codec in ("e2m1", "u4") else n
        vbytes = rng.integers(0, 256, nbytes, dtype=np.uint8)
        sbytes = rand_scales(scale_codec, _prod(grid))
        tsb = None
        gs = [None]
        if fmt.startswith("nvfp4_ts"):
            gs = [F32(1), F32(0.7071068), F32(3e-30), F32(0), F32(np.inf), F32(np.nan)]
        for g in gs:
            if g is not None:
                tsb = np.array([g], "<f4").tobytes()
            # oracle: codes and scales in float64, scales spread by np.repeat, product in
            # float64 (exact here: <= 4 + 24 significant bits) then one cast to float32.
            if elem_codec in ("e2m1", "u4"):
                c = _unpack4(vbytes, n)
                c64 = (E2M1_F32[c] if elem_codec == "e2m1" else c.astype(np.float64) - 8)
            elif elem_codec == "i8":
                c64 = vbytes.view(np.int8)
            else:
                c64 = E4M3_F32[vbytes]
            c64 = np.asarray(c64, np.float64).reshape(shape)
            s64 = _decode_scales(scale_codec, sbytes, _prod(grid)).astype(np.float64)
            s64 = spread(s64.reshape(grid), blocks, shape)
            want = (c64 * s64).astype(np.float32)
            if fmt == "nvfp4_ts":
                want = (want.astype(np.float64) * np.float64(g)).astype(np.float32)
            elif fmt == "nvfp4_ts_recip":
                # float64 division then a cast is still one correct rounding: double
                # rounding is innocuous for / when 53 >= 2*24 + 2 (Figueroa).
                want = (want.astype(np.float64) / np.float64(g)).astype(np.float32)
            for to in TARGETS:
                got = dequantize(fmt, vbytes, sbytes, shape, mode, tensor_scale_bytes=tsb, to=to)
                check(got.shape == shape, "%s shape" % fmt)
                check(same_bits(got, round_float32(want, to)),
                      "%s %s g=%r: dequantize differs from the float64 oracle" % (fmt, to, g))

    # -- signed zeros, NaN scales, NaN codes, subnormals, IEEE inf * 0 -------------------
    def one_block(fmt, codes, scale, shape=None, mode=-1, ts=None, to="float32"):
        if shape is None:
            shape = (len(codes),)
        ec = _FORMATS[fmt][0]
        v = _pack4(codes) if ec in ("e2m1", "u4") else np.asarray(codes, np.uint8)
        return dequantize(fmt, v, scale, shape, mode, tensor_scale_bytes=ts, to=to)

    z = one_block("mxfp8_e4m3", [0x80, 0x00] + [0x38] * 30, bytes([127]))
    check(bits32(z[0]) == 0x80000000 and bits32(z[1]) == 0 and z[2] == 1, "mxfp8 +-0")
    check(int(one_block("mxfp8_e4m3", [0x80] * 32, bytes([127]), to="bfloat16")[0]) == 0x8000
          and one_block("mxfp8_e4m3", [0x80] * 32, bytes([127]),
                        to="float16").view(np.uint16)[0] == 0x8000, "-0 to bf16 / f16")
    z = one_block("mxfp4", [8, 0] * 16, bytes([200]))
    check(bits32(z[0]) == 0x80000000 and bits32(z[1]) == 0, "mxfp4 nibble 8 is -0.0")
    z = one_block("fp8_e4m3_tensorwise", [0x38, 0x00], np.array([-0.0], "<f4").tobytes())
    check(bits32(z[0]) == 0x80000000 and bits32(z[1]) == 0x80000000, "(+1, +0) * -0 = -0")

    for fmt, codes, nan_scale, ok_scale in [
            ("mxfp8_e4m3", [0x00, 0x80, 0x38] + [0] * 29, 255, 127),
            ("mxfp4", [0, 8, 7] + [0] * 29, 255, 127),
            ("nvfp4", [0, 8, 7] + [0] * 13, 0x7F, 0x38),
            ("nvfp4", [0, 8, 7] + [0] * 13, 0xFF, 0x38)]:
        got = one_block(fmt, codes * 2, bytes([nan_scale, ok_scale]), shape=(2, len(codes)))
        check(np.isnan(got[0]).all() and not np.isnan(got[1]).any(),
              "%s: scale %#x makes its whole block NaN and only it" % (fmt, nan_scale))
    got = dequantize("fp8_e4m3_block128x128_ue8m0", np.zeros((130, 4), np.uint8),
                     bytes([255, 127]), (130, 4))
    check(np.isnan(got[:128]).all() and (got[128:] == 0).all(), "ue8m0 scale 255 -> block NaN")
    got = dequantize("q8_0", np.zeros(64, np.uint8), np.array([np.nan, np.inf], "<f2").tobytes(),
                     (64,))
    check(np.isnan(got).all(), "q8_0: NaN * 0 and inf * 0 are NaN (IEEE)")
    got = one_block("fp8_e4m3_tensorwise", [0x00, 0x80, 0x38, 0xB8],
                    np.array([np.inf], "<f4").tobytes())
    check(np.isnan(got[:2]).all() and got[2] == np.inf and got[3] == -np.inf, "inf scale")
    got = one_block("nvfp4_ts", [0, 8, 2] + [0] * 13, bytes([0x38]),
                    ts=np.array([np.inf], "<f4").tobytes())
    check(np.isnan(got[:2]).all() and got[2] == np.inf, "nvfp4_ts: 0 * inf is NaN")
    got = one_block("nvfp4_ts_recip", [0, 2] + [0] * 14, bytes([0x38]),
                    ts=np.array([0], "<f4").tobytes())
    check(np.isnan(got[0]) and got[1] == np.inf, "nvfp4_ts_recip: 0/0 NaN, 1/0 inf")

    got = one_block("mxfp8_e4m3", [0x7F, 0xFF, 0x38] + [0] * 29, bytes([127]), to="bfloat16")
    check(((got[:2] & 0x7FFF) > 0x7F80).all() and got[2] == 0x3F80 and (got[3:] == 0).all(),
          "e4m3 NaN codes are NaN, the rest of the block not")
    got = one_block("mxfp8_e4m3", [0x01, 0x03, 0x38, 0x87] + [0] * 28, bytes([0]))
    check(got[0] == 2.0 ** -136 and got[1] == 3 * 2.0 ** -136 and got[2] == 2.0 ** -127 and
          got[3] == -7 * 2.0 ** -136, "subnormal e4m3 times 2^-127: exact float32 subnormals")
    got = one_block("mxfp8_e4m3", [0x38, 0x01] + [0] * 30, bytes([0]), to="bfloat16")
    check(int(got[0]) == 0x0040 and int(got[1]) == 0, "2^-127 -> bf16 0x0040; 2^-136 -> 0")
    got = dequantize("q8_0", np.array([-128, 1, 3] + [0] * 29, np.int8).view(np.uint8),
                     bytes([0x01, 0x00]), (32,))
    check(got[0] == -(2.0 ** -17) and got[1] == 2.0 ** -24 and got[2] == 3 * 2.0 ** -24,
          "float16 subnormal scale widens exactly")
    got = dequantize("q4_0", _pack4([0, 15, 8] + [8] * 29), bytes([0xFF, 0x03]), (32,))
    check(got[0] == -8 * 1023 * 2.0 ** -24 and got[1] == 7 * 1023 * 2.0 ** -24 and
          got[2] == 0, "q4_0 (q - 8) * subnormal d")
    got = one_block("nvfp4", [7, 1] + [0] * 14, bytes([0x01]))
    check(got[0] == 6 * 2.0 ** -9 and got[1] == 2.0 ** -10, "nvfp4 subnormal e4m3 scale")

    # -- overflow to infinity when rounding, never saturation --------------------------
    got = one_block("mxfp8_e4m3", [0x7E, 0xFE] + [0] * 30, bytes([254]))
    check(got[0] == np.inf and got[1] == -np.inf, "448 * 2^127 overflows float32 to inf")
    got = one_block("mxfp8_e4m3", [0x7E, 0xFE, 0x7E] + [0] * 29, bytes([127 + 8]), to="float16")
    check(got[0] == np.inf and got[1] == -np.inf, "114688 -> float16 inf")
    got = one_block("mxfp8_e4m3", [0x7E] + [0] * 31, bytes([127 + 7]), to="float16")
    check(got[0] == 57344, "57344 stays finite in float16")
    for s, want_h in [(65520.0, np.inf), (np.nextafter(F32(65520), F32(0)), 65504.0),
                      (65504.0, 65504.0)]:
        got = one_block("fp8_e4m3_tensorwise", [0x38, 0xB8], np.array([s], "<f4").tobytes(),
                        to="float16")
        check(got[0] == want_h and got[1] == -want_h, "float16(%r)" % s)
    for sbits, want_b in [(0x7F7F8000, 0x7F80), (0x7F7F7FFF, 0x7F7F)]:
        got = one_block("fp8_e4m3_tensorwise", [0x38, 0xB8],
                        f32_from_bits(sbits).astype("<f4").tobytes(), to="bfloat16")
        check(int(got[0]) == want_b and int(got[1]) == want_b | 0x8000, "bf16 overflow edge")

    # -- nvfp4_ts order: rn(rn(c * s_b) * g), not rn(c * rn(s_b * g)) ------------------
    found = None
    for g in (rng.random(4000) * 4 + 0.01).astype(np.float32):
        c, s_b = F32(3), F32(1.125)                # e2m1 0x5, e4m3 0x39
        contract = F32(F32(c * s_b) * g)
        folded = F32(c * F32(s_b * g))
        if contract != folded:
            found = (g, contract)
            break
    check(found is not None, "an example where folding g into s_b differs exists")
    got = one_block("nvfp4_ts", [5] + [0] * 15, bytes([0x39]),
                    ts=np.array([found[0]], "<f4").tobytes())
    check(got[0] == found[1], "nvfp4_ts takes (code * s_b) * g")
    found = None
    for g in (rng.random(4000) * 4 + 0.01).astype(np.float32):
        if F32(F32(3.375) / g) != F32(F32(3.375) * F32(F32(1) / g)):
            found = g
            break
    check(found is not None, "an example where multiplying by 1/g' differs exists")
    got = one_block("nvfp4_ts_recip", [5] + [0] * 15, bytes([0x39]),
                    ts=np.array([found], "<f4").tobytes())
    check(got[0] == F32(F32(3.375) / found), "nvfp4_ts_recip divides by g'")

    # -- ragged 128x128 (DeepSeek's 576 rows), views of whole blocks -------------------
    n, k = 576, 200
    codes = rng.integers(0, 256, (n, k), dtype=np.uint8)
    codes[(codes & 0x7F) == 0x7F] = 0x38  # finite data for the peer
    sinv = (rng.random((5, 2)) * 1e-3 + 1e-5).astype(np.float32)
    ref = dequantize("fp8_e4m3_block128x128", codes, sinv.tobytes(), (n, k), to="bfloat16")
    check(same_bits(ref, peer_deepseek_weight_dequant(codes, sinv, n, k)),
          "DeepSeek weight_dequant peer equals the reference (576x200)")
    full = dequantize("fp8_e4m3_block128x128", codes, sinv.tobytes(), (n, k))
    check(same_bits(full[512:], E4M3_F32[codes[512:]] * np.repeat(sinv[4:], 128, 1)[:, :k]),
          "rows 512..575 read scale row 4 (the partial block)")
    for r0, r1 in [(128, 576), (512, 576), (0, 64), (256, 384)]:
        sub = dequantize("fp8_e4m3_block128x128", codes[r0:r1],
                         sinv[r0 // 128:-(-r1 // 128)].tobytes(), (r1 - r0, k))
        check(same_bits(sub, full[r0:r1]), "Dequantize(slice) == slice(Dequantize) rows %d:%d"
              % (r0, r1))
    sub = dequantize("fp8_e4m3_block128x128", np.ascontiguousarray(codes[:, 128:]),
                     np.ascontiguousarray(sinv[:, 1:]).tobytes(), (n, k - 128))
    check(same_bits(sub, full[:, 128:]), "column slice of whole blocks")
    e8 = rng.integers(100, 140, (5, 2), dtype=np.uint8)
    ue = dequantize("fp8_e4m3_block128x128_ue8m0", codes, e8, (n, k))
    pow2 = np.exp2(spread(e8.astype(np.float64) - 127, (128, 128), (n, k))).astype(np.float32)
    check(same_bits(ue, E4M3_F32[codes] * pow2),
          "ue8m0: code * 2^(e-127), ragged grid 5x2")
    for kk in (1, 129, 384):
        cc = rng.integers(0, 0x7F, (129, kk), dtype=np.uint8)
        ss = (rng.random((2, -(-kk // 128))) + 0.5).astype(np.float32)
        check(same_bits(dequantize("fp8_e4m3_block128x128", cc, ss, (129, kk), to="bfloat16"),
                        peer_deepseek_weight_dequant(cc, ss, 129, kk)),
              "DeepSeek peer equals the reference (129x%d)" % kk)

    # -- swizzled_128x4 and row-major scale layouts give the same values ---------------
    for fmt, shape, mode in [("mxfp8_e4m3", (2, 300, 64), -1), ("mxfp4", (64, 130), 0),
                             ("nvfp4", (129, 48), 1), ("nvfp4", (2, 3, 32, 5), 2),
                             ("mxfp8_e4m3", (33, 256), 1)]:
        ec = _FORMATS[fmt][0]
        nelem = _prod(shape)
        v = rng.integers(0, 256, (nelem + 1) // 2 if ec == "e2m1" else nelem, dtype=np.uint8)
        grid = block_grid(shape, block_extents(fmt, shape, mode))
        s = rng.integers(0, 256, _prod(grid), dtype=np.uint8)
        sw = np.frombuffer(fr.swizzle_128x4(s, grid, mode), np.uint8)
        check(np.array_equal(unswizzle_128x4(sw, grid, mode), s), "unswizzle(swizzle) %s" % fmt)
        for to in TARGETS:
            check(same_bits(dequantize(fmt, v, s, shape, mode, to=to),
                            dequantize(fmt, v, sw, shape, mode, "swizzled_128x4", to=to)),
                  "%s %r: swizzled and row-major scales dequantize alike" % (fmt, shape))
    for fmt in ("nvfp4_ts", "nvfp4_ts_recip"):
        x = rng.standard_normal((130, 64)).astype(np.float32)
        a = fr.quantize(fmt, x, x.shape, 1)
        b = fr.quantize(fmt, x, x.shape, 1, "swizzled_128x4")
        check(same_bits(dequantize(fmt, a[0], a[1], x.shape, 1, tensor_scale_bytes=a[2]),
                        dequantize(fmt, b[0], b[1], x.shape, 1, "swizzled_128x4", b[2])),
              "%s: swizzled and row-major quantizations dequantize alike" % fmt)

    # -- Dequantize(Quantize(x)) == x for values the format holds exactly --------------
    finite_e4m3 = E4M3_F32[np.r_[0:0x7F, 0x80:0xFF]]

    def exact_fp8(shape, blocks):
        """x = e4m3 value * 2^k_b with 448 * 2^k_b in every block: s = 2^k_b exactly."""
        grid = block_grid(shape, blocks)
        k = spread(rng.integers(-20, 20, grid), blocks, shape)
        x = rng.choice(finite_e4m3, shape)
        idx = np.indices(shape)
        first = np.all([idx[m] % b == 0 for m, b in enumerate(blocks)], axis=0)
        x = np.where(first, F32(-448), x)
        return np.ldexp(x.astype(np.float64), k).astype(np.float32)

    for fmt, shape, mode in [("fp8_e4m3_tensorwise", (5, 7), None),
                             ("fp8_e4m3_rowwise", (3, 4, 9), None),
                             ("fp8_e4m3_block1x128", (3, 300), -1),
                             ("fp8_e4m3_block1x128", (300, 2), 0),
                             ("fp8_e4m3_block128x128", (576, 200), None),
                             ("fp8_e4m3_block128x128", (2, 130, 129), None)]:
        x = exact_fp8(shape, block_extents(fmt, shape, mode))
        v, s, t = fr.quantize(fmt, x, shape, mode)
        check(same_bits(dequantize(fmt, v, s, shape, mode), x), "%s round trip" % fmt)
        v, s = quantize_block128x128_ue8m0(x, shape) if "128x128" in fmt else (None, None)
        if v is not None:
            check(same_bits(dequantize("fp8_e4m3_block128x128_ue8m0", v, s, shape), x),
                  "ue8m0 round trip %r" % (shape,))
    for fmt, g in (("nvfp4_ts", 1.0), ("nvfp4_ts", 2.0 ** -7), ("nvfp4_ts_recip", 2.0 ** 5)):
        shape = (6, 64)
        sb = rng.choice(E4M3_F32[0x08:0x7F], (6, 4)).astype(np.float64)  # normal e4m3
        sb[0, 0] = 448
        x = rng.choice(E2M1_F32, shape).astype(np.float64)
        x[:, ::16] = 6 * np.sign(rng.standard_normal((6, 4)))
        x = (x * np.repeat(sb, 16, axis=1) * g).astype(np.float32)
        v, s, t = fr.quantize(fmt, x, shape, 1)
        check(same_bits(dequantize(fmt, v, s, shape, 1, tensor_scale_bytes=t), x),
              "%s round trip (g = %r)" % (fmt, g))
    # q8_0: d = 2^k with 127 * d in every block; q4_0: d = 2^k with -8 * d first.
    d = np.exp2(rng.integers(-20, 10, (4, 3))).astype(np.float32)
    xq8 = (rng.integers(-127, 128, (4, 96)).astype(np.float32) * d.repeat(32, 1))
    xq8[:, ::32] = 127 * d
    v, s, _ = fr.quantize("q8_0", xq8, xq8.shape)
    check(same_bits(dequantize("q8_0", v, s, xq8.shape), xq8), "q8_0 round trip")
    xq4 = ((rng.integers(0, 16, (3, 64)) - 8).astype(np.float32) * d[:3, :2].repeat(32, 1))
    xq4[:, ::32] = -8 * d[:3, :2]
    v, s, _ = fr.quantize("q4_0", xq4, xq4.shape)
    check(same_bits(dequantize("q4_0", v, s, xq4.shape), xq4), "q4_0 round trip")

    # -- ue8m0 quantization: the exponent by the bits against frexp --------------------
    sf = np.concatenate([(rng.random(5000) * np.exp2(rng.integers(-40, 40, 5000))),
                         np.exp2(np.arange(-30, 30.0))]).astype(np.float32)
    m, ex = np.frexp(sf.astype(np.float64))
    want = np.where(m == 0.5, ex - 1, ex) + 127  # ceil(log2 sf) for sf = m * 2^ex
    check(np.array_equal(ue8m0_ceil_exponent(sf).astype(np.int64), want),
          "power-of-two ceiling by the bits equals frexp's")
    check(list(ue8m0_ceil_exponent(f32_from_bits(0x00000001))) == [1] and
          list(ue8m0_ceil_exponent(np.array([np.inf, np.nan, 2.0 ** 127], np.float32))) ==
          [254, 254, 254], "clamped to [1, 254]")
    x = (rng.standard_normal((3, 260, 140)) * np.exp2(rng.integers(-30, 30, (3, 1, 1)))
         ).astype(np.float32)
    x[0, :128, :128] = 0
    x[0, 0, 0] = -0.0
    x[1, :128, :128] *= 1e-9  # amax below 1e-4: clamped
    v, s = quantize_block128x128_ue8m0(x, x.shape)
    ev = np.frombuffer(s, np.uint8).reshape(3, 3, 2)
    check(ev[0, 0, 0] == 105 and ev[1, 0, 0] == 105, "amax < 1e-4 -> sf 1e-4/448 -> 2^-22")
    cv = np.frombuffer(v, np.uint8).reshape(x.shape)
    check(cv[0, 0, 0] == 0x80 and (cv[0, 1:128, :128] == 0).all(), "zeros keep their sign")
    amax = np.maximum(np.abs(np.pad(x, ((0, 0), (0, 124), (0, 116)))).reshape(3, 3, 128, 2, 128)
                      .max(axis=(2, 4)), F32(1e-4))
    ceil_e = ue8m0_ceil_exponent((amax / F32(448)).astype(np.float32)).astype(np.int64)
    check(np.array_equal(ev, ceil_e), "stored e8m0 is the ceiling exponent of amax/448")
    e_full = spread(ev.astype(np.int64) - 127, (1, 128, 128), x.shape)
    q = np.ldexp(x.astype(np.float64), -e_full)
    check(np.array_equal(cv, fr.e4m3(q.astype(np.float32)).reshape(x.shape)),
          "codes are e4m3(x / 2^(e-127))")
    check((np.abs(E4M3_F32[cv]) <= 448).all(), "codes never saturate past 448")
    y = dequantize("fp8_e4m3_block128x128_ue8m0", v, s, x.shape)
    big = np.abs(x) > np.ldexp(2.0 ** -6, e_full)  # normal e4m3 codes
    check((np.abs(y[big] - x[big]) <= np.abs(x[big]) * 2.0 ** -4).all(),
          "requantized values within half an e4m3 ulp")
    # Requantize of block128x128 into ue8m0 dequantizes in float32 first (vLLM).
    v2, s2, _ = fr.quantize("fp8_e4m3_block128x128", x[0], x.shape[1:])
    r = quantize_block128x128_ue8m0(dequantize("fp8_e4m3_block128x128", v2, s2, x.shape[1:]),
                                    x.shape[1:])
    check(len(r[0]) == 260 * 140 and len(r[1]) == 3 * 2, "requantize block128x128 -> ue8m0")

    # -- GGUF struct readers against the planar ones, and the gguf-py peers ------------
    import gguf_reference as gr  # the sibling's independent struct writer / reader
    for fmt, shape in [("q8_0", (3, 128)), ("q4_0", (2, 2, 64)), ("mxfp4", (5, 96))]:
        size = _GGUF_STRUCT[fmt].itemsize
        raw = rng.integers(0, 256, _prod(shape) // 32 * size, dtype=np.uint8).tobytes()
        v, s = gguf_blocks_to_planar(fmt, raw, shape)
        check(planar_to_gguf_blocks(fmt, v, s, shape) == raw, "%s struct <-> planar" % fmt)
        for to in TARGETS:
            check(same_bits(dequantize_gguf_blocks(fmt, raw, shape, to),
                            dequantize(fmt, v, s, shape, -1, to=to)),
                  "%s %s: struct reader equals the planar one" % (fmt, to))
        # gguf_reference reads ggml's way (float64): equal where e != 255, up to -0 == +0.
        mine = dequantize_gguf_blocks(fmt, raw, shape)
        theirs = gr.dequantize({"q8_0": gr.GT.Q8_0, "q4_0": gr.GT.Q4_0,
                                "mxfp4": gr.GT.MXFP4}[fmt], raw, shape).astype(np.float32)
        ok = ~np.isnan(mine)
        check(np.array_equal(mine[ok], theirs[ok]), "%s equals gguf_reference's values" % fmt)
    x = rng.standard_normal((4, 128)).astype(np.float32) * 3
    for fmt, writer in (("q8_0", gr.quantize_q8_0), ("q4_0", gr.quantize_q4_0)):
        v, s, _ = fr.quantize(fmt, x, x.shape)
        raw = planar_to_gguf_blocks(fmt, v, s, x.shape)
        check(raw == writer(x), "%s: planar_to_gguf_blocks matches gguf_reference's blocks" % fmt)
        peer = peer_gguf_q8_0 if fmt == "q8_0" else peer_gguf_q4_0
        got = peer(raw, x.shape)
        check(got.dtype == np.float32 and
              same_bits(got, dequantize_gguf_blocks(fmt, raw, x.shape)),
              "gguf-py %s peer equals the reference" % fmt)
    for fmt, peer in (("q8_0", peer_gguf_q8_0), ("q4_0", peer_gguf_q4_0)):
        size = _GGUF_STRUCT[fmt].itemsize
        blocks = rng.integers(0, 256, (300, size), dtype=np.uint8)
        d = (rng.standard_normal(300) * np.exp2(rng.integers(-30, 10, 300))).astype("<f2")
        blocks[:, :2] = d.view(np.uint8).reshape(300, 2)  # finite d, subnormals included
        raw = blocks.tobytes()
        check(same_bits(peer(raw, (10, 960)), dequantize_gguf_blocks(fmt, raw, (10, 960))),
              "gguf-py %s peer equals the reference on random finite blocks" % fmt)

    # -- argument errors ----------------------------------------------------------------
    for call, kind in [
            (lambda: dequantize("q8_0", bytes(32), bytes(2), (32,), to="int8"), TypeError),
            (lambda: dequantize("q8_0", bytes(31), bytes(2), (32,)), ValueError),
            (lambda: dequantize("q8_0", bytes(32), bytes(3), (32,)), ValueError),
            (lambda: dequantize("fp8_e4m3_tensorwise", bytes(4), bytes(4), (4,),
                                scale_layout="swizzled_128x4"), ValueError),
            (lambda: dequantize("nvfp4_ts", bytes(8), bytes(1), (16,), 0), ValueError),
            (lambda: dequantize("mxfp4", bytes(8), bytes(1), (16,), 0), ValueError),
            (lambda: dequantize_gguf_blocks("q4_0", bytes(17), (32,)), ValueError)]:
        try:
            call()
            check(False, "expected %s" % kind.__name__)
        except kind:
            checks[0] += 1
    return checks[0]


if __name__ == "__main__":
    try:
        with np.errstate(all="ignore"):
            count = _self_check()
    except AssertionError as e:
        print("dequantize_reference: FAILED: %s" % e)
        sys.exit(1)
    print("dequantize_reference: %d checks passed" % count)
