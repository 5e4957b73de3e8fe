"""Offline stand-in for @rules_cc//cc:cc_library.bzl (rules_cc 0.1 layout): Bazel's native cc_library."""

cc_library = native.cc_library
