"""Offline stand-in for @rules_cc//cc:cc_test.bzl (rules_cc 0.1 layout): Bazel's native cc_test."""

cc_test = native.cc_test
