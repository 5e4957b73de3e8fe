#!/usr/bin/env bash
# Builds and runs every benchmark target (tag "benchmark") with repetitions and writes
#   DIR/results.json   one Google Benchmark JSON document (all runs, aggregates included)
#   DIR/report.md      the processor, then name, median, unit and the ratio to the in-run
#                      reference, each beside memcpy's bandwidth in the same binary and
#                      the SIMD target its kernels dispatched to
#   DIR/summary.json   the machine and each benchmark's ratio, for tools/bench_report.py A B
# core:tensor_benchmark and views:views_benchmark run twice, the second time as a
# multi-threaded process (target names ending in _threaded).
# Usage: tools/bench.sh [--peer] [--repetitions N] [--targets "LABEL..."] [--json FILE] DIR
#        tools/bench.sh --python DIR
#   --peer    also builds //tools/peer:torch_peer_benchmark against Debian's libtorch-dev
#             (installed if missing) and reports Strata/libtorch ratios.
#   --targets only these benchmark targets (e.g. "//ops:quantize_benchmark").
#   --json    also copies summary.json to FILE (to compare a later run against:
#             tools/bench_report.py FILE DIR).
#   --python  only the Python package against PyTorch from Python, one run
#             (tools/peer/python_benchmark.py; the package built with --config=opt):
#             writes DIR/python.json and DIR/python.md.
set -euo pipefail
cd "$(dirname "$0")/.."

peer=0
python=0
repetitions=5
only=""
json_copy=""
while [ $# -gt 1 ]; do
  case "$1" in
    --peer) peer=1; shift ;;
    --python) python=1; shift ;;
    --repetitions) repetitions="$2"; shift 2 ;;
    --targets) only="$2"; shift 2 ;;
    --json) json_copy="$2"; shift 2 ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || {
  echo "usage: tools/bench.sh [--peer] [--repetitions N] [--targets \"LABEL...\"] [--json FILE] DIR | tools/bench.sh --python DIR" >&2
  exit 2
}
out="$1"
rm -rf "$out/raw"
mkdir -p "$out/raw"

source tools/install.sh
if [ "$python" = 1 ]; then
  STRATA_BAZEL_CONFIG=opt tools/run.sh python tools/peer/python_benchmark.py "$(realpath "$out")"
  echo "wrote $out/python.json and $out/python.md"
  exit 0
fi
need=(python3)
[ "$peer" = 1 ] && need+=(libtorch-dev)
install_packages "${need[@]}"
tools/run.sh build-only >/dev/null 2>&1 || true  # Installs Strata's own build dependencies.

targets=$(bazel query 'attr(tags, "\bbenchmark\b", kind(cc_binary, //...))' 2>/dev/null)
[ "$peer" = 1 ] && targets="$targets //tools/peer:torch_peer_benchmark"
[ -n "$only" ] && targets="$only"
echo "processor: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')," \
  "$(nproc) cores; vector extensions: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
    grep -xE 'avx2|avx512f|avx512bw|avx512_bf16|avx512_fp16|amx_tile' | tr '\n' ' ')"
bazel build --config=opt $targets
for t in $targets; do
  name=$(echo "${t#//}" | tr '/:' '__')
  binary="bazel-bin/$(echo "${t#//}" | tr ':' '/')"
  echo "== $t"
  "$binary" --benchmark_repetitions="$repetitions" --benchmark_report_aggregates_only=false \
    --benchmark_out="$out/raw/$name.json" --benchmark_out_format=json >/dev/null
done
# The metadata paths once more as a multi-threaded process, as the peer binary always
# is (layout/bench_threads.h): shared_ptr counts then change with locked instructions.
for t in //core:tensor_benchmark //views:views_benchmark; do
  case " $targets " in *" $t "*) ;; *) continue ;; esac
  name=$(echo "${t#//}" | tr '/:' '__')_threaded
  echo "== $t (STRATA_BENCH_THREADED=1)"
  STRATA_BENCH_THREADED=1 "bazel-bin/$(echo "${t#//}" | tr ':' '/')" \
    --benchmark_repetitions="$repetitions" --benchmark_report_aggregates_only=false \
    --benchmark_out="$out/raw/$name.json" --benchmark_out_format=json >/dev/null
done
python3 tools/bench_report.py "$out/raw" "$out/results.json" "$out/report.md" "$out/summary.json"
[ -n "$json_copy" ] && cp "$out/summary.json" "$json_copy"
# Every ratio beside memcpy's bandwidth and the kernels' SIMD target.
grep -E 'memcpy|libtorch|^Processor' "$out/report.md" || true
echo "wrote $out/results.json, $out/report.md and $out/summary.json"
