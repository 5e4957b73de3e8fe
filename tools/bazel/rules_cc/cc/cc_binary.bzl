"""Offline stand-in for @rules_cc//cc:cc_binary.bzl (rules_cc 0.1 layout): Bazel's native cc_binary."""

cc_binary = native.cc_binary
