#!/usr/bin/python3
"""Differential check of `strata quantize --scale-layout swizzled_128x4`.

torchao's `to_blocked` (torchao/prototype/mx_formats/utils.py), written here with
torch ops, applied to the row-major scales that `strata quantize` prints for the
same input must give exactly the swizzled scale bytes. Run with a Python that has
PyTorch (not part of CI):

    bazel build //tools:strata
    /usr/bin/python3 tools/peer/to_blocked_check.py [bazel-bin/tools/strata]

Prints one line per case and exits 1 on any mismatch.
"""
import re
import subprocess
import sys

import numpy as np
import torch

STRATA = sys.argv[1] if len(sys.argv) > 1 else "bazel-bin/tools/strata"


def to_blocked(input_matrix):
    """torchao's to_blocked: (rows, cols) scales -> the flat 128x4-tiled order."""
    rows, cols = input_matrix.shape
    n_row_blocks = -(-rows // 128)
    n_col_blocks = -(-cols // 4)
    padded_rows, padded_cols = n_row_blocks * 128, n_col_blocks * 4
    padded = input_matrix
    if (rows, cols) != (padded_rows, padded_cols):
        padded = torch.zeros((padded_rows, padded_cols), dtype=input_matrix.dtype)
        padded[:rows, :cols] = input_matrix
    blocks = padded.view(n_row_blocks, 128, n_col_blocks, 4).permute(0, 2, 1, 3)
    rearranged = blocks.reshape(-1, 4, 32, 4).transpose(1, 2).reshape(-1, 32, 16)
    return rearranged.flatten()


def unescape(text):
    """The bytes of a protobuf text-format string literal (C escapes)."""
    out = bytearray()
    i = 0
    simple = {"n": 10, "r": 13, "t": 9, '"': 34, "'": 39, "\\": 92, "a": 7,
              "b": 8, "f": 12, "v": 11, "?": 63}
    while i < len(text):
        c = text[i]
        if c != "\\":
            out += c.encode("latin-1")
            i += 1
            continue
        n = text[i + 1]
        if n in simple:
            out.append(simple[n])
            i += 2
        elif n in "xX":
            m = re.match(r"[0-9a-fA-F]{1,2}", text[i + 2:])
            out.append(int(m.group(0), 16))
            i += 2 + len(m.group(0))
        else:
            m = re.match(r"[0-7]{1,3}", text[i + 1:])
            out.append(int(m.group(0), 8))
            i += 1 + len(m.group(0))
    return bytes(out)


def quantize(fmt, shape, mode, layout, values):
    shape_arg = "(" + ",".join(str(e) for e in shape) + ")"
    result = subprocess.run(
        [STRATA, "quantize", fmt, shape_arg, str(mode), "--scale-layout", layout,
         "--input", "-"],
        input=values.astype("<f4").tobytes(), capture_output=True, check=True)
    text = result.stdout.decode("latin-1")
    carriers = re.findall(r'carriers \{(.*?)\n\}', text, re.S)
    data = []
    for c in carriers:
        m = re.search(r'data: "((?:[^"\\]|\\.)*)"', c)
        data.append(unescape(m.group(1)) if m else b"")
        size = int(re.search(r"size: (\d+)", c).group(1))
        if not m:
            data[-1] = bytes(size)
    return data[0], data[1]


def check(fmt, shape, mode, seed):
    block = 16 if fmt == "nvfp4" else 32
    rng = np.random.default_rng(seed)
    values = (rng.standard_normal(int(np.prod(shape))) *
              np.exp2(rng.integers(-8, 8, int(np.prod(shape))))).astype(np.float32)
    v_row, s_row = quantize(fmt, shape, mode, "row_major", values)
    v_swz, s_swz = quantize(fmt, shape, mode, "swizzled_128x4", values)
    rank = len(shape)
    scale_shape = list(shape)
    scale_shape[mode] //= block
    scales = torch.frombuffer(bytearray(s_row), dtype=torch.uint8).view(*scale_shape)
    # (batches, R, nb) with the block mode last: to_blocked's (rows, cols).
    if mode == rank - 2:
        scales = scales.transpose(-1, -2)
    scales = scales.reshape(-1, scales.shape[-2], scales.shape[-1])
    expected = torch.cat([to_blocked(m) for m in scales]) if scales.shape[0] else \
        torch.zeros(0, dtype=torch.uint8)
    got = torch.frombuffer(bytearray(s_swz), dtype=torch.uint8) if s_swz else \
        torch.zeros(0, dtype=torch.uint8)
    ok = v_row == v_swz and torch.equal(expected, got)
    print(f"{fmt} shape={tuple(shape)} blocked={mode}: "
          f"{'OK' if ok else 'MISMATCH'} ({got.numel()} scale bytes)")
    return ok


def main():
    cases = [
        ("mxfp8_e4m3", (256, 256), 1), ("mxfp8_e4m3", (200, 160), 1),
        ("mxfp8_e4m3", (128, 32), 1), ("mxfp8_e4m3", (1, 32), 1),
        ("mxfp8_e4m3", (3, 130, 64), 2), ("mxfp8_e4m3", (160, 200), 0),
        ("mxfp8_e4m3", (2, 2, 96, 130), 2), ("mxfp4", (300, 288), 1),
        ("mxfp4", (4, 64, 96), 1), ("nvfp4", (128, 64), 1),
        ("nvfp4", (257, 80), 1), ("nvfp4", (2, 144, 48), 2),
    ]
    ok = all([check(fmt, shape, mode, i) for i, (fmt, shape, mode) in
              enumerate(cases)])
    print("all OK" if ok else "MISMATCHES")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
