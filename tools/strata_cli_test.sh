#!/usr/bin/env bash
# End-to-end checks of the strata binary: exit statuses and exact output lines.
set -u
strata="${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/strata"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

requests="$TEST_TMPDIR/requests.txt"
cat > "$requests" <<'REQ'
# the contract's requests
size (4,8):(1,4)
cosize (3,4):(0,1)

compose (6,2):(8,2) (4,3):(3,1)
complement (2,2):(1,6) 24
idx2crd (2,(3,2)) 11
logical_divide (4,2,3):(2,1,8) 4:2
REQ
out=$("$strata" layout --batch "$requests"); status=$?
expected=$'32\n4\n((2,2),3):((24,2),8)\n(3,2):(2,12)\n(1,(2,1))\n((2,2),(2,3)):((4,1),(2,8))'
[ "$status" = 0 ] || fail "batch exit status $status, want 0"
[ "$out" = "$expected" ] || fail "batch output: $out"

out=$(printf 'size 8:1\ncompose (4,3):(1,10) 6:1\nsize x\n' | "$strata" layout --batch -); status=$?
[ "$status" = 1 ] || fail "batch with errors exit status $status, want 1"
[ "$(echo "$out" | wc -l)" = 3 ] || fail "one answer line per request: $out"
echo "$out" | sed -n 2p | grep -q '^error: ValueError: composition' || fail "error line: $out"
echo "$out" | sed -n 3p | grep -q '^error: TypeError: ' || fail "type error line: $out"

out=$("$strata" layout --show '(2,3):(3,1)'); status=$?
[ "$status" = 0 ] || fail "show exit $status"
echo "$out" | grep -q '^1 | 3 | 4 | 5 |$' || fail "show table: $out"

"$strata" layout --batch /nonexistent/file >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "unreadable batch file exit $status, want 2"

out=$("$strata" demo); status=$?
[ "$status" = 0 ] || fail "demo exit $status"
echo "$out" | grep -q 'mxfp8_e4m3' || fail "demo output: $out"

golden="${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/golden"
out=$("$strata" validate "$golden/float32_4x8.textproto" "$golden/mxfp8_4x64.textproto"); status=$?
[ "$status" = 0 ] || fail "validate valid files exit $status"
echo "$out" | grep -q 'mxfp8_4x64.textproto: OK dtype=mxfp8_e4m3 levels=2 shape=(4,64) snapshot=\[c0@0,c1@0\]$' ||
  fail "validate OK line: $out"
out=$("$strata" validate "$golden/float32_4x8.textproto" "$golden/invalid_adjacent_range.textproto" \
  "$golden/invalid_unknown_carrier.textproto"); status=$?
[ "$status" = 1 ] || fail "validate invalid exit $status, want 1"
echo "$out" | grep -q 'invalid_adjacent_range.textproto: ValueError: adjacent level 0: ' || fail "$out"
echo "$out" | grep -q 'invalid_unknown_carrier.textproto: TypeError: subtensor 0: carrier is not a Carrier$' || fail "$out"
head -c 300 /dev/urandom > "$TEST_TMPDIR/random.bin"
"$strata" validate "$TEST_TMPDIR/random.bin" >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "random bytes exit $status, want 2"
printf 'logical_dtype: "float32"\ncarriers { id: "c0" size: 99999999999999999999999 }' |
  "$strata" validate - >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "huge number exit $status, want 2"
head -c 200 "$golden/mxfp8_4x64.textproto" | "$strata" validate - >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "truncated text exit $status, want 2"
"$strata" validate /nonexistent >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "unreadable file exit $status, want 2"
[ "$("$strata" dump --list)" = $'float32_4x8\nmxfp8_4x64\nmxfp4_2x32' ] || fail "dump --list"
"$strata" dump --example mxfp8_4x64 | cmp -s - "$golden/mxfp8_4x64.textproto" || fail "dump golden"
"$strata" dump --example nope >/dev/null 2>&1; [ $? = 2 ] || fail "dump unknown example"

out=$("$strata" view "$golden/mxfp8_4x64.textproto" permute '(1,0)'); status=$?
[ "$status" = 0 ] || fail "view permute exit $status: $out"
echo "$out" | grep -q 'adjacent_layouts: "((32,2),4):((0,4),1)"' || fail "view permute output: $out"
out=$("$strata" view "$golden/mxfp8_4x64.textproto" slice 0 1 3 1); status=$?
[ "$status" = 0 ] || fail "view slice exit $status: $out"
echo "$out" | grep -q 'offset: 2' || fail "view slice narrows the scales: $out"
out=$("$strata" view "$golden/float32_4x8.textproto" squeeze 0); status=$?
[ "$status" = 1 ] || fail "view squeeze of a non-1 mode exit $status"
echo "$out" | grep -q 'float32_4x8.textproto: ValueError: squeeze: mode 0 has extent 4' || fail "$out"
out=$("$strata" view "$golden/float32_4x8.textproto" slice 1 0 8 -1); status=$?
[ "$status" = 1 ] || fail "negative step is a step, exit $status: $out"
"$strata" view "$golden/float32_4x8.textproto" frobnicate >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "unknown view op exit $status"
"$strata" view /nonexistent permute '(1,0)' >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "view of unreadable file exit $status"
out=$("$strata" view "$golden/float32_4x8.textproto" reshape '(2,16)'); status=$?
[ "$status" = 0 ] || fail "view reshape exit $status"
echo "$out" | grep -q 'placement: "(2,16):(16,1)"' || fail "reshape output: $out"

if [ "$failures" -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "strata CLI: all checks passed"
