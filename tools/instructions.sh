#!/usr/bin/env bash
# Counts the instructions each view and Tensor::Create executes per call, under
# valgrind's callgrind (installed if missing): a deterministic figure beside
# bench.sh's timings, which this shared machine moves by up to 1.5x between
# runs. The count covers the public function and everything it calls; the
# destruction of its result (in the caller) is not counted.
#   Usage: tools/instructions.sh
# Prints, per view, the count on the one-level and the two-level Tensor of
# views/views_benchmark.cc and their ratio, then Tensor::Create's.
set -euo pipefail
cd "$(dirname "$0")/.."

source tools/install.sh
install_packages valgrind python3
tools/run.sh build-only >/dev/null 2>&1 || true  # Strata's build dependencies.
# Valgrind 3.19 decodes no AVX-512, which -march=native emits on a machine
# that has it: those builds stop at the first such instruction.
bazel build --config=opt --copt=-mno-avx512f //views:views_benchmark \
  //core:tensor_benchmark
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# Copy the binaries now: bazel-bin follows whatever configuration builds next.
cp -L bazel-bin/views/views_benchmark bazel-bin/core/tensor_benchmark "$scratch/"

# count BINARY BENCHMARK FUNCTION: instructions per call of FUNCTION (a
# demangled name prefix) while BENCHMARK runs.
count() {
  valgrind --tool=callgrind --callgrind-out-file="$scratch/out" \
    --compress-strings=no --toggle-collect="$3*" "$scratch/$1" \
    --benchmark_filter="^$2\$" --benchmark_min_time=0.05 >/dev/null 2>&1
  python3 - "$scratch/out" "$3" <<'PY'
import sys
path, function = sys.argv[1], sys.argv[2]
calls = total = 0
callee = None
for line in open(path):
    if line.startswith("cfn="):
        callee = line[4:].strip()
    elif line.startswith("calls=") and callee and callee.startswith(function):
        calls += int(line.split("=")[1].split()[0])
    elif line.startswith(("summary:", "totals:")):
        total = int(line.split()[1])
print(round(total / calls) if calls else "n/a")
PY
}

printf "%-12s %10s %10s %8s\n" view one-level two-level ratio
for view in Permute:Permute SliceStep:Slice Reshape:Reshape AsStrided:AsStrided \
    BroadcastTo:BroadcastTo Unsqueeze:Unsqueeze Squeeze:Squeeze; do
  name=${view%%:*}
  function="strata::${view#*:}("
  one=$(count views_benchmark "BM_$name/0" "$function")
  two=$(count views_benchmark "BM_$name/1" "$function")
  printf "%-12s %10s %10s %8s\n" "$name" "$one" "$two" \
    "$(python3 -c "print('%.2f' % ($two / $one))")"
done
for rank in 1 2 4; do
  printf "%-12s %10s\n" "Create/rank$rank" \
    "$(count tensor_benchmark "TensorCreate/rank$rank" "strata::Tensor::Create(")"
done
