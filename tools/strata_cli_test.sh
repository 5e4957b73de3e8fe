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
[ "$("$strata" dump --list)" = $'float32_4x8\nmxfp8_4x64\nmxfp4_2x32\nmxfp8_swizzled_256x256\nnvfp4_swizzled_128x64\nmxfp8_swizzled_padded_200x160\nmxfp8_swizzled_batched_2x128x128\nfp8_block128x128_576x256\nfp8_rowwise_4x64\nfp8_tensorwise_4x64\nfp8_block1x128_2x200\nnvfp4_ts_4x64\nnvfp4_ts_recip_swizzled_128x64\nq8_0_4x64\nq4_0_4x64' ] ||
  fail "dump --list"
for name in mxfp8_swizzled_256x256 nvfp4_swizzled_128x64 mxfp8_swizzled_padded_200x160 \
    mxfp8_swizzled_batched_2x128x128 fp8_block128x128_576x256 fp8_rowwise_4x64 \
    fp8_tensorwise_4x64 fp8_block1x128_2x200 nvfp4_ts_4x64 nvfp4_ts_recip_swizzled_128x64 \
    q8_0_4x64 q4_0_4x64; do
  "$strata" dump --example "$name" | cmp -s - "$golden/$name.textproto" || fail "dump golden $name"
  "$strata" dump --example "$name" --data > "$TEST_TMPDIR/$name.textproto"
  "$strata" validate "$TEST_TMPDIR/$name.textproto" | grep -q ': OK dtype=' || fail "validate $name"
done
grep -q 'placement: "((32,4,2),(4,2)):((16,4,1024),(1,512))"' "$golden/mxfp8_swizzled_256x256.textproto" ||
  fail "swizzled L_1 of mxfp8_swizzled_256x256"
# formats.md's ragged example: 576 rows = (64,9), S_0 (64,9):(0,1) into (2,5):(0,W).
grep -q 'adjacent_layouts: "((64,9),(128,2)):((0,1),(0,10))"' "$golden/fp8_block128x128_576x256.textproto" &&
  grep -q 'placement: "((2,5),2):((0,2),1)"' "$golden/fp8_block128x128_576x256.textproto" ||
  fail "ragged 128x128 layouts"
# A tensor-parallel shard of the ragged weight at a multiple of 128 is a view, the ragged
# last one too; one that starts inside a block and crosses into the next is refused.
"$strata" dump --example fp8_block128x128_576x256 > "$TEST_TMPDIR/ragged.textproto"
"$strata" view "$TEST_TMPDIR/ragged.textproto" slice 0 512 576 1 > "$TEST_TMPDIR/last.textproto" &&
  "$strata" validate "$TEST_TMPDIR/last.textproto" | grep -q 'OK dtype=fp8_e4m3_block128x128 levels=2 shape=(64,256)' ||
  fail "ragged last shard"
out=$("$strata" view "$TEST_TMPDIR/ragged.textproto" slice 0 64 192 1) && fail "a shard that crosses a block"
case "$out" in "$TEST_TMPDIR/ragged.textproto: ValueError: Slice: level 1 "*) ;; *) fail "refused shard: $out" ;; esac

# strata quantize FORMAT SHAPE BLOCKED_MODE [--scale-layout L] --input FILE
ones="$TEST_TMPDIR/ones_200x64.f32"  # 200 * 64 float32 values 1.0, little-endian.
: > "$ones"
for _ in $(seq 200); do
  for _ in $(seq 64); do printf '\x00\x00\x80\x3f'; done >> "$ones"
done
out=$("$strata" quantize mxfp8_e4m3 '(200,64)' 1 --scale-layout swizzled_128x4 --input "$ones"); status=$?
[ "$status" = 0 ] || fail "quantize exit $status: $out"
echo "$out" > "$TEST_TMPDIR/q.textproto"
"$strata" validate "$TEST_TMPDIR/q.textproto" |
  grep -q 'q.textproto: OK dtype=mxfp8_e4m3 levels=2 shape=(200,64) snapshot=\[c0@0,c1@0\]$' ||
  fail "quantize output does not validate"
