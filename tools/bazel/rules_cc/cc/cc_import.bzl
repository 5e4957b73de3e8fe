"""Offline stand-in for @rules_cc//cc:cc_import.bzl (rules_cc 0.1 layout): Bazel's native cc_import."""

cc_import = native.cc_import
