#!/usr/bin/env bash
# The wheel (issue 40): tools/wheel.py builds strata-VERSION-cpXY-cpXY-linux_x86_64.whl
# from the built package and tool; pip installs it, offline (--no-index; numpy and torch
# from the system site packages), into a fresh virtual environment; there, outside the
# checkout, `import strata` finds the installed package, README.md's Python example runs,
# and the `strata` console script runs `strata demo`. Prints the wheel's size and the
# install time.
set -uo pipefail
wheel_py="$1" binary="$2" package="$3" readme="$4"
work="${TEST_TMPDIR:-$(mktemp -d)}/wheel_test"
rm -rf "$work" && mkdir -p "$work"
failures=0
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }

wheel=$(/usr/bin/python3 "$wheel_py" --package "$package" --binary "$binary" --out "$work/dist") ||
  { echo "FAIL - wheel.py"; exit 1; }
case "$(basename "$wheel")" in
  strata-*-cp3*-cp3*-linux_x86_64.whl) echo "ok - $(basename "$wheel"), $(stat -c %s "$wheel") bytes" ;;
  *) fail "wheel name $(basename "$wheel")" ;;
esac
/usr/bin/python3 - "$wheel" <<'PY' || fail "wheel contents"
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
need = ["strata/__init__.py", "strata/_strata.so", "strata/_bin/strata", "strata/_cli.py"]
missing = [n for n in need if n not in names]
info = [n for n in names if ".dist-info/" in n]
meta = zipfile.ZipFile(sys.argv[1]).read([n for n in info if n.endswith("METADATA")][0]).decode()
assert not missing, missing
for field in ("Name: strata", "Version: ", "Requires-Python: ", "Requires-Dist: numpy", "License: "):
    assert field in meta, field
assert any(n.endswith("entry_points.txt") for n in info)
assert any(n.endswith("RECORD") for n in info)
PY

/usr/bin/python3 -m venv --system-site-packages "$work/venv" || { echo "FAIL - venv"; exit 1; }
start=$(date +%s%N)
"$work/venv/bin/python" -m pip install --no-index --disable-pip-version-check -q "$wheel" ||
  { echo "FAIL - pip install"; exit 1; }
end=$(date +%s%N)
echo "ok - pip install --no-index in $(( (end - start) / 1000000 )) ms"

mkdir -p "$work/elsewhere" && cd "$work/elsewhere" || exit 1
where=$("$work/venv/bin/python" -c "import strata, os; print(os.path.realpath(strata.__file__))")
case "$where" in "$(realpath "$work/venv")"/*) echo "ok - import strata from the venv" ;;
  *) fail "import strata found $where" ;; esac
/usr/bin/python3 - "$readme" > example.py <<'PY'
import sys
text = open(sys.argv[1]).read()
section = text[text.index("\n## Python\n"):]
start = section.index("```python\n") + len("```python\n")
print(section[start:section.index("```", start)])
PY
if "$work/venv/bin/python" example.py; then echo "ok - README's Python example in the venv"
else fail "README's Python example in the venv"; fi
out=$("$work/venv/bin/strata" demo 2>&1); status=$?
[ "$status" = 0 ] && [ -n "$out" ] && echo "ok - the strata console script runs strata demo" ||
  fail "strata demo: $status $(echo "$out" | tail -3)"
"$work/venv/bin/strata" nosuchcommand >/dev/null 2>&1; status=$?
[ "$status" = 2 ] && echo "ok - its exit status is the tool's" || fail "strata usage exit $status"
"$work/venv/bin/python" -m pip uninstall -y -q strata && [ ! -e "$work/venv/bin/strata" ] &&
  echo "ok - pip uninstall removes it" || fail "pip uninstall"
[ "$failures" = 0 ] || exit 1
