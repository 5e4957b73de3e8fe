#!/usr/bin/env bash
# The fenced factory (NOTE [ Tensor internals ]): under --config=strict (clang
# with layering_check) every target of //... builds, and a package that depends
# on //:strata but includes core/representation.h or core/tensor_access.h does
# not. Exit 0 when both hold.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/install.sh
install_packages clang
tools/run.sh build-only
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