echo "$out" | grep -q 'placement: "((32,4,2),(4,1)):((16,4,512),(1,512))"' || fail "swizzled L_1: $out"
echo "$out" | grep -q 'adjacent_layouts: "(200,(32,2)):(1,(0,256))"' || fail "swizzled S_0: $out"
echo "$out" | grep -q '  size: 1024$' || fail "padded scale carrier (256 rows x 4 blocks): $out"
# 1.0 in mxfp8: X = 0 - 8, scale code 119 ('w'), element 2^8 = e4m3 0x78 ('x').
echo "$out" | grep -q 'data: "xxxxxxxx' || fail "element bytes: $out"
echo "$out" | grep -qF 'data: "ww\000\000ww\000\000' || fail "scale bytes (2 of 4 per row): $out"
out2=$("$strata" quantize mxfp8_e4m3 '(200,64)' 1 --input - < "$ones"); status=$?
[ "$status" = 0 ] || fail "quantize from stdin exit $status"
echo "$out2" | grep -q 'placement: "(200,2):(2,1)"' || fail "row-major L_1 (the default): $out2"
out=$("$strata" quantize nvfp4 '(64,200)' 0 --scale-layout swizzled_128x4 --input "$ones"); status=$?
[ "$status" = 0 ] || fail "quantize blocked rank-2 exit $status: $out"
echo "$out" | grep -q 'adjacent_layouts: "((16,4),200):((0,1),4)"' || fail "blocked rank-2 S_0: $out"
out=$("$strata" quantize mxfp4 '(200,64)' 0 --input "$ones"); status=$?
[ "$status" = 1 ] || fail "indivisible blocked mode exit $status, want 1"
echo "$out" | grep -q '^ValueError: QuantizeBlockScaled: blocked dim 0 has extent 200' || fail "$out"
out=$("$strata" quantize mxfp8_e4m3 '(12800)' 0 --scale-layout swizzled_128x4 --input "$ones"); status=$?
[ "$status" = 1 ] || fail "swizzled rank 1 exit $status, want 1"
echo "$out" | grep -q '^ValueError: .*rank >= 2' || fail "$out"
out=$("$strata" quantize mxfp8_e4m3 '(32,25,16)' 0 --scale-layout swizzled_128x4 --input "$ones"); status=$?
[ "$status" = 1 ] || fail "swizzled batch-mode blocks exit $status, want 1"
echo "$out" | grep -q '^ValueError: .*got blocked dim 0' || fail "$out"
out=$("$strata" quantize float32 '(200,64)' 1 --input "$ones"); status=$?
[ "$status" = 1 ] && echo "$out" | grep -q '^ValueError: ' || fail "unknown format: $status $out"
out=$("$strata" quantize nvfp4 '(200,64)' 1 --scale-layout tiled --input "$ones"); status=$?
[ "$status" = 1 ] && echo "$out" | grep -q '^ValueError: .*--scale-layout' || fail "bad layout: $status $out"
out=$("$strata" quantize nvfp4 '(200,64)' x --input "$ones"); status=$?
[ "$status" = 1 ] || fail "non-integer mode exit $status, want 1"
out=$("$strata" quantize nvfp4 '(200,63)' 1 --input "$ones"); status=$?
[ "$status" = 2 ] && echo "$out" | grep -q 'wrong length' || fail "wrong length: $status $out"
head -c 100 "$ones" | "$strata" quantize nvfp4 '(200,64)' 1 --input - >/dev/null; status=$?
[ "$status" = 2 ] || fail "short stdin exit $status, want 2"
"$strata" quantize nvfp4 '(200,64)' 1 --input /nonexistent >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "unreadable input exit $status, want 2"
"$strata" quantize nvfp4 '(200,64)' 1 --input "$TEST_TMPDIR" >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "directory input exit $status, want 2"
"$strata" quantize nvfp4 '(200,64)' 1 >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "missing --input exit $status, want 2 (usage)"
"$strata" quantize nvfp4 '(200,64)' 1 --input "$ones" --frob 1 >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "unknown option exit $status, want 2 (usage)"
out=$(head -c 0 /dev/null | "$strata" quantize mxfp8_e4m3 '(0,64)' 1 --scale-layout swizzled_128x4 --input -); status=$?
[ "$status" = 0 ] || fail "empty quantize exit $status: $out"
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
echo "$out" | grep -q 'float32_4x8.textproto: ValueError: Squeeze: dim 0 has extent 4' || fail "$out"
out=$("$strata" view "$golden/float32_4x8.textproto" slice 1 0 8 -1); status=$?
[ "$status" = 1 ] || fail "negative step is a step, exit $status: $out"
"$strata" view "$golden/float32_4x8.textproto" frobnicate >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "unknown view op exit $status"
"$strata" view /nonexistent permute '(1,0)' >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "view of unreadable file exit $status"
out=$("$strata" view "$golden/float32_4x8.textproto" reshape '(2,16)'); status=$?
[ "$status" = 0 ] || fail "view reshape exit $status"
echo "$out" | grep -q 'placement: "(2,16):(16,1)"' || fail "reshape output: $out"

# Issue 16 item 6: a directory is an unreadable file (exit 2), for every command
# that reads one.
out=$("$strata" validate "$TEST_TMPDIR" 2>/dev/null); status=$?
[ "$status" = 2 ] || fail "validate of a directory exit $status, want 2: $out"
[ "$out" = "$TEST_TMPDIR: unreadable file" ] || fail "validate directory line: $out"
"$strata" view "$TEST_TMPDIR" permute '(0)' >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "view of a directory exit $status, want 2"
"$strata" layout --batch "$TEST_TMPDIR" >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "layout --batch of a directory exit $status, want 2"

