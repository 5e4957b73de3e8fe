"""Offline stand-in for @rules_shell//shell:sh_test.bzl: Bazel's native sh_test."""

sh_test = native.sh_test
