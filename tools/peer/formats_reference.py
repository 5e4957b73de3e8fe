#!/usr/bin/python3
"""Independent numpy reference of the quantization in shared/design/formats.md section 2.

Written from the contract's definitions (and, where it points at one, the format's own
reference: ggml's quantize_row_q8_0_ref / quantize_row_q4_0_ref), not from Strata's C++.
Every arithmetic step is a numpy float32 operation (one IEEE round-to-nearest-even per
operation, left to right as the contract writes it); rounding to float8_e4m3fn and
float4_e2m1fn is done exactly from the float32 value (widened to float64, which is exact)
against the table of representable values.

    quantize(fmt, x, shape, blocked_mode=None, scale_layout="row_major")
        -> (value_bytes, scale_bytes, tensor_scale_bytes or None)

Run it to execute the self-check:  /usr/bin/python3 tools/peer/formats_reference.py
"""
import math

import numpy as np

F32 = np.float32

FORMATS = (
    "fp8_e4m3_tensorwise",
    "fp8_e4m3_rowwise",
    "fp8_e4m3_block1x128",
    "fp8_e4m3_block128x128",
    "nvfp4_ts",
    "nvfp4_ts_recip",
    "q8_0",
    "q4_0",
)

# ---------------------------------------------------------------------------------------
# Element codecs.


def _e4m3_decode_magnitude(c):
    """Magnitude of the 7-bit e4m3fn code c (0..0x7E); 0x7F is NaN."""
    e, m = c >> 3, c & 7
    if e == 0:
        return m * 2.0 ** -9
    return (1.0 + m / 8.0) * 2.0 ** (e - 7)


# Positive representable values, ascending with the code: code k <-> _E4M3_POS[k], k < 0x7F.
_E4M3_POS = np.array([_e4m3_decode_magnitude(c) for c in range(0x7F)], dtype=np.float64)
_E2M1_POS = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float64)


def _round_to_grid(mag, grid):
    """Index of the RNE-nearest entry of the ascending grid for each magnitude (float64,
    exact). Ties go to the even index (= even mantissa, as the code is the index).
    Magnitudes beyond the last entry (inf included) saturate to the last index."""
    mids = (grid[:-1] + grid[1:]) / 2.0  # exact in float64
    i = np.searchsorted(mids, mag, side="left")  # mids[i-1] < mag <= mids[i]
    tie = np.zeros(mag.shape, dtype=bool)
    inside = i < len(mids)
    tie[inside] = mag[inside] == mids[i[inside]]
    i = np.where(tie & (i % 2 == 1), i + 1, i)
    return i


def e4m3(v):
    """float32 value(s) -> float8_e4m3fn code(s) (uint8). RNE from the exact float32 value,
    saturating to +-448 (inf included); sign bit kept for -0.0 and for negatives rounding to
    zero; NaN -> 0x7F | sign."""
    a = np.asarray(v, dtype=np.float32)
    scalar = a.ndim == 0
    a = np.atleast_1d(a)
    d = a.astype(np.float64)
    sign = np.signbit(a).astype(np.uint8) << 7
    nan = np.isnan(d)
    mag = np.where(nan, 0.0, np.abs(d))
    code = _round_to_grid(mag, _E4M3_POS).astype(np.uint8)
    code = np.where(nan, np.uint8(0x7F), code).astype(np.uint8) | sign
    return code[0] if scalar else code


def e4m3_value(code):
    """float8_e4m3fn code(s) -> value(s) as float32 (every e4m3 value is a float32)."""
    c = np.atleast_1d(np.asarray(code, dtype=np.uint8))
    low = (c & 0x7F).astype(np.int64)
    mag = np.where(low == 0x7F, np.nan, _E4M3_POS[np.minimum(low, 0x7E)])
    val = np.where(c & 0x80, -mag, mag).astype(np.float32)
    return val[0] if np.ndim(code) == 0 else val


