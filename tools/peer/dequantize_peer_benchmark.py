"""Dequantize against numpy peers written from the formats' definitions
(values.md section 4), in one run: gguf-py's quants.py style for q8_0 and q4_0
(over the GGUF array-of-structs bytes of the same values) and DeepSeek-V3's
weight_dequant rendered in numpy for fp8_e4m3_block128x128 -> bfloat16, each
on a (4096, 4096) weight; the outputs are checked equal before timing. Prints
the processor, memcpy's bandwidth in numpy, and the ratios (peer time over
Strata's; > 1: Strata is faster).

    STRATA_BAZEL_CONFIG=opt tools/run.sh python tools/peer/dequantize_peer_benchmark.py
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))
import dequantize_reference as ref  # noqa: E402
import strata  # noqa: E402

N = K = 4096


def best_of(fn, repeats=5):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def processor():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def main():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((N, K)) * 0.05).astype(np.float32)
    src = strata.from_dlpack(x)
    a = np.empty(64 << 20, np.uint8)
    b = np.empty_like(a)
    a.fill(1)
    copy = best_of(lambda: np.copyto(b, a))
    print("processor: %s" % processor())
    print("numpy memcpy of 64 MiB: %.2f ms (%.1f GB/s)" % (copy * 1e3, 64 * 2**20 / copy / 1e9))
    rows = []
    for fmt, peer in (("q8_0", ref.peer_gguf_q8_0), ("q4_0", ref.peer_gguf_q4_0)):
        t = strata.quantize(src, fmt)
        codes, scales = t.levels
        raw = ref.planar_to_gguf_blocks(fmt, codes.carrier.tobytes(),
                                        scales.carrier.tobytes(), (N, K))
        want = peer(raw, (N, K))
        got = np.from_dlpack(strata.dequantize(t, "float32"))
        assert np.array_equal(got, want), fmt
        out = strata.dequantize(t, "float32")
        rows.append(("%s -> float32" % fmt, best_of(lambda: peer(raw, (N, K))),
                     best_of(lambda: strata.dequantize(t, out=out))))
    t = strata.quantize(src, "fp8_e4m3_block128x128")
    codes, scales = t.levels
    c = np.frombuffer(codes.carrier.tobytes(), np.uint8)
    s = np.frombuffer(scales.carrier.tobytes(), np.float32)
    want = ref.peer_deepseek_weight_dequant(c, s, N, K)
    got = np.from_dlpack(strata.dequantize(t, "bfloat16").cast(strata.dtype.float32))
    assert np.array_equal(got.view(np.uint32) >> 16, want.astype(np.uint32))
    out = strata.dequantize(t, "bfloat16")
    rows.append(("fp8_e4m3_block128x128 -> bfloat16 (DeepSeek weight_dequant)",
                 best_of(lambda: ref.peer_deepseek_weight_dequant(c, s, N, K)),
                 best_of(lambda: strata.dequantize(t, out=out))))
    print("| case | numpy peer | Strata | peer / Strata |")
    print("|---|---|---|---|")
    for name, peer_s, strata_s in rows:
        print("| %s | %.1f ms | %.1f ms | %.1f |" % (name, peer_s * 1e3, strata_s * 1e3,
                                                  peer_s / strata_s))


if __name__ == "__main__":
    main()