# Issue 16 item 9: a text over kMaxTextBytes (64 MiB) is refused unread (exit 2,
# naming the limit); from standard input too.
big="$TEST_TMPDIR/big.textproto"
{ printf 'logical_dtype: "float32"\n#'; head -c 67108840 /dev/zero | tr '\0' x; } > "$big"
out=$("$strata" validate "$big"); status=$?
[ "$status" = 2 ] || fail "text over the limit exit $status, want 2"
[ "$out" = "$big: ResourceExhaustedError: strata validate: $big holds 67108866 bytes, above the limit kMaxTextBytes = 67108864 bytes (64 MiB) of a representation text" ] ||
  fail "text over the limit line: $out"
out=$(cat "$big" | "$strata" validate -); status=$?
[ "$status" = 2 ] || fail "stdin over the limit exit $status, want 2"
echo "$out" | grep -q '^-: ResourceExhaustedError: strata validate: - holds more than 67108864 bytes' ||
  fail "stdin over the limit line: $out"
"$strata" view "$big" permute '(0)' >/dev/null; status=$?
[ "$status" = 2 ] || fail "view of a text over the limit exit $status, want 2"
rm -f "$big"

# Issue 16 item 9: counts are checked before layouts are parsed (200000
# adjacent layouts that do not parse: the count error, exit 1).
many="$TEST_TMPDIR/many.textproto"
{ printf 'logical_dtype: "float32"\ncarriers { id: "c0" carrier_class: "host" dtype: "float32" size: 8 }\n'
  printf 'subtensors { storage_dtype: "float32" carrier: "c0" placement: "8:1" }\n'
  yes 'adjacent_layouts: "?"' | head -n 200000; } > "$many"
out=$("$strata" validate "$many"); status=$?
[ "$status" = 1 ] || fail "many adjacent layouts exit $status, want 1"
[ "$out" = "$many: ValueError: logical dtype float32 has the storage schema (float32) of 1 entries, which needs 0 adjacent layouts; got 200000" ] ||
  fail "many adjacent layouts line: $out"

# Issue 16 items 6 and 9: a carrier too large to allocate is a
# ResourceExhaustedError naming the carrier and the bytes (exit 1), never an
# allocation.
huge="$TEST_TMPDIR/huge.textproto"
for size in 4611686018427387904 9223372036854775807; do
  printf 'logical_dtype: "uint8"\ncarriers { id: "c0" carrier_class: "host" dtype: "uint8" size: %s }\nsubtensors { storage_dtype: "uint8" carrier: "c0" placement: "8:1" }\n' "$size" > "$huge"
  out=$("$strata" validate "$huge"); status=$?
  [ "$status" = 1 ] || fail "huge carrier $size exit $status, want 1"
  [ "$out" = "$huge: ResourceExhaustedError: carrier \"c0\": a host carrier of $size uint8 values needs $size bytes, above the limit HostCarrier::kMaxHostBytes = 70368744177664 bytes; it cannot be allocated" ] ||
    fail "huge carrier line: $out"
done

# Issue 16 item 9: a view whose dump with data would exceed kMaxTextBytes (a
# zero-filled carrier of 128 MiB beside one that holds data) is refused before
# any byte is copied (exit 1); it used to exhaust memory for large carriers.
wide="$TEST_TMPDIR/wide.textproto"
printf 'logical_dtype: "float32"\ncarriers { id: "d" carrier_class: "host" dtype: "uint8" size: 1 data: "a" }\ncarriers { id: "c0" carrier_class: "host" dtype: "float32" size: 33554432 }\nsubtensors { storage_dtype: "float32" carrier: "c0" placement: "8:1" }\n' > "$wide"
out=$("$strata" view "$wide" permute '(0)'); status=$?
[ "$status" = 1 ] || fail "view of a wide carrier with data exit $status, want 1"
echo "$out" | grep -q "^$wide: ResourceExhaustedError: strata view: the view's carriers hold more than 67108864 bytes of data" ||
  fail "view data bound line: $out"

# Issue 16 item 9: the OK line of a placement of 200000 modes is printed in
# linear time (Layout::mode(i) per mode was quadratic: minutes).
wide_rank="$TEST_TMPDIR/rank.textproto"
ones=$(yes 1 | head -n 200000 | paste -sd,)
zeros=$(yes 0 | head -n 200000 | paste -sd,)
printf 'logical_dtype: "float32"\ncarriers { id: "c0" carrier_class: "host" dtype: "float32" size: 1 }\nsubtensors { storage_dtype: "float32" carrier: "c0" placement: "(%s):(%s)" }\n' "$ones" "$zeros" > "$wide_rank"
out=$(timeout 60 "$strata" validate "$wide_rank"); status=$?
[ "$status" = 0 ] || fail "validate of 200000 modes exit $status, want 0"
[ "$out" = "$wide_rank: OK dtype=float32 levels=1 shape=($ones) snapshot=[c0@0]" ] || fail "validate of 200000 modes line"

