#!/usr/bin/env bash
# The fenced factory (NOTE [ Tensor internals ]): under --config=strict (clang
# with layering_check) every target of //... builds, and a package that depends
# on //:strata but includes core/representation.h or core/tensor_access.h does
# not; the folders stand on their floors (floors.py) and nothing of the ground
# package //util depends on another Strata package. Exit 0 when all hold.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/install.sh
install_packages clang
tools/run.sh build-only
/usr/bin/python3 tests/fence/floors.py || { echo "fence: a folder is off its floor"; exit 1; }
up=$(bazel query --noshow_progress 'kind(rule, deps(//util/...)) intersect //... except //util/...' 2>/dev/null) || { echo "fence: bazel query failed"; exit 1; }
if [ -n "$up" ]; then
  echo "fence: the ground package //util depends up on:"; echo "$up"; exit 1
fi
echo "fence: //util depends on no other Strata package"
bazel build --config=strict //... || { echo "fence: //... does not build under --config=strict"; exit 1; }
log=$(mktemp)
if bazel build --config=strict //tests/fence:factory_reacher >"$log" 2>&1; then
  echo "fence: //tests/fence:factory_reacher built, so //:strata exposes the factory"
  rm -f "$log"
  exit 1
fi
if ! grep -q "core/representation.h" "$log"; then
  echo "fence: //tests/fence:factory_reacher failed for another reason:"
  cat "$log"
  rm -f "$log"
  exit 1
fi
grep -m1 "error:" "$log" | sed 's/^/fence: refused as it must: /'
rm -f "$log"
echo "fence: OK"
