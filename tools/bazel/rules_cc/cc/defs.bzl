"""Offline stand-in for @rules_cc//cc:defs.bzl: re-exports Bazel's native C++ rules.

BUILD files load the per-rule files (cc_library.bzl, cc_test.bzl, ...), as rules_cc 0.1
and Bazel 8 expect; this file keeps the older single-file form working.
"""

load(":cc_binary.bzl", _cc_binary = "cc_binary")
load(":cc_import.bzl", _cc_import = "cc_import")
load(":cc_library.bzl", _cc_library = "cc_library")
load(":cc_test.bzl", _cc_test = "cc_test")

cc_binary = _cc_binary
cc_import = _cc_import
cc_library = _cc_library
cc_test = _cc_test
cc_proto_library = native.cc_proto_library
cc_toolchain = native.cc_toolchain
cc_toolchain_suite = native.cc_toolchain_suite
objc_library = native.objc_library