# Issue 16 item 9: view arguments out of int64 range or malformed are exit 1
# with the argument named, never a crash.
f32="$golden/float32_4x8.textproto"
out=$("$strata" view "$f32" slice 0 0 4 99999999999999999999); status=$?
[ "$status" = 1 ] || fail "slice step beyond int64 exit $status"
[ "$out" = "$f32: ValueError: slice STEP: integer tuple \"99999999999999999999\": integer at position 0 does not fit in 64 bits" ] ||
  fail "slice step beyond int64 line: $out"
out=$("$strata" view "$f32" slice 0 '(1)' 4 1); status=$?
[ "$status" = 1 ] || fail "slice start tuple exit $status"
[ "$out" = "$f32: TypeError: slice START: \"(1)\" is not an integer" ] || fail "slice start tuple line: $out"
while IFS= read -r line; do
  read -ra a <<< "$line"
  for file in "$f32" "$golden/mxfp8_4x64.textproto"; do
    out=$("$strata" view "$file" "${a[@]}" 2>&1); status=$?
    [ "$status" = 1 ] || fail "view $line exit $status, want 1: $out"
    echo "$out" | grep -Eq "^$file: (TypeError|ValueError): " || fail "view $line line: $out"
  done
done <<'ARGS'
slice 0 -9223372036854775808 9223372036854775807 1
slice 0 0 9223372036854775807 9223372036854775807
slice 9223372036854775807 0 1 1
slice -9223372036854775808 0 1 1
slice 0 0 4 -9223372036854775808
slice 0 0 4 0
slice 0 -99999999999999999999 4 1
slice 1 x 2 1
slice 1 - 2 1
squeeze 9223372036854775807
squeeze -9223372036854775808
squeeze 1x
unsqueeze 9223372036854775807
unsqueeze -9223372036854775808
unsqueeze 99999999999999999999
permute (9223372036854775807,0)
permute (-9223372036854775808,0)
permute ((0),1)
permute (0,99999999999999999999)
reshape (9223372036854775807,9223372036854775807)
reshape (-9223372036854775808,-1)
reshape (99999999999999999999)
broadcast_to (9223372036854775807,9223372036854775807,4,8)
broadcast_to (-9223372036854775808,4,8)
broadcast_in_dim (9223372036854775807,4,64) (1,2)
broadcast_in_dim (4,8) (9223372036854775807,-9223372036854775808)
as_strided (4,8):(8,1) -9223372036854775808
as_strided (4,8):(-9223372036854775808,1) 0
as_strided (2,8):(9223372036854775807,1) 0
as_strided 9223372036854775807:9223372036854775807 0
as_strided (4,8):(8,1) 99999999999999999999
as_strided 1:1 9223372036854775807
ARGS

# strata import: safetensors files written by make_safetensors (tools/make_safetensors.cc).
make_safetensors="${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/make_safetensors"
st="$TEST_TMPDIR/safetensors"
mkdir -p "$st"
"$make_safetensors" "$st" || fail "make_safetensors"
cd "$st"
out=$("$strata" import moe.safetensors); status=$?
expected='embed: OK dtype=float32 levels=1 shape=(2,3) snapshot=[c0@0]
experts.down: OK dtype=mxfp4 levels=2 shape=(4,2,64) snapshot=[c0@0,c1@0]
norm: OK dtype=bfloat16 levels=1 shape=(8) snapshot=[c0@0]'
[ "$status" = 0 ] || fail "import moe exit $status, want 0"
[ "$out" = "$expected" ] || fail "import moe output: $out"
out=$("$strata" import hf_pair.safetensors); status=$?
expected='gate_up_proj: OK dtype=mxfp4 levels=2 shape=(2,32) snapshot=[c0@0,c1@0]
router.blocks: OK dtype=uint8 levels=1 shape=(1,16) snapshot=[c0@0]
codes: OK dtype=float4_e2m1fn levels=1 shape=(5) snapshot=[c0@0]
scalar: OK dtype=int64 levels=1 shape=() snapshot=[c0@0]
empty: OK dtype=float16 levels=1 shape=(0,7) snapshot=[c0@0]'
[ "$status" = 0 ] || fail "import hf_pair exit $status, want 0"
[ "$out" = "$expected" ] || fail "import hf_pair output: $out"
out=$("$strata" import - < moe.safetensors); status=$?
[ "$status" = 0 ] && [ "$(echo "$out" | wc -l)" = 3 ] || fail "import from standard input: $status $out"
out=$("$strata" import bad_tensors.safetensors); status=$?
[ "$status" = 1 ] || fail "import bad_tensors exit $status, want 1"
[ "$(echo "$out" | wc -l)" = 6 ] || fail "one line per tensor: $out"
echo "$out" | grep -qx 'good: OK dtype=uint8 levels=1 shape=(2) snapshot=\[c0@0\]' || fail "good tensor: $out"
echo "$out" | grep -q '^u16: ValueError: ReadSafetensors: tensor "u16": unknown dtype "U16"' || fail "u16: $out"
echo "$out" | grep -q '^short: ValueError: .*shape (2) of F32 needs 8 bytes; data_offsets \[4, 8\] hold 4$' || fail "short: $out"
echo "$out" | grep -q '^negative: ValueError: .*negative$' || fail "negative: $out"
echo "$out" | grep -q '^overflow: ValueError: .*more values than int64 holds$' || fail "overflow: $out"
echo "$out" | grep -q '^pair: ValueError: ReadSafetensors: MXFP4 pair "pair" ' || fail "pair: $out"
for f in truncated lying_length cut_data overlap out_of_range hole not_json not_object duplicate_key; do
  out=$("$strata" import "$f.safetensors" 2>/dev/null); status=$?
  [ "$status" = 2 ] || fail "import $f exit $status, want 2"
  [ "$(echo "$out" | wc -l)" = 1 ] || fail "import $f: one line: $out"
  echo "$out" | grep -q "^$f.safetensors: ValueError: ReadSafetensors: not a safetensors file: " ||
    fail "import $f line: $out"
