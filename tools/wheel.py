#!/usr/bin/python3
"""Builds the Python package as a wheel that pip installs (issue 40):

    strata-VERSION-cpXY-cpXY-linux_x86_64.whl
      strata/*.py, strata/_strata.so      the package and its extension
      strata/_bin/strata                  the command-line tool
      strata/_cli.py                      the `strata` console script: runs it
      strata-VERSION.dist-info/           METADATA (name, version, requires-python,
                                          numpy, license), WHEEL, entry_points.txt,
                                          RECORD (sha256 of every file)

The extension is built by Bazel against this interpreter (/usr/bin/python3) and links
Debian's shared libraries (Abseil, protobuf, Highway, RE2): the wheel installs into any
virtual environment of the same Python on a machine that has them, as `tools/run.sh`
installs them. Standard library only (zipfile, hashlib): no setuptools, no network.

    /usr/bin/python3 tools/wheel.py --package DIR --binary STRATA --out DIR [--version V]
"""
import argparse
import base64
import hashlib
import os
import stat
import sys
import sysconfig
import zipfile

NAME = "strata"
VERSION = "0.4.0"
SUMMARY = ("Strata: one logical Tensor over typed, carrier-backed storage; block-scaled "
           "dtypes, checkpoints in and out, conversion and rank shards")
LICENSE = "Apache-2.0"

CLI = '''"""The `strata` command (console script): runs the tool installed beside the
package, with the same arguments and exit status."""
import os
import sys


def main():
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "strata")
    os.execv(tool, ["strata"] + sys.argv[1:])


if __name__ == "__main__":
    main()
'''


def tag():
    v = sys.version_info
    return "cp%d%d" % (v.major, v.minor)


def platform_tag():
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "%s,sha256=%s,%d" % (path, digest.decode(), len(data))


def build(package, binary, out, version):
    py = tag()
    wheel_name = "%s-%s-%s-%s-%s.whl" % (NAME, version, py, py, platform_tag())
    info = "%s-%s.dist-info" % (NAME, version)
    files = []  # (path in the wheel, bytes, executable)
    for name in sorted(os.listdir(package)):
        full = os.path.join(package, name)
        if name.endswith(".py") or name == "_strata.so":
            with open(full, "rb") as f:
                files.append(("strata/" + name, f.read(), False))
    if not any(p == "strata/_strata.so" for p, _, _ in files):
        raise SystemExit("wheel: %s holds no _strata.so" % package)
    with open(binary, "rb") as f:
        files.append(("strata/_bin/strata", f.read(), True))
    files.append(("strata/_cli.py", CLI.encode(), False))
    metadata = "\n".join([
        "Metadata-Version: 2.1",
        "Name: " + NAME,
        "Version: " + version,
        "Summary: " + SUMMARY,
        "License: " + LICENSE,
        "Requires-Python: ==%d.%d.*" % sys.version_info[:2],
        "Requires-Dist: numpy",
        "Provides-Extra: torch",
        "Requires-Dist: torch; extra == \"torch\"",
        "",
        "The Python package of Strata (python.md): Tensors, layouts, dtypes, views,",
        "quantization, checkpoints (read, write, convert) and rank shards.",
        ""])
    wheel = "\n".join([
        "Wheel-Version: 1.0",
        "Generator: strata tools/wheel.py",
        "Root-Is-Purelib: false",
        "Tag: %s-%s-%s" % (py, py, platform_tag()),
        ""])
    entry_points = "[console_scripts]\nstrata = strata._cli:main\n"
    files += [(info + "/METADATA", metadata.encode(), False),
              (info + "/WHEEL", wheel.encode(), False),
              (info + "/entry_points.txt", entry_points.encode(), False)]
    record = [record_line(p, d) for p, d, _ in files] + [info + "/RECORD,,"]
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode(), False))
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, wheel_name)
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for p, data, executable in files:
            zi = zipfile.ZipInfo(p, date_time=(2026, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            mode = 0o755 if executable else 0o644
            zi.external_attr = (stat.S_IFREG | mode) << 16
            z.writestr(zi, data)
    os.replace(tmp, path)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", required=True,
                        help="the built package directory (strata/*.py, _strata.so)")
    parser.add_argument("--binary", required=True, help="the built strata tool")
    parser.add_argument("--out", required=True, help="where the wheel is written")
    parser.add_argument("--version", default=VERSION)
    args = parser.parse_args()
    print(build(args.package, args.binary, args.out, args.version))


if __name__ == "__main__":
    main()
