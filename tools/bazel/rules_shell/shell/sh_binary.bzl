"""Offline stand-in for @rules_shell//shell:sh_binary.bzl: Bazel's native sh_binary."""

sh_binary = native.sh_binary