done
# checkpoints.md section 1: a GGUF split set prints the file beside each tensor;
# a set whose split.tensors.count lies is a file-level error (exit 2).
out=$("$strata" import "$golden/gguf/split"); status=$?
[ "$status" = 0 ] || fail "import split set exit $status, want 0: $out"
echo "$out" | grep -q '^a.f32 \[model-00001-of-00003.gguf\]: OK dtype=float32 levels=1 shape=(3,5)' ||
  fail "split set line: $out"
echo "$out" | grep -q '^b.q8_0 \[model-00002-of-00003.gguf\]: OK dtype=q8_0 levels=2 shape=(4,64)' ||
  fail "split set q8_0 line: $out"
"$strata" import "$golden/gguf/split_mismatch/model-00002-of-00002.gguf" >/dev/null 2>"$TEST_TMPDIR/split.err"; status=$?
[ "$status" = 2 ] && grep -q '4 tensors expected but 3 found' "$TEST_TMPDIR/split.err" ||
  fail "lying split set: exit $status $(cat "$TEST_TMPDIR/split.err")"
"$strata" import "$st/missing.safetensors" >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "import missing file exit $status, want 2"
"$strata" import "$st" >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "import a directory exit $status, want 2"
# --dump: mapped carriers naming the file as given; replayable; views of it.
"$strata" import moe.safetensors --dump experts.down > moe_down.textproto; status=$?
[ "$status" = 0 ] || fail "import --dump exit $status"
grep -q 'carrier_class: "mapped"' moe_down.textproto || fail "dump carriers: $(cat moe_down.textproto)"
grep -q 'file: "moe.safetensors"' moe_down.textproto || fail "dump file: $(cat moe_down.textproto)"
grep -q 'file_offset: 343' moe_down.textproto || fail "dump file_offset: $(cat moe_down.textproto)"
grep -q 'data:' moe_down.textproto && fail "a mapped dump holds no data"
grep -q 'adjacent_layouts: "(4,2,(32,2)):(1,4,(0,8))"' moe_down.textproto || fail "dump S_0: $(cat moe_down.textproto)"
out=$("$strata" validate moe_down.textproto); status=$?
[ "$status" = 0 ] || fail "validate the dump exit $status"
[ "$out" = 'moe_down.textproto: OK dtype=mxfp4 levels=2 shape=(4,2,64) snapshot=[c0@0,c1@0]' ] || fail "validate dump: $out"
out=$("$strata" view moe_down.textproto slice 0 1 2 1); status=$?
[ "$status" = 0 ] || fail "view of the dump exit $status: $out"
echo "$out" | grep -q 'placement: "(1,2,(32,2)):(0,64,(1,32))"' || fail "expert view: $out"
cp moe_down.textproto ../moe_down.textproto
out=$(cd .. && "$strata" validate moe_down.textproto); status=$?
[ "$status" = 1 ] || fail "replay without the file exit $status, want 1"
echo "$out" | grep -q '^moe_down.textproto: ValueError: carrier "c0": .*moe.safetensors' || fail "missing file line: $out"
head -c 300 moe.safetensors > short.safetensors
sed 's/moe.safetensors/short.safetensors/' moe_down.textproto > short.textproto
out=$("$strata" validate short.textproto); status=$?
[ "$status" = 1 ] || fail "replay of a short file exit $status, want 1"
echo "$out" | grep -q 'ValueError: carrier "c0": MappedRegion: "short.safetensors" holds 300 bytes, shorter than the 599' ||
  fail "short file line: $out"
