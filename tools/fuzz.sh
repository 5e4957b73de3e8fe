#!/usr/bin/env bash
# Builds the libFuzzer targets with Debian's clang (--config=fuzz) and runs each for
# SECONDS on a scratch copy of its seed corpus (tests/fuzz/corpus/NAME). A crash input
# is copied to tests/fuzz/regressions/NAME/ (kept as a regression test once committed)
# and the script exits 1.   Usage: tools/fuzz.sh SECONDS [NAME...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(layout replay proto api safetensors gguf directory rules)

source tools/install.sh
install_packages clang libclang-rt-dev
tools/run.sh build-only

targets=()
for n in "${names[@]}"; do targets+=("//tests/fuzz:${n}_fuzzer"); done
bazel build --config=fuzz "${targets[@]}"

status=0
scratch=$(mktemp -d)
# Copy the binaries now: bazel-bin follows whatever configuration builds next.
for n in "${names[@]}"; do cp -L bazel-bin/tests/fuzz/"${n}"_fuzzer "$scratch/"; done
for n in "${names[@]}"; do
  mkdir -p "$scratch/$n/corpus" "$scratch/$n/crashes"
  cp tests/fuzz/corpus/"$n"/* "$scratch/$n/corpus/"
  echo "== ${n}_fuzzer for ${seconds}s"
  # Per-target libFuzzer flags, if any (tests/fuzz/NAME.flags, one line).
  flags=()
  if [ -f tests/fuzz/"$n".flags ]; then read -ra flags < tests/fuzz/"$n".flags; fi
  if ! "$scratch/${n}_fuzzer" "$scratch/$n/corpus" "${flags[@]}" -max_total_time="$seconds" \
      -artifact_prefix="$scratch/$n/crashes/" -print_final_stats=1 2>"$scratch/$n/log"; then
    status=1
    cp "$scratch/$n/crashes/"* tests/fuzz/regressions/"$n"/ 2>/dev/null || true
    echo "${n}_fuzzer FOUND A CRASH; inputs copied to tests/fuzz/regressions/$n/"
    tail -30 "$scratch/$n/log"
    # The check that failed (FUZZ_CHECK), and each crash input in base64: a CI
    # machine's copy is gone with it, and libFuzzer prints none over 256 bytes.
    grep -A1 "check failed" "$scratch/$n/log" || true
    for input in "$scratch/$n/crashes/"*; do
      [ -f "$input" ] || continue
      if [ "$(stat -c %s "$input")" -le 16384 ]; then
        echo "input $(basename "$input") (base64):"
        base64 -w 0 "$input"
        echo
      fi
    done
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$scratch/$n/log" | sed "s/^/  ${n}: /"
done
rm -rf "$scratch"
exit "$status"
