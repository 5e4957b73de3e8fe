#!/usr/bin/env python3
"""Merges Google Benchmark JSON files and writes a Markdown table of medians with each
benchmark's ratio to its in-run reference:
  * throughput benchmarks (bytes_per_second) against the Memcpy benchmark of the same
    binary: ratio = rate / memcpy rate;
  * peer pairs named .../strata and .../torch: ratio = torch time / strata time
    (how many times faster Strata is).
Usage: bench_report.py RAW_DIR OUT_JSON OUT_MD"""
import glob
import json
import os
import sys


def main(raw_dir, out_json, out_md):
    merged = {"context": None, "benchmarks": []}
    rows = []
    for path in sorted(glob.glob(os.path.join(raw_dir, "*.json"))):
        with open(path) as f:
            doc = json.load(f)
        merged["context"] = merged["context"] or doc.get("context")
        target = os.path.basename(path)[:-5]
        medians = {}
        for b in doc["benchmarks"]:
            b["target"] = target
            merged["benchmarks"].append(b)
            if b.get("aggregate_name") == "median":
                medians[b["run_name"]] = b
        memcpy = next((m for n, m in medians.items() if "Memcpy" in n), None)
        for name, m in medians.items():
            ratio = ""
            if "bytes_per_second" in m and memcpy and m is not memcpy:
                ratio = "%.2f x memcpy" % (m["bytes_per_second"] / memcpy["bytes_per_second"])
            # BENCHMARK_CAPTURE names keep the spaces of "rank1 / strata".
            if name.replace(" ", "").endswith("/strata"):
                torch = medians.get(name[: -len("strata")] + "torch")
                if torch:
                    ratio = "%.2f (libtorch time / Strata time)" % (torch["real_time"] / m["real_time"])
            rate = ""
            if "bytes_per_second" in m:
                rate = "%.2f GB/s" % (m["bytes_per_second"] / 1e9)
            elif "items_per_second" in m:
                rate = "%.1f M items/s" % (m["items_per_second"] / 1e6)
            rows.append((target, name, "%.4g" % m["real_time"], m["time_unit"], rate, ratio))
    with open(out_json, "w") as f:
        json.dump(merged, f, indent=1)
    with open(out_md, "w") as f:
        f.write("| target | benchmark | median | unit | rate | ratio to in-run reference |\n")
        f.write("|---|---|---|---|---|---|\n")
        for r in rows:
            f.write("| %s |\n" % " | ".join(r))


if __name__ == "__main__":
    main(*sys.argv[1:])