sed 's/file_offset: 343/file_offset: 343 data: "x"/' moe_down.textproto > data.textproto
out=$("$strata" validate data.textproto); status=$?
[ "$status" = 1 ] && echo "$out" | grep -q 'ValueError: carrier "c0": a mapped carrier of a file never holds data' ||
  fail "mapped with data: $status $out"
# With no file, a mapped carrier is an anonymous mapping holding its data (a
# relayout's scales beside a mapped weight): it validates; without data it is
# refused.
printf 'logical_dtype: "uint8"\ncarriers { id: "c0" carrier_class: "mapped" dtype: "uint8" size: 2 data: "ab" }\nsubtensors { storage_dtype: "uint8" carrier: "c0" placement: "2:1" }\n' > anonymous.textproto
out=$("$strata" validate anonymous.textproto); status=$?
[ "$status" = 0 ] && echo "$out" | grep -q 'OK dtype=uint8' || fail "anonymous mapped: $status $out"
sed 's/ data: "ab"//' anonymous.textproto > no_bytes.textproto
out=$("$strata" validate no_bytes.textproto); status=$?
[ "$status" = 1 ] && echo "$out" | grep -q 'anonymous mapping' || fail "anonymous mapped without data: $status $out"
out=$("$strata" import moe.safetensors --dump embed --data); status=$?
[ "$status" = 0 ] || fail "import --dump --data exit $status"
echo "$out" | grep -q 'carrier_class: "host"' && echo "$out" | grep -q 'data: ' || fail "dump --data: $out"
echo "$out" | "$strata" validate - >/dev/null || fail "the --data dump replays"
out=$("$strata" import moe.safetensors --dump nothing); status=$?
[ "$status" = 1 ] || fail "--dump of an unknown name exit $status, want 1"
[ "$out" = 'nothing: ValueError: strata import: moe.safetensors holds no tensor named "nothing"' ] || fail "unknown name: $out"
out=$("$strata" import bad_tensors.safetensors --dump u16); status=$?
[ "$status" = 1 ] && echo "$out" | grep -q '^u16: ValueError: ' || fail "--dump of a refused tensor: $status $out"
"$strata" import truncated.safetensors --dump a >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "--dump of a non-safetensors file exit $status, want 2"
"$strata" import moe.safetensors --data >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "import usage exit $status, want 2"
cd - >/dev/null

# strata import of a GGUF file (told by its magic, whatever its name) and
# strata shard (formats.md sections 4 and 5).
gguf="${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/golden/gguf"
cp "$gguf/mixed_v3.gguf" "$TEST_TMPDIR/model.bin"
out=$("$strata" import "$TEST_TMPDIR/model.bin"); status=$?
[ "$status" = 0 ] || fail "import gguf exit $status"
echo "$out" | grep -q '^w_q8: OK dtype=q8_0 levels=2 shape=(4,64) snapshot=\[c0@0,c1@0\]$' || fail "gguf q8_0 line: $out"
echo "$out" | grep -q '^w_q4: OK dtype=q4_0 levels=2 shape=(3,96)' || fail "gguf q4_0 line: $out"
echo "$out" | grep -q '^w_mxfp4: OK dtype=mxfp4 levels=2 shape=(2,64)' || fail "gguf mxfp4 line: $out"
out=$("$strata" import "$gguf/hostile/type_99.gguf"); status=$?
[ "$status" = 1 ] || fail "gguf per-tensor error exit $status, want 1"
echo "$out" | grep -q '^mystery: ValueError: ReadGguf: tensor "mystery": ggml type 99' || fail "type 99 line: $out"
out=$("$strata" import "$gguf/hostile/overlap.gguf"); status=$?
[ "$status" = 2 ] || fail "gguf file error exit $status, want 2"
echo "$out" | grep -q 'ValueError: ReadGguf: not a GGUF file: tensors "a" and "b" overlap' || fail "overlap line: $out"
"$strata" import "$TEST_TMPDIR/model.bin" --dump w_q4 > "$TEST_TMPDIR/q4.textproto" || fail "gguf dump"
grep -q 'carrier_class: "mapped"' "$TEST_TMPDIR/q4.textproto" &&
  grep -q 'placement: "(3,((16,2),3)):(108,((2,1),36))"' "$TEST_TMPDIR/q4.textproto" || fail "q4_0 placement"
