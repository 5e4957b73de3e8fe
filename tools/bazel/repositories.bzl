"""The external repositories Strata's BUILD files need, declared by one macro.

Strata's own WORKSPACE calls `strata_dependencies()`, and so does every workspace that
uses Strata (README.md, "Using Strata from another repository"):

    local_repository(
        name = "strata",
        path = "../strata",  # or any other way to fetch it
    )

    load("@strata//tools/bazel:repositories.bzl", "strata_dependencies")

    strata_dependencies()

Everything is offline. The stand-ins for rules_cc, rules_shell, rules_java and
remote_coverage_tools are directories of Strata's tree (tools/bazel/<name>); they are
found through a label of this package rather than a path, so they resolve to Strata's
tree whichever workspace is the main one and however @strata was fetched. Strata's
.bazelignore keeps those directories (and the consumer workspace tests/consumer) out of
Strata's own //... .
"""

def _stand_in_repository_impl(repository_ctx):
    # The directory next to this package's BUILD file: Strata's tools/bazel/<directory>.
    source = repository_ctx.path(repository_ctx.attr._anchor).dirname.get_child(
        repository_ctx.attr.directory,
    )
    if not source.exists:
        fail("Strata's stand-in directory {} does not exist".format(source))
    for entry in source.readdir():
        repository_ctx.symlink(entry, entry.basename)

_stand_in_repository = repository_rule(
    implementation = _stand_in_repository_impl,
    attrs = {
        "directory": attr.string(
            mandatory = True,
            doc = "The stand-in's directory under Strata's tools/bazel/.",
        ),
        "_anchor": attr.label(default = Label("//tools/bazel:BUILD")),
    },
    local = True,
    doc = "A repository whose files are those of a stand-in directory of Strata's tree.",
)

# Bazel 4 resolves rules_cc, rules_java and remote_coverage_tools even for C++-only
# builds; the BUILD files load the sh_* rules from rules_shell (Bazel 8's layout).
STAND_INS = [
    "remote_coverage_tools",
    "rules_cc",
    "rules_java",
    "rules_shell",
]

# A WORKSPACE repository macro: it declares repositories whose names are fixed (the BUILD
# files refer to @system_libs, Bazel to @rules_cc, ...), so there is no target name for a
# `name` argument to set; repository macros do not take one (rules_go's
# go_rules_dependencies, protobuf_deps and rules_java_dependencies neither).
# buildifier: disable=unnamed-macro
def strata_dependencies():
    """Declares @system_libs and the offline stand-in repositories, unless already declared.

    @system_libs wraps Debian's Abseil, GoogleTest, Google Benchmark, protobuf and DLPack,
    installed under /usr by tools/run.sh, as cc_library targets
    (tools/bazel/system_libs.BUILD). A repository the calling WORKSPACE declared first
    is left as it is.
    """
    if not native.existing_rule("system_libs"):
        native.new_local_repository(
            name = "system_libs",
            # A string attribute in Bazel 4: str() of a Label of this repository, so that
            # it names Strata's file (@strata//tools/bazel:...) from a consumer too.
            build_file = str(Label("//tools/bazel:system_libs.BUILD")),
            path = "/usr",
        )
    for name in STAND_INS:
        if not native.existing_rule(name):
            _stand_in_repository(
                name = name,
                directory = name,
            )
