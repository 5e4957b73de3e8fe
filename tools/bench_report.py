#!/usr/bin/env python3
"""Benchmark reports that tell the machine apart.

Merge (tools/bench.sh calls it):
    bench_report.py RAW_DIR OUT_JSON OUT_MD [SUMMARY_JSON]
  merges the Google Benchmark JSON files of RAW_DIR into OUT_JSON and writes a
  Markdown table of medians with each benchmark's ratio to its in-run
  reference:
    * throughput benchmarks (bytes_per_second) against the Memcpy benchmark of
      the same binary: ratio = rate / memcpy rate, printed beside memcpy's own
      bandwidth and the SIMD target the binary's kernels dispatched to (a
      benchmark named ...InCache... against the binary's InCache memcpy: its
      arithmetic alone, the ratio a machine with faster memory would show);
    * peer pairs named .../strata and .../torch: ratio = torch time / Strata
      time (how many times faster Strata is).
  The table starts with the processor. SUMMARY_JSON (default: summary.json
  beside OUT_JSON) holds the machine and one entry per benchmark, for a later
  run to be compared against.

Compare:
    bench_report.py A B
  A and B are summary files (or the directories holding summary.json) of two
  runs; prints both machines and, per benchmark in both, the ratios and the
  change (B's ratio / A's ratio).
"""
import glob
import json
import os
import sys


def machine():
    """The processor, as /proc/cpuinfo names it, and its vector extensions."""
    info = {"processor": "unknown", "cores": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return info
    first = text.split("\n\n")[0]
    fields = {}
    for line in first.splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            fields[key.strip()] = value.strip()
    info["processor"] = "%s (family %s model %s)" % (
        fields.get("model name", "unknown"), fields.get("cpu family", "?"),
        fields.get("model", "?"))
    flags = set(fields.get("flags", "").split())
    info["simd"] = " ".join(
        f for f in ["sse4_2", "avx2", "fma", "avx512f", "avx512bw", "avx512_bf16",
                    "avx512_fp16", "amx_tile"] if f in flags) or "none named"
    return info


def merge(raw_dir, out_json, out_md, summary_json=None):
    merged = {"context": None, "benchmarks": []}
    rows = []
    summary = {"machine": machine(), "benchmarks": {}}
    for path in sorted(glob.glob(os.path.join(raw_dir, "*.json"))):
        with open(path) as f:
            doc = json.load(f)
        context = doc.get("context", {})
        merged["context"] = merged["context"] or context
        target = os.path.basename(path)[:-5]
        simd = context.get("simd_target") or context.get("transpose_path") or ""
        medians = {}
        for b in doc["benchmarks"]:
            b["target"] = target
            merged["benchmarks"].append(b)
            if b.get("aggregate_name") == "median" or (
                    b.get("run_type") == "iteration" and b.get("repetitions", 1) == 1):
                medians.setdefault(b["run_name"], b)
        # A benchmark named ...InCache... is measured against the memcpy of
        # the same name part (BM_MemcpyInCache), every other against the
        # binary's first other memcpy.
        memcpys = [(n, m) for n, m in medians.items() if "Memcpy" in n]
        for name, m in medians.items():
            in_cache = "InCache" in name
            memcpy = next((c for n, c in memcpys if ("InCache" in n) == in_cache),
                          None)
            entry = {"real_time": m["real_time"], "time_unit": m["time_unit"],
                     "simd_target": simd}
            ratio = ""
            if ("bytes_per_second" in m and memcpy and
                    not any(m is c for _, c in memcpys)):
                value = m["bytes_per_second"] / memcpy["bytes_per_second"]
                ratio = "%.2f x memcpy (%.1f GB/s)" % (
                    value, memcpy["bytes_per_second"] / 1e9)
                entry.update(ratio=value, ratio_to="memcpy",
                             memcpy_gb_per_s=memcpy["bytes_per_second"] / 1e9)
            # BENCHMARK_CAPTURE names keep the spaces of "rank1 / strata".
            if name.replace(" ", "").endswith("/strata"):
                torch = medians.get(name[: -len("strata")] + "torch")
                if torch:
                    value = torch["real_time"] / m["real_time"]
                    ratio = "%.2f (libtorch time / Strata time)" % value
                    entry.update(ratio=value, ratio_to="libtorch")
            rate = ""
            if "bytes_per_second" in m:
                rate = "%.2f GB/s" % (m["bytes_per_second"] / 1e9)
                entry["gb_per_s"] = m["bytes_per_second"] / 1e9
            elif "items_per_second" in m:
                rate = "%.1f M items/s" % (m["items_per_second"] / 1e6)
            summary["benchmarks"]["%s:%s" % (target, name)] = entry
            rows.append((target, name, "%.4g" % m["real_time"], m["time_unit"],
                         rate, ratio, simd))
    with open(out_json, "w") as f:
        json.dump(merged, f, indent=1)
    summary_json = summary_json or os.path.join(os.path.dirname(out_json) or ".",
                                                "summary.json")
    with open(summary_json, "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    m = summary["machine"]
    with open(out_md, "w") as f:
        f.write("Processor: %s, %s cores; vector extensions: %s.\n\n" % (
            m["processor"], m["cores"], m.get("simd", "unknown")))
        f.write("| target | benchmark | median | unit | rate | ratio to in-run "
                "reference | kernel target |\n")
        f.write("|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write("| %s |\n" % " | ".join(r))


def load_summary(path):
    if os.path.isdir(path):
        path = os.path.join(path, "summary.json")
    with open(path) as f:
        return json.load(f)


def compare(a_path, b_path):
    a, b = load_summary(a_path), load_summary(b_path)
    for label, s in (("A", a), ("B", b)):
        m = s["machine"]
        print("%s: %s, %s cores; %s" % (label, m["processor"], m["cores"],
                                         m.get("simd", "")))
    print()
    print("| benchmark | A ratio | B ratio | B / A | A memcpy GB/s | B memcpy GB/s "
          "| A target | B target |")
    print("|---|---|---|---|---|---|---|---|")
    for name in sorted(set(a["benchmarks"]) & set(b["benchmarks"])):
        x, y = a["benchmarks"][name], b["benchmarks"][name]
        if "ratio" not in x or "ratio" not in y:
            continue
        print("| %s | %.2f | %.2f | %.2f | %s | %s | %s | %s |" % (
            name, x["ratio"], y["ratio"], y["ratio"] / x["ratio"],
            "%.1f" % x["memcpy_gb_per_s"] if "memcpy_gb_per_s" in x else "",
            "%.1f" % y["memcpy_gb_per_s"] if "memcpy_gb_per_s" in y else "",
            x.get("simd_target", ""), y.get("simd_target", "")))
    only = sorted(set(a["benchmarks"]) ^ set(b["benchmarks"]))
    if only:
        print("\nin one run only: " + ", ".join(only))


if __name__ == "__main__":
    if len(sys.argv) == 3:
        compare(sys.argv[1], sys.argv[2])
    elif len(sys.argv) in (4, 5):
        merge(*sys.argv[1:])
    else:
        sys.exit(__doc__)