def e2m1(v):
    """float32 value(s) -> float4_e2m1fn code(s) 0..15 (uint8). Grid 0,.5,1,1.5,2,3,4,6,
    RNE (ties to the even code), saturating to +-6; sign bit 0x8 for every negative value
    and -0.0 (also when rounding to zero); NaN -> 0x0 (e2m1 has no NaN)."""
    a = np.asarray(v, dtype=np.float32)
    scalar = a.ndim == 0
    a = np.atleast_1d(a)
    d = a.astype(np.float64)
    nan = np.isnan(d)
    sign = np.where(nan, 0, np.signbit(a).astype(np.uint8) << 3).astype(np.uint8)
    mag = np.where(nan, 0.0, np.abs(d))
    code = _round_to_grid(mag, _E2M1_POS).astype(np.uint8) | sign
    return code[0] if scalar else code


def e2m1_value(code):
    c = np.atleast_1d(np.asarray(code, dtype=np.uint8))
    mag = _E2M1_POS[c & 7]
    val = np.where(c & 8, -mag, mag).astype(np.float32)
    return val[0] if np.ndim(code) == 0 else val


def f16(v):
    """float32 -> float16, RNE (numpy's float32 -> float16 cast rounds to nearest even)."""
    return np.asarray(v, dtype=np.float32).astype(np.float16)


def widen(raw, dtype):
    """Exact widening of float16 / bfloat16 (given as uint16 bit patterns or a float16
    array) / float32 input to float32."""
    if dtype == "float32":
        return np.asarray(raw, dtype=np.float32)
    if dtype == "float16":
        return np.asarray(raw).view(np.float16).astype(np.float32) if np.asarray(raw).dtype == np.uint16 \
            else np.asarray(raw, dtype=np.float16).astype(np.float32)
    if dtype == "bfloat16":
        bits = np.asarray(raw, dtype=np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32)
    raise ValueError("unknown source dtype " + dtype)


# ---------------------------------------------------------------------------------------
# Blocks.


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
    """Per-mode block extent (an int; `whole` is written as the mode's extent)."""
    rank = len(shape)
    if fmt == "fp8_e4m3_tensorwise":
        return [max(n, 1) for n in shape]
    if fmt == "fp8_e4m3_rowwise":
        if rank == 0:
            return []
        return [1] * (rank - 1) + [max(shape[-1], 1)]
    if fmt == "fp8_e4m3_block1x128":
        m = _norm_mode(blocked_mode, rank)
        return [128 if i == m else 1 for i in range(rank)]
    if fmt == "fp8_e4m3_block128x128":
        if rank < 2:
            raise ValueError("block128x128 needs rank >= 2")
        return [1] * (rank - 2) + [128, 128]
    if fmt in ("nvfp4_ts", "nvfp4_ts_recip"):
        m = _norm_mode(blocked_mode, rank)
        if shape[m] % 16:
            raise ValueError("nvfp4 blocked extent must be a multiple of 16")
        return [16 if i == m else 1 for i in range(rank)]
    if fmt in ("q8_0", "q4_0"):
        if rank < 1 or shape[-1] % 32:
            raise ValueError("ggml blocks need a last extent that is a multiple of 32")
        return [1] * (rank - 1) + [32]
    raise ValueError("unknown format " + fmt)


