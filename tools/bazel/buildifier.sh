#!/usr/bin/env bash
# buildifier on every Bazel file of the repository (BUILD, BUILD.bazel, *.BUILD,
# WORKSPACE, *.bzl; tests/consumer/ included):
#   tools/bazel/buildifier.sh          check: exits 1 on any lint finding or unformatted file
#   tools/bazel/buildifier.sh --fix    formats the files in place and applies lint fixes
# buildifier is the npm package @bazel/buildifier at a pinned version, fetched once with
# `npm pack` from the npm registry (nothing else is contacted) and unpacked under
# ~/.cache/strata-tools/. The package ships one binary per platform; the one for this
# machine is run directly, so node is needed only to fetch it.
set -euo pipefail
cd "$(dirname "$0")/../.."

version=8.2.1
cache="${XDG_CACHE_HOME:-$HOME/.cache}/strata-tools/buildifier-$version"

platform_binary() {
  local os arch
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    *) echo "buildifier.sh: unsupported OS $(uname -s)" >&2; return 1 ;;
  esac
  case "$(uname -m)" in
    x86_64 | amd64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    riscv64) arch=riscv64 ;;
    *) echo "buildifier.sh: unsupported architecture $(uname -m)" >&2; return 1 ;;
  esac
  echo "buildifier-${os}_${arch}"
}

is_pinned_version() {
  local reported
  reported=$("$1" --version 2>/dev/null) || return 1
  [[ "$reported" =~ version:\ $version([^0-9.]|$) ]]
}

find_buildifier() {
  # A buildifier already on PATH is used when it is the pinned version.
  if command -v buildifier >/dev/null 2>&1 && is_pinned_version buildifier; then
    command -v buildifier
    return
  fi
  local binary
  binary="$cache/$(platform_binary)"
  if [ ! -x "$binary" ]; then
    if ! command -v npm >/dev/null 2>&1; then
      source tools/install.sh
      install_packages npm
    fi
    echo "buildifier.sh: fetching @bazel/buildifier@$version from the npm registry" >&2
    local scratch
    scratch=$(mktemp -d)
    (cd "$scratch" && npm pack --silent "@bazel/buildifier@$version" >/dev/null)
    mkdir -p "$scratch/unpacked"
    tar -xzf "$scratch"/bazel-buildifier-"$version".tgz -C "$scratch/unpacked"
    local packaged
    packaged="$scratch/unpacked/package/$(platform_binary)"
    if [ ! -f "$packaged" ]; then
      echo "buildifier.sh: @bazel/buildifier@$version has no $(platform_binary)" >&2
      rm -rf "$scratch"
      return 1
    fi
    mkdir -p "$cache"
    install -m 0755 "$packaged" "$binary.tmp"
    mv "$binary.tmp" "$binary"  # Atomic: a concurrent run never sees half a binary.
    rm -rf "$scratch"
  fi
  echo "$binary"
}

buildifier_bin=$(find_buildifier)
is_pinned_version "$buildifier_bin" || {
  echo "buildifier.sh: $buildifier_bin is not buildifier $version" >&2
  exit 1
}

list_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard
  else  # A source tree without .git: everything but Bazel's output symlinks.
    find . -path '*/bazel-*' -prune -o -type f -print | sed 's|^\./||'
  fi
}
files=()
while IFS= read -r f; do
  [ -f "$f" ] && files+=("$f")
done < <(list_files |
  grep -E '(^|/)(BUILD|BUILD\.bazel|WORKSPACE|WORKSPACE\.bazel)$|\.(bzl|BUILD)$' | sort)

if [ "${1:-}" = "--fix" ]; then
  exec "$buildifier_bin" --lint=fix "${files[@]}"
fi
if "$buildifier_bin" --mode=check --lint=warn "${files[@]}"; then
  echo "buildifier $version: ${#files[@]} files, no findings"
else
  echo "buildifier $version: findings above (tools/bazel/buildifier.sh --fix formats;" \
    "lint findings need a fix by hand)" >&2
  exit 1
fi
