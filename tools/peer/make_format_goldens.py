#!/usr/bin/python3
"""Writes the golden quantization cases of tests/golden/formats/ from formats_reference.py.

    /usr/bin/python3 tools/peer/make_format_goldens.py [OUT_DIR]

For each case NAME: NAME.input (float32 LE, row-major over SHAPE), NAME.values,
NAME.scales and, for nvfp4_ts*, NAME.tensor_scale; the manifest cases.txt has one line
`NAME FORMAT SHAPE BLOCKED_MODE SCALE_LAYOUT` per case (BLOCKED_MODE an integer or `-`).
Deterministic: fixed seed, no dependence on time or platform.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from formats_reference import quantize  # noqa: E402

F32 = np.float32
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "golden", "formats")

rng = np.random.default_rng(20240617)


def rnd(shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def mixed_rows(shape, scales=(1e-3, 1.0, 1e4)):
    """Random normal data whose magnitude changes with the index of the first mode."""
    x = rnd(shape)
    for i in range(shape[0]):
        x[i] *= F32(scales[i % len(scales)])
    return x


def fill(x, values):
    """Write `values` at the start of the flat array x (in place); returns x."""
    flat = x.reshape(-1)
    v = np.asarray(values, dtype=np.float32)
    flat[: v.size] = v
    return x


# Values that sit exactly on e4m3 rounding midpoints when the scale is 1 (amax 448), plus
# +-0.0, subnormal results and tiny negatives that underflow to -0.
E4M3_TIES = [448.0, 1.0625, -1.0625, 1.1875, -1.1875, 17.0, 19.0, -19.0, 232.0, -232.0,
             2.0 ** -10, -(2.0 ** -10), 1.5 * 2.0 ** -9, -1.5 * 2.0 ** -9,
             2.5 * 2.0 ** -9, 7.5 * 2.0 ** -9, 2.0 ** -9, 3 * 2.0 ** -9, -0.0, 0.0,
             -1e-6, 1e-6, -3e-4, 0.015625, 0.0146484375, 300.0, 304.0, -448.0, 416.0,
             432.0, 440.0, 447.0]
# e2m1 midpoints (scale 1): ties to the even code.
E2M1_TIES = [6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -0.75, -1.25, -1.75,
             -2.5, -3.5, -5.0, -0.0]


def fp8_saturating_amax():
    """A float32 amax for which amax / (amax / 448) exceeds 448 in float32."""
    for k in range(1, 100000):
        a = F32(1.0 + k * 0.00731)
        if F32(a / F32(a / F32(448))) > F32(448):
            return a
    raise RuntimeError("none found")


def nvfp4_adversarial(rows):
    """(rows, 128) blocked on mode 1, 8 blocks per row; amax_tensor 2688 so g = g' = 1."""
    x = np.zeros((rows, 128), np.float32)
    u = 2.0 ** -8
    blocks = [
        E2M1_TIES,                                               # s_b = 1.0, e2m1 ties
        [6.375, -6.375, 6.2, -0.25, 0.8, 3.2, -0.0, 1.0],        # s_b tie 1.0625 -> 1.0
        [6 * u, 0.25 * u, 0.75 * u, -1.25 * u, 2.5 * u, -5 * u, 3.5 * u, u],  # subnormal s_b
        [9 * 2.0 ** -9, -4.5 * 2.0 ** -8, 2.0 ** -9, -(2.0 ** -12)],  # s_b tie 1.5*2^-9 -> 2^-8
        [6 * 2.0 ** -10, -(2.0 ** -10), -0.0, 1e-5, -1e-5],    # s_b tie 2^-10 -> 0: sign zeros
        [0.0, -0.0, 0.0, -0.0],                                 # all-zero block
        [2688.0, -1.0, 1.0, -0.0, 224.0, 112.0, -112.0, 336.0, 560.0, -2000.0],  # s_b 448
        list(rnd(16, 100.0)),                                   # ordinary
    ]
    for r in range(rows):
        for b, vals in enumerate(blocks):
            v = np.asarray(vals, np.float32)
            if r % 2 and b != 6:
                v = -v  # odd rows: the sign-mirrored block
            x[r, 16 * b: 16 * b + v.size] = v
    return x


CASES = []


def case(name, fmt, x, blocked_mode=None, layout="row_major"):
    CASES.append((name, fmt, np.asarray(x, np.float32), blocked_mode, layout))