def _block_ids(shape, blocks):
    """(grid shape, per-element row-major block index over the grid, as a flat array)."""
    grid = tuple(-(-n // b) for n, b in zip(shape, blocks))
    idx = np.indices(shape).reshape(len(shape), -1) if shape else np.zeros((0, 1), np.int64)
    coords = tuple(idx[m] // blocks[m] for m in range(len(shape)))
    if not shape:
        return grid, np.zeros(1, np.int64)
    return grid, np.ravel_multi_index(coords, grid)


def _block_amax(xf, ids, nblocks):
    amax = np.zeros(nblocks, dtype=np.float32)
    np.maximum.at(amax, ids, np.abs(xf))
    return amax


def _pack4(codes):
    codes = np.asarray(codes, dtype=np.uint8).ravel()
    if codes.size % 2:
        codes = np.concatenate([codes, np.zeros(1, np.uint8)])
    return (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8).tobytes()


def swizzle_128x4(scales, grid, blocked_mode):
    """Row-major scale bytes (one per block, over `grid`) -> the swizzled_128x4 carrier of
    representation-cli.md "Scale layouts"; padding bytes 0."""
    rank = len(grid)
    if rank < 2:
        raise ValueError("swizzled_128x4 needs rank >= 2")
    bm = _norm_mode(blocked_mode, rank)
    if bm not in (rank - 2, rank - 1):
        raise ValueError("swizzled_128x4 needs the blocked mode among the last two")
    om = rank - 1 if bm == rank - 2 else rank - 2
    R, nb = grid[om], grid[bm]
    Rp, Bp = 128 * -(-R // 128), 4 * -(-nb // 4)
    batches = int(np.prod(grid[:-2], dtype=np.int64)) if rank > 2 else 1
    out = np.zeros(batches * Rp * Bp, dtype=np.uint8)
    s = np.asarray(scales, dtype=np.uint8).reshape(grid)
    for flat, val in enumerate(s.ravel()):
        c = np.unravel_index(flat, grid)
        batch = int(np.ravel_multi_index(c[:-2], grid[:-2])) if rank > 2 else 0
        r, b = int(c[om]), int(c[bm])
        at = (batch * Rp * Bp + (r // 128) * (Bp // 4) * 512 + (b // 4) * 512
              + (r % 32) * 16 + ((r // 32) % 4) * 4 + b % 4)
        out[at] = val
    return out.tobytes()


# ---------------------------------------------------------------------------------------
# Quantization.


def quantize(fmt, x, shape, blocked_mode=None, scale_layout="row_major"):
    shape = tuple(int(n) for n in shape)
    xf = np.asarray(x, dtype=np.float32).reshape(-1)
    if xf.size != int(np.prod(shape, dtype=np.int64)):
        raise ValueError("input size does not match shape")
    if scale_layout not in ("row_major", "swizzled_128x4"):
        raise ValueError("unknown scale layout")
    if scale_layout == "swizzled_128x4" and fmt not in ("nvfp4_ts", "nvfp4_ts_recip"):
        raise ValueError("swizzled_128x4 applies to the nvfp4_ts* formats here")
    blocks = block_extents(fmt, shape, blocked_mode)
    grid, ids = _block_ids(shape, blocks)
    nblocks = int(np.prod(grid, dtype=np.int64))
    with np.errstate(all="ignore"):
        if fmt.startswith("fp8_e4m3_"):
            return _fp8(xf, ids, nblocks)
        if fmt in ("nvfp4_ts", "nvfp4_ts_recip"):
            v, s, t = _nvfp4(fmt, xf, ids, nblocks)
            if scale_layout == "swizzled_128x4":
                s = swizzle_128x4(np.frombuffer(s, np.uint8), grid, blocked_mode)
            return v, s, t
        if fmt == "q8_0":
            return _q8_0(xf)
        if fmt == "q4_0":
            return _q4_0(xf)
    raise ValueError("unknown format " + fmt)


def _fp8(xf, ids, nblocks):
    amax = _block_amax(xf, ids, nblocks)
    s = (amax / F32(448)).astype(np.float32)
    s = np.where(amax == 0, F32(1), s).astype(np.float32)
    codes = e4m3((xf / s[ids]).astype(np.float32))
    return codes.astype(np.uint8).tobytes(), s.astype("<f4").tobytes(), None


def _nvfp4(fmt, xf, ids, nblocks):
    amax_t = F32(np.max(np.abs(xf))) if xf.size else F32(0)
    amax_b = _block_amax(xf, ids, nblocks)
    if fmt == "nvfp4_ts":
        g = F32(1) if amax_t == 0 else F32(amax_t / F32(2688))
        six_g = F32(F32(6) * g)
        sb = e4m3((amax_b / six_g).astype(np.float32))
        sbv = e4m3_value(sb).astype(np.float32)
        denom = (sbv * g).astype(np.float32)
        q = (xf / denom[ids]).astype(np.float32)
    else:
        g = F32(1) if amax_t == 0 else F32(F32(2688) / amax_t)
        sb = e4m3(((amax_b * g).astype(np.float32) / F32(6)).astype(np.float32))
        sbv = e4m3_value(sb).astype(np.float32)
        q = ((xf * g).astype(np.float32) / sbv[ids]).astype(np.float32)
    codes = e2m1(q)
    zero_scale = (sb & 0x7F)[ids] == 0
    sign_zero = (np.signbit(xf).astype(np.uint8) << 3).astype(np.uint8)
    codes = np.where(zero_scale, sign_zero, codes).astype(np.uint8)
    return _pack4(codes), sb.astype(np.uint8).tobytes(), np.array([g], "<f4").tobytes()


def _q8_0(xf):
    b = xf.reshape(-1, 32)
    amax = np.max(np.abs(b), axis=1).astype(np.float32)
    d = (amax / F32(127)).astype(np.float32)
    inv = np.where(d != 0, (F32(1) / np.where(d != 0, d, F32(1))).astype(np.float32), F32(0))
    inv = inv.astype(np.float32)
    t = (b * inv[:, None]).astype(np.float32)
    # round half away from zero, exact on float32 values (floor(|t| + 0.5) in float64 is
    # exact: |t| < 2^24 here and the sum is exact in float64)
    q = np.sign(t) * np.floor(np.abs(t).astype(np.float64) + 0.5)
    return q.astype(np.int8).tobytes(), f16(d).astype("<f2").tobytes(), None


def _q4_0(xf):
    b = xf.reshape(-1, 32)
    d = np.zeros(b.shape[0], dtype=np.float32)
    for i, row in enumerate(b):
        amax, v = F32(0), F32(0)  # ggml starts from +0.0 and replaces on strictly greater
        for val in row:
            if amax < abs(val):
                amax, v = F32(abs(val)), F32(val)
        d[i] = F32(v / F32(-8))
    inv = np.where(d != 0, (F32(1) / np.where(d != 0, d, F32(1))).astype(np.float32), F32(0))
    inv = inv.astype(np.float32)
    t = (b * inv[:, None]).astype(np.float32)
    u = (t + F32(8.5)).astype(np.float32)
    q = np.minimum(15, np.trunc(u.astype(np.float64)).astype(np.int64))
    if (q < 0).any():
        raise AssertionError("q4_0 code below 0")
    return _pack4(q.astype(np.uint8)), f16(d).astype("<f2").tobytes(), None


# ---------------------------------------------------------------------------------------
# Self-check: hand-computed expectations.

if __name__ == "__main__":
    def chk(got, want, what):
        assert int(got) == want, "%s: got %#x want %#x" % (what, int(got), want)

    # e4m3: saturation, ties to even, subnormals, signs, NaN.
    chk(e4m3(448.0), 0x7E, "e4m3(448)")
    chk(e4m3(464.0), 0x7E, "e4m3(464) tie 448|480 -> 448")
    chk(e4m3(480.0), 0x7E, "e4m3(480) saturates")
    chk(e4m3(1e30), 0x7E, "e4m3(1e30)")
    chk(e4m3(np.inf), 0x7E, "e4m3(inf)")
    chk(e4m3(-np.inf), 0xFE, "e4m3(-inf)")
    chk(e4m3(-500.0), 0xFE, "e4m3(-500)")
    chk(e4m3(np.nan), 0x7F, "e4m3(nan)")
    chk(e4m3(1.0), 0x38, "e4m3(1)")
    chk(e4m3(1.0625), 0x38, "e4m3(1.0625) tie 1|1.125 -> 1")
    chk(e4m3(1.1875), 0x3A, "e4m3(1.1875) tie 1.125|1.25 -> 1.25")
    chk(e4m3(17.0), 0x58, "e4m3(17) tie 16|18 -> 16")
    chk(e4m3(19.0), 0x5A, "e4m3(19) tie 18|20 -> 20")
    chk(e4m3(240.0), 0x77, "e4m3(240)")
    chk(e4m3(2.0 ** -6), 0x08, "e4m3(2^-6) min normal")
    chk(e4m3(2.0 ** -9), 0x01, "e4m3(2^-9) min subnormal")
    chk(e4m3(2.0 ** -10), 0x00, "e4m3(2^-10) tie 0|2^-9 -> 0")
    chk(e4m3(-(2.0 ** -10)), 0x80, "e4m3(-2^-10) -> -0")
    chk(e4m3(np.nextafter(F32(2.0 ** -10), F32(1))), 0x01, "just above 2^-10")
    chk(e4m3(1.5 * 2.0 ** -9), 0x02, "e4m3(1.5*2^-9) tie 1|2 -> 2")
    chk(e4m3(2.5 * 2.0 ** -9), 0x02, "e4m3(2.5*2^-9) tie 2|3 -> 2")
    chk(e4m3(7.5 * 2.0 ** -9), 0x08, "e4m3(7.5*2^-9) tie sub 7|2^-6 -> 2^-6")
    chk(e4m3(-0.0), 0x80, "e4m3(-0)")
    chk(e4m3(0.0), 0x00, "e4m3(+0)")
    chk(e4m3(-1e-6), 0x80, "e4m3(-1e-6)")
    assert e4m3_value(0x7E) == 448 and e4m3_value(0x01) == 2.0 ** -9
    assert e4m3_value(0xB8) == -1.0
    assert all(e4m3(e4m3_value(np.arange(0x7F, dtype=np.uint8))) == np.arange(0x7F))

    # e2m1: ties to the even code, saturation, signs, NaN.
    for v, c in [(0.25, 0x0), (0.75, 0x2), (1.25, 0x2), (1.75, 0x4), (2.5, 0x4),
                 (3.5, 0x6), (5.0, 0x6), (6.0, 0x7), (7.0, 0x7), (1e9, 0x7),
                 (0.26, 0x1), (4.9, 0x6), (5.1, 0x7), (-0.1, 0x8), (-0.0, 0x8),
                 (-0.75, 0xA), (-100.0, 0xF), (np.nan, 0x0), (0.0, 0x0)]:
        chk(e2m1(v), c, "e2m1(%r)" % v)

    # float16 RNE.
    assert f16(F32(1) + F32(2.0 ** -11)).view(np.uint16) == 0x3C00  # tie -> even
    assert f16(F32(1) + F32(3 * 2.0 ** -11)).view(np.uint16) == 0x3C02

    # q8_0: amax 127 -> d = 1, id = 1; halves round away from zero.
    blk = np.zeros(32, np.float32)
    blk[:8] = [127, 2.5, -2.5, 0.5, -0.5, 1.49, -126.5, -0.0]
    v, s, t = quantize("q8_0", blk, (32,))
    assert list(np.frombuffer(v, np.int8)[:8]) == [127, 3, -3, 1, -1, 1, -127, 0], v
    assert s == bytes([0x00, 0x3C]) and t is None
    v, s, _ = quantize("q8_0", np.zeros(32, np.float32), (32,))
    assert v == bytes(32) and s == bytes(2)

    # q4_0: v = -3 (first on |x| ties) -> d = 0.375, id = 2.6666667f.
    blk = np.zeros(32, np.float32)
    blk[:4] = [-3, 3, 1, -1]
    v, s, _ = quantize("q4_0", blk, (32,))
    q = np.frombuffer(v, np.uint8)
    assert q[0] == (0 | (15 << 4)), hex(q[0])     # -3 -> trunc(0.5)=0; 3 -> 16 -> 15
    assert q[1] == (11 | (5 << 4)), hex(q[1])     # 1 -> 11.1666 -> 11; -1 -> 5.8333 -> 5
    assert all(q[2:] == 0x88)                     # zeros -> 8
    assert s == bytes([0x00, 0x36])               # float16(0.375)
    blk[:2] = [3, -3]                             # positive first: d = -0.375
    v, s, _ = quantize("q4_0", blk, (32,))
    assert np.frombuffer(v, np.uint8)[0] == (0 | (15 << 4)) and s == bytes([0x00, 0xB6])
    z = np.zeros(32, np.float32)
    z[0] = -0.0
    v, s, _ = quantize("q4_0", z, (32,))          # d = +0 / -8 = -0.0 (ggml), codes 8
    assert s == bytes([0x00, 0x80]) and v == bytes([0x88] * 16)

    # nvfp4_ts with amax_tensor 2688: g = 1; block amax 6 -> s_b = 1.0 (0x38).
    x = np.zeros(32, np.float32)
    x[:8] = [6, 0.25, 0.75, -1.25, 1.75, 2.5, -3.5, 5.0]
    x[16] = 2688
    x[17:20] = [-0.0, -1.0, 1.0]
    for fmt in ("nvfp4_ts", "nvfp4_ts_recip"):
        v, s, t = quantize(fmt, x, (32,), 0)
        assert t == np.array([1.0], "<f4").tobytes()
        assert s == bytes([0x38, 0x7E]), s      # 2688/6 = 448
        c = np.frombuffer(v, np.uint8)
        codes = np.stack([c & 15, c >> 4], 1).ravel()
        assert list(codes[:8]) == [7, 0, 2, 0xA, 4, 4, 0xE, 6], codes
        # 448 block: 2688 / 448 = 6; -0.0 -> 0x8; -1/448 -> -0 (0x8); 1/448 -> 0
        assert list(codes[16:21]) == [7, 8, 8, 0, 0], codes[16:21]
    # s_b == 0: sign-only zeros.
    x = np.zeros(32, np.float32)
    x[0] = 2688
    x[16:19] = [1e-4, -1e-4, -0.0]
    v, s, _ = quantize("nvfp4_ts", x, (32,), 0)
    c = np.frombuffer(v, np.uint8)
    assert s[1] == 0 and list(np.stack([c & 15, c >> 4], 1).ravel()[16:20]) == [0, 8, 8, 0]

    # fp8: s = amax / 448.
    x = np.array([448, 1.0625, -(2.0 ** -10), -0.0, 464 / 2, 3 * 2.0 ** -10], np.float32)
    v, s, _ = quantize("fp8_e4m3_tensorwise", x, (6,))
    assert list(v) == [0x7E, 0x38, 0x80, 0x80, 0x76, 0x02], [hex(b) for b in v]
    assert s == np.array([1.0], "<f4").tobytes()
    v, s, _ = quantize("fp8_e4m3_rowwise", np.zeros((2, 3), np.float32), (2, 3))
    assert v == bytes(6) and s == np.array([1, 1], "<f4").tobytes()

    # Swizzle: (r=1, b=0) of a 2x4 grid goes to 16; (r=32,b=5) of 33x8 -> 512+4+1.
    sw = np.frombuffer(swizzle_128x4(np.arange(8, dtype=np.uint8), (2, 4), 1), np.uint8)
    assert sw.size == 512 and list(sw[[0, 1, 2, 3, 16, 17]]) == [0, 1, 2, 3, 4, 5]
    g = np.zeros((33, 8), np.uint8)
    g[32, 5] = 9
    sw = np.frombuffer(swizzle_128x4(g.ravel(), (33, 8), 1), np.uint8)
    assert sw.size == 128 * 8 and sw[512 + 4 + 1] == 9 and sw.sum() == 9
    print("formats_reference self-check: all passed")
