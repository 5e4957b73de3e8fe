#!/usr/bin/python3
"""Writes tests/golden/dequantize/: random level bytes of every block-scaled format and
the values the independent reference (dequantize_reference.py) reads from them.

Each case is a line of cases.txt, `NAME FORMAT SHAPE BLOCKED_MODE SCALE_LAYOUT`, and the
files NAME.codes, NAME.scales (and NAME.tensor_scale for nvfp4_ts*), each level's carrier
bytes exactly as Strata's QuantizeBlockScaled lays them out (codes row-major, scales
row-major over the block grid or in the 128x4 tiles), and NAME.f32, NAME.bf16, NAME.f16:
the values, row-major, little-endian. The bytes are random over the whole code space, so
NaN codes, NaN scales (e8m0 255, e4m3 0x7F), zero and subnormal scales, and products that
overflow bfloat16/float16 all occur. tests/dequantize_goldens_test.cc lays the bytes into
the levels of a quantized Tensor of the same shape and compares Dequantize bit for bit.

    /usr/bin/python3 tools/peer/make_dequantize_goldens.py [OUT_DIR]
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dequantize_reference as ref  # noqa: E402

# NAME FORMAT SHAPE BLOCKED_MODE SCALE_LAYOUT
CASES = [
    ("mxfp8_4x64", "mxfp8_e4m3", (4, 64), 1, "row_major"),
    ("mxfp8_mode0_64x3", "mxfp8_e4m3", (64, 3), 0, "row_major"),
    ("mxfp8_sw_130x64", "mxfp8_e4m3", (130, 64), 1, "swizzled_128x4"),
    ("mxfp8_sw_batch_2x33x96", "mxfp8_e4m3", (2, 33, 96), 2, "swizzled_128x4"),
    ("mxfp4_4x64", "mxfp4", (4, 64), 1, "row_major"),
    ("mxfp4_sw_200x64", "mxfp4", (200, 64), 1, "swizzled_128x4"),
    ("nvfp4_6x32", "nvfp4", (6, 32), 1, "row_major"),
    ("nvfp4_sw_128x64", "nvfp4", (128, 64), 1, "swizzled_128x4"),
    ("nvts_4x64", "nvfp4_ts", (4, 64), 1, "row_major"),
    ("nvts_sw_130x64", "nvfp4_ts", (130, 64), 1, "swizzled_128x4"),
    ("nvtsr_4x64", "nvfp4_ts_recip", (4, 64), 1, "row_major"),
    ("nvtsr_sw_2x2x33x48", "nvfp4_ts_recip", (2, 2, 33, 48), 3, "swizzled_128x4"),
    ("tw_3x5x7", "fp8_e4m3_tensorwise", (3, 5, 7), None, "row_major"),
    ("rw_9x40", "fp8_e4m3_rowwise", (9, 40), None, "row_major"),
    ("b1_4x300", "fp8_e4m3_block1x128", (4, 300), 1, "row_major"),
    ("b1_mode0_300x3", "fp8_e4m3_block1x128", (300, 3), 0, "row_major"),
    ("b128_130x260", "fp8_e4m3_block128x128", (130, 260), None, "row_major"),
    ("b128_576x256", "fp8_e4m3_block128x128", (576, 256), None, "row_major"),
    ("b128_2x130x129", "fp8_e4m3_block128x128", (2, 130, 129), None, "row_major"),
    ("ue8m0_130x260", "fp8_e4m3_block128x128_ue8m0", (130, 260), None, "row_major"),
    ("ue8m0_2x64x300", "fp8_e4m3_block128x128_ue8m0", (2, 64, 300), None, "row_major"),
    ("q8_0_4x64", "q8_0", (4, 64), None, "row_major"),
    ("q8_0_3x2x96", "q8_0", (3, 2, 96), None, "row_major"),
    ("q4_0_4x64", "q4_0", (4, 64), None, "row_major"),
    ("q4_0_5x160", "q4_0", (5, 160), None, "row_major"),
]

_FLOAT32_SCALES = np.array(
    [1.0, -1.0, 0.5, 3.0e-3, 448.0, 1e-40, -1e-45, 0.0, -0.0, np.inf, -np.inf, np.nan,
     3.0e38, 2.0 ** -126, 6.1e-5, 65504.0, 1e30], dtype=np.float32)


def _code_bytes(fmt, count, rng):
    bits = 4 if fmt in ("mxfp4", "nvfp4", "nvfp4_ts", "nvfp4_ts_recip", "q4_0") else 8
    n = (count * bits + 7) // 8
    return rng.integers(0, 256, n, dtype=np.uint8).tobytes()


def _scale_bytes(fmt, count, rng):
    if fmt.endswith("_ue8m0"):
        return rng.integers(0, 256, count, dtype=np.uint8).tobytes()  # e8m0
    if fmt.startswith("fp8_e4m3"):
        # Mostly ordinary scales, with the special ones mixed in.
        pick = rng.integers(0, len(_FLOAT32_SCALES), count)
        ordinary = (rng.standard_normal(count) * 0.01).astype(np.float32)
        s = np.where(rng.random(count) < 0.5, _FLOAT32_SCALES[pick], ordinary)
        return s.astype("<f4").tobytes()
    if fmt in ("q8_0", "q4_0"):
        return rng.integers(0, 1 << 16, count, dtype=np.uint16).astype("<u2").tobytes()
    return rng.integers(0, 256, count, dtype=np.uint8).tobytes()  # e8m0 / e4m3


def _scale_count(fmt, shape, mode, layout):
    blocks = ref.block_extents(fmt, shape, mode)
    grid = ref.block_grid(shape, blocks)
    if layout == "row_major":
        return int(np.prod(grid)) if len(grid) else 1
    m = mode % len(shape)
    other = len(shape) - 2 if m == len(shape) - 1 else len(shape) - 1
    rows, nb = grid[other], grid[m]
    batches = int(np.prod(grid[:-2])) if len(grid) > 2 else 1
    return batches * (128 * -(-rows // 128)) * (4 * -(-nb // 4))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "tests", "golden", "dequantize")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261203)
    lines = ["# NAME FORMAT SHAPE BLOCKED_MODE SCALE_LAYOUT (make_dequantize_goldens.py)"]
    for name, fmt, shape, mode, layout in CASES:
        count = int(np.prod(shape))
        codes = _code_bytes(fmt, count, rng)
        scales = _scale_bytes(fmt, _scale_count(fmt, shape, mode, layout), rng)
        tensor_scale = None
        if fmt.startswith("nvfp4_ts"):
            tensor_scale = np.array([rng.choice([0.37, 1e-3, 2688.0, 1e-42])],
                                    dtype="<f4").tobytes()
        files = {"codes": codes, "scales": scales}
        if tensor_scale is not None:
            files["tensor_scale"] = tensor_scale
        for to, ext in (("float32", "f32"), ("bfloat16", "bf16"), ("float16", "f16")):
            v = ref.dequantize(fmt, codes, scales, shape, blocked_mode=mode,
                               scale_layout=layout, tensor_scale_bytes=tensor_scale, to=to)
            dtype = {"f32": "<f4", "bf16": "<u2", "f16": "<f2"}[ext]
            files[ext] = np.ascontiguousarray(v).astype(dtype).tobytes()
        for ext, data in files.items():
            with open(os.path.join(out, "%s.%s" % (name, ext)), "wb") as f:
                f.write(data)
        lines.append("%s %s %s %s %s" % (name, fmt, ",".join(map(str, shape)),
                                        "-" if mode is None else mode, layout))
    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    # DeepGEMM's UE8M0 quantization (values.md section 2): float32 inputs and
    # the reference's codes and e8m0 scales, for QuantizeBlockScaled.
    qlines = ["# NAME SHAPE (make_dequantize_goldens.py): NAME.input float32, "
              "NAME.codes, NAME.scales from quantize_block128x128_ue8m0"]
    for name, shape, kind in (("ue8m0q_normal_130x260", (130, 260), "normal"),
                              ("ue8m0q_tiny_200x129", (200, 129), "tiny"),
                              ("ue8m0q_mixed_2x129x130", (2, 129, 130), "mixed")):
        x = rng.standard_normal(shape).astype(np.float32)
        if kind == "tiny":  # amax below 1e-4 in some blocks, zeros in others.
            x *= np.float32(1e-6)
            x[:128, :128] = 0
        if kind == "mixed":
            x *= np.float32(2.0) ** rng.integers(-20, 20, shape).astype(np.float32)
            x.reshape(-1)[::97] = np.float32(-0.0)
        codes, scales = ref.quantize_block128x128_ue8m0(x, shape)
        for ext, data in (("input", x.astype("<f4").tobytes()), ("codes", codes),
                          ("scales", scales)):
            with open(os.path.join(out, "%s.%s" % (name, ext)), "wb") as f:
                f.write(bytes(data))
        qlines.append("%s %s" % (name, ",".join(map(str, shape))))
    with open(os.path.join(out, "ue8m0_cases.txt"), "w") as f:
        f.write("\n".join(qlines) + "\n")
    print("make_dequantize_goldens: %d cases in %s" % (len(CASES), out))


if __name__ == "__main__":
    main()