def build():
    sat = fp8_saturating_amax()

    # fp8_e4m3_tensorwise
    case("tw_normal_4x64", "fp8_e4m3_tensorwise", rnd((4, 64)))
    case("tw_small_3x5x7", "fp8_e4m3_tensorwise", rnd((3, 5, 7), 1e-3))
    case("tw_big_100", "fp8_e4m3_tensorwise", rnd((100,), 1e4))
    case("tw_ties_2x32", "fp8_e4m3_tensorwise", fill(np.zeros((2, 32), np.float32), E4M3_TIES))
    case("tw_zero_2x8", "fp8_e4m3_tensorwise",
         np.array([0.0, -0.0] * 8, np.float32).reshape(2, 8))
    x = np.clip(rnd((3, 16), 0.3), -0.9, 0.9)
    x.reshape(-1)[5] = sat
    x.reshape(-1)[6] = -sat
    case("tw_saturate_3x16", "fp8_e4m3_tensorwise", x)

    # fp8_e4m3_rowwise
    case("rw_mixed_9x40", "fp8_e4m3_rowwise", mixed_rows((9, 40)))
    case("rw_rank3_2x3x50", "fp8_e4m3_rowwise", rnd((2, 3, 50), 10.0))
    case("rw_rank1_64", "fp8_e4m3_rowwise", rnd((64,), 1e-3))
    x = np.zeros((5, 32), np.float32)
    fill(x[0], E4M3_TIES)                                          # amax 448: s = 1
    x[1] = np.array([0.0, -0.0] * 16, np.float32)                  # amax 0: s = 1
    x[2] = np.clip(rnd(32, 0.3), -0.9, 0.9)
    x[2, 3], x[2, 9] = sat, -sat                                   # x/s rounds above 448
    fill(x[3], [1e4, -1e-3, 1e-3, -0.02, -0.0, 0.01])              # tiny -> +-0
    fill(x[4], [3.0 * v for v in E4M3_TIES])                       # amax 1344: s = 3 exactly
    case("rw_adversarial_5x32", "fp8_e4m3_rowwise", x)

    # fp8_e4m3_block1x128 (ragged where the extent is not a multiple of 128)
    case("b1_mode1_4x300", "fp8_e4m3_block1x128", mixed_rows((4, 300)), 1)
    x = rnd((300, 3))
    x[128:256] *= F32(1e4)
    x[256:] *= F32(1e-3)
    case("b1_mode0_300x3", "fp8_e4m3_block1x128", x, 0)
    case("b1_modeneg1_2x3x130", "fp8_e4m3_block1x128", rnd((2, 3, 130), 3.0), -1)
    case("b1_mode1_rank3_2x200x3", "fp8_e4m3_block1x128", rnd((2, 200, 3), 1.0), 1)
    x = np.zeros((2, 256), np.float32)
    fill(x[0, :128], E4M3_TIES)
    x[0, 128:] = np.array([0.0, -0.0] * 64, np.float32)            # all-zero block
    fill(x[1, :128], [-1e4, 1e-3, -1e-3, -0.0, 0.5, -7.0])         # underflow to +-0
    fill(x[1, 128:], [3.0 * v for v in E4M3_TIES])
    case("b1_adversarial_2x256", "fp8_e4m3_block1x128", x, 1)

    # fp8_e4m3_block128x128
    case("b128_normal_128x256", "fp8_e4m3_block128x128", rnd((128, 256)))
    x = rnd((130, 260))
    mags = [1e-3, 1.0, 1e4]
    for i in range(2):
        for j in range(3):
            x[128 * i:128 * (i + 1), 128 * j:128 * (j + 1)] *= F32(mags[(i + 2 * j) % 3])
    x[:128, :128] = np.resize(np.array(E4M3_TIES, np.float32), (128, 128))
    x[128:, 256:] = np.array([[0.0, -0.0, -0.0, 0.0], [-0.0, 0.0, 0.0, -0.0]], np.float32)
    case("b128_ragged_130x260", "fp8_e4m3_block128x128", x)
    case("b128_rank3_2x130x129", "fp8_e4m3_block128x128", rnd((2, 130, 129), 1e-3))

    # nvfp4_ts / nvfp4_ts_recip
    for fmt, tag in (("nvfp4_ts", "nv"), ("nvfp4_ts_recip", "nvr")):
        case(tag + "_normal_4x64", fmt, rnd((4, 64)), 1)
        case(tag + "_mode0_48x5", fmt, rnd((48, 5), 1e-3), 0)
        case(tag + "_big_rank1_64", fmt, rnd((64,), 1e4), 0)
        case(tag + "_mixed_6x32", fmt, mixed_rows((6, 32)), -1)     # s_b = 0 blocks
        case(tag + "_adversarial_2x128", fmt, nvfp4_adversarial(2), 1)
        case(tag + "_zero_2x32", fmt, np.array([0.0, -0.0] * 32, np.float32).reshape(2, 32), 1)
        case(tag + "_sw_130x64", fmt, mixed_rows((130, 64), (1.0, 1e-3, 30.0)), 1,
             "swizzled_128x4")
        case(tag + "_sw_mode0_48x130", fmt, rnd((48, 130)), 0, "swizzled_128x4")
        case(tag + "_sw_batch_2x2x33x48", fmt, rnd((2, 2, 33, 48), 2.0), 3, "swizzled_128x4")
        case(tag + "_sw_adversarial_2x128", fmt, nvfp4_adversarial(2), 1, "swizzled_128x4")

    # q8_0
    case("q8_normal_4x64", "q8_0", rnd((4, 64)))
    case("q8_big_3x96", "q8_0", rnd((3, 96), 1e4))
    case("q8_small_rank1_64", "q8_0", rnd((64,), 1e-3))
    case("q8_rank3_2x2x64", "q8_0", rnd((2, 2, 64), 5.0))
    x = np.zeros((4, 32), np.float32)
    fill(x[0], [127.0, 2.5, -2.5, 0.5, -0.5, 1.5, -1.5, 126.5, -126.5, 0.49999997,
                -0.49999997, 64.5, -64.5, -0.0, 100.5, -3.5])       # d = 1: halves
    fill(x[1], [-254.0, 5.0, -5.0, 1.0, -1.0, 3.0, 253.0, -0.0])    # d = 2: halves
    x[2] = np.array([-0.0, 0.0] * 16, np.float32)                   # all zero
    fill(x[3], rnd(32, 1e-3))                                       # float16-subnormal d
    case("q8_adversarial_4x32", "q8_0", x)

    # q4_0
    case("q4_normal_4x64", "q4_0", rnd((4, 64)))
    case("q4_big_3x96", "q4_0", rnd((3, 96), 1e4))
    case("q4_small_rank1_64", "q4_0", rnd((64,), 1e-3))
    x = np.zeros((6, 32), np.float32)
    fill(x[0], [1.0, -3.0, 2.0, 3.0, -1.5, 0.7])      # |x| tie, negative first: d = 0.375
    fill(x[1], [1.0, 3.0, 2.0, -3.0, -1.5, 0.7])      # |x| tie, positive first: d = -0.375
    x[2] = np.array([-0.0, 0.0] * 16, np.float32)     # all zero, -0.0 first: d = -0.0
    fill(x[3], [-8.0, 0.5, -0.5, 7.5, 8.0, 7.49, -7.5, 1.5, -1.5, -0.0, 0.0, 4.5])  # d = 1
    fill(x[4], [8.0, 0.5, -0.5, 7.5, -8.0, -7.49, -7.5, 1.5, -1.5, -0.0])          # d = -1
    x[5] = rnd(32, 1e-3)
    case("q4_adversarial_6x32", "q4_0", x)

    # Long rows of the one-row bands: a block of 2100 values, 9 blocks of 128 and a ragged
    # one, 66 blocks of 16 (the kernels' four-vector steps and their tails several times
    # per block or row). Last, so that the random draws of the cases above stay as they
    # were.
    case("rw_long_2x2100", "fp8_e4m3_rowwise", mixed_rows((2, 2100)))
    case("b1_long_2x1200", "fp8_e4m3_block1x128", mixed_rows((2, 1200)), 1)
    case("nv_long_2x1056", "nvfp4_ts", mixed_rows((2, 1056)), 1)
    case("nvr_long_2x1056", "nvfp4_ts_recip", mixed_rows((2, 1056)), 1)


def main():
    build()
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    lines = []
    names = set()
    for name, fmt, x, bm, layout in CASES:
        assert name not in names and np.isfinite(x).all()
        names.add(name)
        values, scales, tscale = quantize(fmt, x, x.shape, bm, layout)
        with open(os.path.join(OUT, name + ".input"), "wb") as f:
            f.write(x.astype("<f4").tobytes())
        with open(os.path.join(OUT, name + ".values"), "wb") as f:
            f.write(values)
        with open(os.path.join(OUT, name + ".scales"), "wb") as f:
            f.write(scales)
        if tscale is not None:
            with open(os.path.join(OUT, name + ".tensor_scale"), "wb") as f:
                f.write(tscale)
        shape = ",".join(str(n) for n in x.shape)
        lines.append("%s %s %s %s %s" % (name, fmt, shape, "-" if bm is None else bm, layout))
    with open(os.path.join(OUT, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print("%d cases, %d bytes in %s" % (len(CASES), total, OUT))
    assert total < 800 * 1024


if __name__ == "__main__":
    main()