"$strata" validate "$TEST_TMPDIR/q4.textproto" | grep -q ': OK dtype=q4_0' || fail "the gguf dump replays"
out=$("$strata" shard "$TEST_TMPDIR/model.bin" w_q4 1 3); status=$?
expected=$'granule=32 extent=96\npart 0: [0,32) OK dtype=q4_0 levels=2 shape=(3,32)\npart 1: [32,64) OK dtype=q4_0 levels=2 shape=(3,32)\npart 2: [64,96) OK dtype=q4_0 levels=2 shape=(3,32)\npad=96'
[ "$status" = 0 ] && [ "$out" = "$expected" ] || fail "shard gguf: $status $out"
"$strata" dump --example fp8_block128x128_576x256 > "$TEST_TMPDIR/ds.textproto"
out=$("$strata" shard "$TEST_TMPDIR/ds.textproto" - 0 4); status=$?
expected=$'granule=128 extent=576\npart 0: [0,256) OK dtype=fp8_e4m3_block128x128 levels=2 shape=(256,256)\npart 1: [256,384) OK dtype=fp8_e4m3_block128x128 levels=2 shape=(128,256)\npart 2: [384,512) OK dtype=fp8_e4m3_block128x128 levels=2 shape=(128,256)\npart 3: [512,576) OK dtype=fp8_e4m3_block128x128 levels=2 shape=(64,256)\npad=1024'
[ "$status" = 0 ] && [ "$out" = "$expected" ] || fail "shard dump: $status $out"
out=$("$strata" shard "$TEST_TMPDIR/ds.textproto" - 0 8); status=$?
[ "$status" = 1 ] && echo "$out" | sed -n 2p | grep -q '^ValueError: PlanShards: .*granule=128' || fail "shard too many parts: $status $out"
"$strata" shard "$TEST_TMPDIR/ds.textproto" - 0 >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "shard usage exit $status, want 2"
# Issue 39: DIM and PARTS are decimals exactly ('+1', ' 1', '1 ', '0x1' are usage errors).
for bad in '+1' ' 1' '1 ' '0x1' '1.0' '' '-' '(1)'; do
  "$strata" shard "$TEST_TMPDIR/ds.textproto" - "$bad" 4 >/dev/null 2>&1; status=$?
  [ "$status" = 2 ] || fail "shard DIM '$bad' exit $status, want 2"
  "$strata" shard "$TEST_TMPDIR/ds.textproto" - 0 "$bad" >/dev/null 2>&1; status=$?
  [ "$status" = 2 ] || fail "shard PARTS '$bad' exit $status, want 2"
done
out=$("$strata" shard "$TEST_TMPDIR/ds.textproto" - -2 4); status=$?
[ "$status" = 0 ] && echo "$out" | head -1 | grep -q '^granule=128 extent=576$' || fail "shard DIM -2: $status $out"

# strata shard CHECKPOINT --rules FILE --parts N (checkpoints.md section 3): one line per
# tensor, the counts; exit 1 when a tensor is refused (with its padding), 2 for a rules
# file line that is not REGEX DIM (named) or arguments of another form.
split_set=tests/golden/gguf/split
printf '# column parallel\nb\\.q8_0 0\na\\.f32 0  # rows\n' > "$TEST_TMPDIR/rules.txt"
out=$("$strata" shard "$split_set" --rules "$TEST_TMPDIR/rules.txt" --parts 2); status=$?
expected=$'a.f32 dim=0 granule=1 parts=2 OK\nb.q8_0 dim=0 granule=1 parts=2 OK\nc.f16 replicated\n3 tensors: 2 split, 1 replicated, 0 refused'
[ "$status" = 0 ] && [ "$out" = "$expected" ] || fail "shard --rules: $status $out"
out=$("$strata" shard "$split_set" --rules "$TEST_TMPDIR/rules.txt" --parts 4); status=$?
[ "$status" = 1 ] && echo "$out" | head -1 | grep -q '^a.f32 dim=0 granule=1 parts=4 ValueError: .* pad=4$' &&
  [ "$(echo "$out" | tail -1)" = "3 tensors: 1 split, 1 replicated, 1 refused" ] || fail "shard --rules refused: $status $out"
printf 'a 0\nb\n' > "$TEST_TMPDIR/bad_rules.txt"
out=$("$strata" shard "$split_set" --rules "$TEST_TMPDIR/bad_rules.txt" --parts 2 2>&1); status=$?
[ "$status" = 2 ] && echo "$out" | grep -q 'line 2 ("b"): not REGEX DIM' || fail "shard bad rules: $status $out"
printf '(a 0\n' > "$TEST_TMPDIR/bad_regex.txt"
out=$("$strata" shard "$split_set" --rules "$TEST_TMPDIR/bad_regex.txt" --parts 2 2>&1); status=$?
[ "$status" = 2 ] && echo "$out" | grep -q 'line 1 .*not RE2' || fail "shard bad regex: $status $out"
for bad in x 0 -1 +2; do
  "$strata" shard "$split_set" --rules "$TEST_TMPDIR/rules.txt" --parts "$bad" >/dev/null 2>&1; status=$?
  [ "$status" = 2 ] || fail "shard --parts '$bad' exit $status, want 2"
