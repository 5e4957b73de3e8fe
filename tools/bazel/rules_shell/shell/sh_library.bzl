"""Offline stand-in for @rules_shell//shell:sh_library.bzl: Bazel's native sh_library."""

sh_library = native.sh_library
