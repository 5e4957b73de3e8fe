"""Offline stand-in for @rules_python//python:defs.bzl: Bazel 4's native Python rules."""

load("@bazel_tools//tools/python:toolchain.bzl", _py_runtime_pair = "py_runtime_pair")

py_binary = native.py_binary
py_library = native.py_library
py_runtime = native.py_runtime
py_runtime_pair = _py_runtime_pair
py_test = native.py_test
