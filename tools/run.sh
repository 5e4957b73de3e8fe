#!/usr/bin/env bash
# Strata's two set-up-free entry points on a fresh Debian machine:
#   tools/run.sh demo            build and run the main job (strata demo)
#   tools/run.sh test [ARGS...]  run every test (bazel test //... ARGS, e.g. --config=asan)
#   tools/run.sh python [ARGS]   /usr/bin/python3 ARGS with the built package `strata`
#                                importable (python -c "import strata; ...")
#   tools/run.sh wheel [DIR]     the package as a wheel pip installs, in DIR (dist/)
# Both first install the Debian packages that are missing (as root with apt-get, else
# through sudo) and say what they install.
set -euo pipefail
caller_dir="$PWD"  # Where `python` runs its arguments (a script's relative path).
cd "$(dirname "$0")/.."

packages=(bazel-bootstrap g++ pkg-config libabsl-dev libgtest-dev libbenchmark-dev
  libprotobuf-dev protobuf-compiler libdlpack-dev libhwy-dev nlohmann-json3-dev libre2-dev)

# The Python package (//python): Debian's interpreter with its headers, pybind11, and
# the peers and test runner its tests use.
python_packages=(python3 python3-dev pybind11-dev python3-numpy python3-torch python3-pytest
  python3-venv python3-pip)

source tools/install.sh
install_missing() { install_packages "${packages[@]}"; }

command="${1:-}"
[ $# -gt 0 ] && shift
case "$command" in
  demo)
    install_missing
    bazel build --config=opt --noshow_progress //tools:strata 2>/dev/null ||
      bazel build --config=opt //tools:strata
    exec bazel-bin/tools/strata demo
    ;;
  test)
    install_packages "${packages[@]}" "${python_packages[@]}"
    log=$(mktemp)
    status=0
    # Targets may follow the options (tools/run.sh test --config=tsan //tests:x).
    targets=()
    for a in "$@"; do case "$a" in //*) targets+=("$a") ;; esac; done
    [ ${#targets[@]} -gt 0 ] || set -- "$@" //...
    bazel test --test_summary=short "$@" 2>&1 | tee "$log" || status=$?
    passed=$(grep -cE '^//[^ ]+ .*PASSED' "$log" || true)
    failed=$(grep -cE '^//[^ ]+ .*(FAILED|TIMEOUT|NO STATUS|INCOMPLETE)' "$log" || true)
    rm -f "$log"
    [ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1  # A build failure.
    echo "bazel test $*: $passed passed, $failed failed"
    exit "$status"
    ;;
  python)  # STRATA_BAZEL_CONFIG=opt builds the package optimized (tools/bench.sh).
    install_packages "${packages[@]}" "${python_packages[@]}"
    config=(${STRATA_BAZEL_CONFIG:+--config=$STRATA_BAZEL_CONFIG})
    bazel build "${config[@]}" --noshow_progress //python:shell 2>/dev/null ||
      bazel build "${config[@]}" //python:shell
    export PYTHONPATH="$PWD/bazel-bin/python/shell.runfiles/strata/python${PYTHONPATH:+:$PYTHONPATH}"
    cd "$caller_dir"
    exec /usr/bin/python3 "$@"
    ;;
  wheel)  # tools/run.sh wheel [DIR]: the package as a wheel in DIR (default dist/)
    install_packages "${packages[@]}" "${python_packages[@]}"
    out="${1:-dist}"
    case "$out" in /*) ;; *) out="$caller_dir/$out" ;; esac
    bazel build --config=opt --noshow_progress //python:shell //tools:strata 2>/dev/null ||
      bazel build --config=opt //python:shell //tools:strata
    exec /usr/bin/python3 tools/wheel.py --binary bazel-bin/tools/strata \
      --package bazel-bin/python/shell.runfiles/strata/python/strata --out "$out"
    ;;
  build-only)  # Installs the build dependencies of //... only (tools/bench.sh, fence).
    install_packages "${packages[@]}" "${python_packages[@]}"
    ;;
  *)
    echo "usage: tools/run.sh demo | tools/run.sh test [bazel test options] |" \
      "tools/run.sh python [python3 arguments] | tools/run.sh wheel [DIR]" >&2
    exit 2
    ;;
esac