done
# BLOCKED_MODE is '-' where formats.md's table fixes the blocks, an exact integer elsewhere.
ones64="$TEST_TMPDIR/ones_4x64.f32"
/usr/bin/printf '\x00\x00\x80\x3f%.0s' $(seq 256) > "$ones64"
for fmt in fp8_e4m3_rowwise fp8_e4m3_tensorwise fp8_e4m3_block128x128 q8_0 q4_0; do
  for mode in -1 1 0 +1; do
    out=$("$strata" quantize "$fmt" '(4,64)' "$mode" --input "$ones64"); status=$?
    [ "$status" = 1 ] && echo "$out" | grep -q "^ValueError: strata quantize: $fmt fixes its blocks .*BLOCKED_MODE is '-'" ||
      fail "quantize $fmt BLOCKED_MODE $mode: $status $out"
  done
  out=$("$strata" quantize "$fmt" '(4,64)' - --input "$ones64"); status=$?
  [ "$status" = 0 ] || fail "quantize $fmt BLOCKED_MODE -: $status $out"
done
for mode in '+1' ' 1' '(1)' '1.0'; do
  out=$("$strata" quantize mxfp8_e4m3 '(4,64)' "$mode" --input "$ones64"); status=$?
  [ "$status" = 1 ] && echo "$out" | grep -q '^TypeError: strata quantize: BLOCKED_MODE: .* is not an integer' ||
    fail "quantize mxfp8 BLOCKED_MODE '$mode': $status $out"
done
out=$("$strata" quantize mxfp8_e4m3 '(4,64)' -1 --input "$ones64"); status=$?
[ "$status" = 0 ] || fail "quantize mxfp8 BLOCKED_MODE -1: $status $out"

# strata dequantize (values.md section 3).
out=$("$strata" quantize mxfp8_e4m3 '(4,64)' 1 --input "$ones64" | "$strata" dequantize - - --dtype bfloat16 --out "$TEST_TMPDIR/ones.npy"); status=$?
[ "$status" = 0 ] && [ "$out" = '- dtype=mxfp8_e4m3 shape=(4,64) -> bfloat16: min=1 max=1 absmax=1 mean=1 nan=0 inf=0' ] ||
  fail "dequantize dump: $status $out"
[ "$(head -c 6 "$TEST_TMPDIR/ones.npy" | tail -c 5)" = NUMPY ] && [ "$(wc -c < "$TEST_TMPDIR/ones.npy")" = $((128 + 512)) ] ||
  fail "dequantize npy: $(wc -c < "$TEST_TMPDIR/ones.npy") bytes"
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  /usr/bin/python3 -c 'import numpy, sys; a = numpy.load(sys.argv[1]); assert a.dtype == numpy.uint16 and a.shape == (4, 64) and (a == 0x3F80).all(), a' "$TEST_TMPDIR/ones.npy" ||
    fail "numpy.load of the .npy"
fi
out=$("$strata" dequantize "$TEST_TMPDIR/model.bin" w_q8); status=$?
[ "$status" = 0 ] && echo "$out" | grep -qE '^w_q8 dtype=q8_0 shape=\(4,64\) -> float32: min=[-0-9.e]+ max=[-0-9.e]+ absmax=[0-9.e]+ mean=[-0-9.e]+ nan=0 inf=0$' ||
  fail "dequantize gguf: $status $out"
out=$("$strata" dequantize "$TEST_TMPDIR/model.bin" nothing); status=$?
[ "$status" = 1 ] && echo "$out" | grep -q '^nothing: ValueError: strata dequantize: .* holds no tensor named "nothing"$' || fail "dequantize absent: $status $out"
out=$("$strata" dequantize "$TEST_TMPDIR/model.bin" w_q8 --dtype int8); status=$?
[ "$status" = 1 ] && echo "$out" | grep -q '^w_q8: TypeError: ' || fail "dequantize --dtype int8: $status $out"
"$strata" dequantize "$ones64" w >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "dequantize of a non-checkpoint exit $status"
"$strata" dequantize "$TEST_TMPDIR/model.bin" >/dev/null 2>&1; status=$?
[ "$status" = 2 ] || fail "dequantize usage exit $status"
out=$(printf 'logical_dtype: "float32"\ncarriers { id: "c0" carrier_class: "host" dtype: "float32" size: 0 }\nsubtensors { storage_dtype: "float32" carrier: "c0" placement: "0:1" }' | "$strata" dequantize - -); status=$?
[ "$status" = 0 ] && [ "$out" = '- dtype=float32 shape=(0) -> float32: min=nan max=nan absmax=nan mean=nan nan=0 inf=0' ] ||
  fail "dequantize empty: $status $out"

if [ "$failures" -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "strata CLI: all checks passed"
