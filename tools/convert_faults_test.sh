#!/usr/bin/env bash
# Fault behaviour of `strata convert` (shared/design/checkpoints.md section 2): exit statuses
# 0 / 1 / 2, an existing destination left alone without --overwrite, the source never written,
# and no incomplete file under the destination's final names after a full disk, a write
# error or a signal. Outputs are compared tensor for tensor with the independent numpy
# reference, tools/peer/checkpoint_reference.py.
#
#   tools/convert_faults_test.sh [STRATA [CHECKPOINT_REFERENCE]]
#
# (the Bazel sh_test passes both; STRATA=... REFERENCE=... PYTHON=... in the environment
# work too). One line per check: "ok - WHAT", "skip - WHAT: why" or "FAIL - WHAT: details";
# exit 1 when any failed, else 0. Every temporary file lies in one `mktemp -d` directory,
# removed at the end; every strata run is bounded by `timeout`.
set -u

STRATA=${STRATA:-${1:-/tmp/strata-bin/strata}}
REFERENCE=${REFERENCE:-${2:-/work/main/tools/peer/checkpoint_reference.py}}
PYTHON=${PYTHON:-/usr/bin/python3}
absolute() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
STRATA=$(absolute "$STRATA")
REFERENCE=$(absolute "$REFERENCE")

failures=0
ok() { echo "ok - $*"; }
skip() { echo "skip - $*"; }
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
# A check collects its problems, then report prints its one line.
problems=
problem() { problems+="${problems:+; }$*"; }
report() {
  if [ -z "$problems" ]; then ok "$1"; else fail "$1: $problems"; fi
  problems=
}

T=$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/convert_faults.XXXXXX") || exit 1
bg='' pid=''  # the background conversion: its timeout process, and strata's PID once known
cleanup() {
  if [ -n "$bg" ] && kill -0 "$bg" 2>/dev/null; then
    [ -n "$pid" ] && descends_from "$pid" "$bg" && kill -KILL "$pid"
    kill -TERM "$bg" 2>/dev/null  # timeout passes it on
    wait "$bg" 2>/dev/null
  fi
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------
# Helpers.

# run_convert ARGS...: `strata convert ARGS` (bounded), its exit status in $status, its
# output in $T/stdout and $T/stderr.
run_convert() {
  timeout -k 5 120 "$STRATA" convert "$@" >"$T/stdout" 2>"$T/stderr"
  status=$?
}
stderr_text() { head -c 400 "$T/stderr" | tr '\n' ' '; }

# state PATH: every entry under PATH and every file's sha256 ("absent" if none): equal
# before and after means untouched.
state() {
  if [ -d "$1" ]; then
    (cd "$1" && find . -printf '%y %p\n' | LC_ALL=C sort &&
      find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
  elif [ -e "$1" ]; then
    sha256sum <"$1"
  else
    echo absent
  fi
}

# temporaries DIR: strata's temporaries (*.strata-tmp-*) directly in DIR, one a line.
temporaries() { (cd "$1" && find . -mindepth 1 -maxdepth 1 -name '*.strata-tmp-*' | LC_ALL=C sort); }

# src_untouched WHAT SRC STATE: SRC still has the state taken before.
src_untouched() {
  if [ "$(state "$2")" = "$3" ]; then ok "$1: SRC unchanged"; else fail "$1: SRC changed"; fi
}

# same_as_reference OUT REF: OUT (a Hugging Face directory or a .gguf) holds exactly the
# tensors of REF (the reference's --convert output): names, dtypes, shapes and bytes; a
# directory also REF's other files (JSON compared parsed). Prints the differences.
same_as_reference() {
  timeout -k 5 120 "$PYTHON" - "$REFERENCE" "$1" "$2" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]))
import checkpoint_reference as cr

out, ref = sys.argv[2], sys.argv[3]
diffs = []
try:
    want = cr.read_hf_directory(ref)["tensors"]
    got = (cr.read_gguf(out) if out.endswith(".gguf") else cr.read_hf_directory(out))["tensors"]
    for name in sorted(set(want) | set(got)):
        if name not in got:
            diffs.append("%s missing" % name)
        elif name not in want:
            diffs.append("%s not in the reference" % name)
        elif (got[name][0], tuple(got[name][1])) != (want[name][0], tuple(want[name][1])):
            diffs.append("%s is %s %s, want %s %s" % (name, got[name][0], tuple(got[name][1]),
                                                      want[name][0], tuple(want[name][1])))
        elif bytes(cr._data(got[name][2])) != bytes(cr._data(want[name][2])):
            diffs.append("%s: other bytes" % name)
    if not out.endswith(".gguf"):
        def others(d):
            return sorted(f for f in os.listdir(d) if not f.endswith(".safetensors")
                          and not f.endswith(".safetensors.index.json"))
        if others(out) != others(ref):
            diffs.append("other files %s, want %s" % (others(out), others(ref)))
        for f in set(others(out)) & set(others(ref)):
            a, b = (open(os.path.join(d, f), "rb").read() for d in (out, ref))
            if (json.loads(a) != json.loads(b)) if f.endswith(".json") else a != b:
                diffs.append("%s differs" % f)
except Exception as e:  # an unreadable output is a difference too
    diffs.append("%s: %s" % (type(e).__name__, e))
print("; ".join(diffs[:4]) + (" (%d differences)" % len(diffs) if len(diffs) > 4 else ""))
sys.exit(1 if diffs else 0)
PY
}

# compare WHAT OUT REF: a problem when OUT is not the reference's REF.
compare() {
  local diffs
  diffs=$(same_as_reference "$2" "$3") || problem "$1 differs from the reference: $diffs"
}

# start_and_stop SETUP SRC DST ARGS...: runs SETUP, then starts `strata convert SRC DST
# ARGS` in the background ($bg: its timeout process) and stops it with SIGSTOP as soon as
# its temporary DST.strata-tmp-PID-N holds written bytes while DST's final file does not
# exist yet: mid-way. Sets $pid (strata's, from the temporary's name) and $temp. Should a
# conversion finish before it is caught (a much faster machine), tries again, 3 times in
# all; returns 1 (with a problem) if none was.
start_and_stop() {
  local setup=$1 src=$2 dst=$3 f g
  shift 3
  for _ in 1 2 3; do
    rm -rf "$dst"
    $setup
    timeout -s KILL 60 "$STRATA" convert "$src" "$dst" "$@" >"$T/bg.stdout" 2>"$T/bg.stderr" &
    bg=$!
    temp='' pid=''
    for _ in $(seq 2000); do  # up to ~10 s
      for f in "$dst".strata-tmp-*; do
        [ -f "$f" ] && [ -s "$f" ] && temp=$f            # a .gguf's temporary file
        for g in "$f"/*; do [ -s "$g" ] && temp=$f; done  # a staging directory's
      done
      [ -n "$temp" ] && break
      kill -0 "$bg" 2>/dev/null || break
      sleep 0.005
    done
    if [ -n "$temp" ]; then
      pid=${temp##*.strata-tmp-}
      pid=${pid%%-*}
      if ! descends_from "$pid" "$bg"; then
        problem "its temporary ${temp##*/} does not name the converting process"
        wait "$bg" 2>/dev/null
        bg=''
        return 1
      fi
      kill -STOP "$pid"
      if [ -e "$temp" ] && [ ! -e "$dst/model.safetensors" ] && [ ! -f "$dst" ]; then
        return 0
      fi
      kill -CONT "$pid" 2>/dev/null
    fi
    wait "$bg" 2>/dev/null  # it finished before it could be stopped: again
    bg=''
  done
  problem "no conversion could be caught mid-way (3 tries)"
  return 1
}

# descends_from PID ANCESTOR: PID is ANCESTOR's child, grandchild, ... (a few levels).
descends_from() {
  local p=$1
  for _ in 1 2 3 4 5; do
    p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null) || return 1
    [ "$p" = "$2" ] && return 0
  done
  return 1
}

# signal_and_wait SIGNAL: sends SIGNAL to the stopped strata, lets it go on, and waits:
# $status is what the shell sees (timeout dies of the signal its child died of).
signal_and_wait() {
  kill -"$1" "$pid"
  kill -CONT "$pid" 2>/dev/null
  { wait "$bg"; } 2>/dev/null
  status=$?
  bg=''
}

# ---------------------------------------------------------------------------------------
# Sources and the reference's outputs, made once.

[ -x "$STRATA" ] || { echo "FAIL - no strata binary at $STRATA"; exit 1; }
SRC=$T/src  # ~8 MiB DeepSeek-V3-style FP8 directory, 5 shards
BIG=$T/big  # ~64 MiB: a conversion takes long enough to be caught mid-way
# make_source DIR SIZE: the reference's DeepSeek-like directory, and DIR.ref its --convert
# --to bfloat16 output, DIR.ref.txt what the reference printed.
make_source() {
  timeout 120 "$PYTHON" "$REFERENCE" --make-deepseek "$1" --bytes "$2" >/dev/null ||
    { echo "FAIL - cannot make the source $1"; exit 1; }
  timeout 120 "$PYTHON" "$REFERENCE" --convert "$1" "$1.ref" --to bfloat16 >"$1.ref.txt" ||
    { echo "FAIL - the reference cannot convert $1"; exit 1; }
}
make_source "$SRC" 8MiB
make_source "$BIG" 64MiB
src_state=$(state "$SRC")
big_state=$(state "$BIG")

# ---------------------------------------------------------------------------------------
# The checks.

# 1. A plain conversion: exit 0, what the reference writes, one "wrote" line per file and
# the summary's counts; also as GGUF and sharded.
check_plain_success() {
  local d=$T/c1 counts shards
  mkdir "$d"
  run_convert "$SRC" "$d/out" --to bfloat16
  [ "$status" = 0 ] || problem "exit $status, want 0: $(stderr_text)"
  compare "DST" "$d/out" "$SRC.ref"
  grep -qxF "wrote $d/out/model.safetensors" "$T/stdout" || problem "no 'wrote' line: $(head -c 300 "$T/stdout")"
  # The reference prints "N converted, M copied, D dropped, R refused, ...".
  counts=$(sed -n 's/^\([0-9]*\) converted, \([0-9]*\) copied, [0-9]* dropped, \([0-9]*\) refused.*/converted \1, copied \2, refused \3;/p' "$SRC.ref.txt")
  grep -q "^$counts " "$T/stdout" || problem "no summary line '$counts ...': $(tail -n 1 "$T/stdout")"
  [ -z "$(temporaries "$d")" ] || problem "temporaries left: $(temporaries "$d")"
  report "plain success: --to bfloat16 exits 0 and writes the reference's tensors and files"

  run_convert "$SRC" "$d/out.gguf" --to bfloat16
  [ "$status" = 0 ] || problem "exit $status, want 0: $(stderr_text)"
  compare "DST" "$d/out.gguf" "$SRC.ref"
  [ -z "$(temporaries "$d")" ] || problem "temporaries left: $(temporaries "$d")"
  report "plain success: a .gguf DST exits 0 and holds the reference's tensors"

  run_convert "$SRC" "$d/sharded" --to bfloat16 --max-shard-size 4MB
  [ "$status" = 0 ] || problem "exit $status, want 0: $(stderr_text)"
  [ -f "$d/sharded/model.safetensors.index.json" ] || problem "no model.safetensors.index.json"
  shards=("$d"/sharded/model-0000[1-9]-of-0000[1-9].safetensors)
  [ "${#shards[@]}" -ge 4 ] || problem "want at least 4 shards of <= 4 MB: ${shards[*]##*/}"
  compare "DST" "$d/sharded" "$SRC.ref"
  report "plain success: --max-shard-size 4MB writes shards and an index with the reference's tensors"

  run_convert "$SRC" "$d/slash/" --to bfloat16
  [ "$status" = 0 ] || problem "exit $status, want 0: $(stderr_text)"
  compare "DST" "$d/slash" "$SRC.ref"
  [ -z "$(temporaries "$d")" ] || problem "temporaries left: $(temporaries "$d")"
  report "plain success: a new directory DST given as DIR/ (a trailing slash) exits 0 and is written"
  src_untouched "plain success" "$SRC" "$src_state"
}

# 2. A full disk: a 4 MiB tmpfs (the output is ~16 MB) as DST's parent, in a private mount
# namespace. Exit 2, the message names a file of DST and ENOSPC, the tmpfs as it was.
check_full_disk() {
  local mnt=$T/mnt res=$T/full_disk
  mkdir "$mnt" "$res"
  cat >"$T/full_disk.sh" <<'NS'
# Inside a private mount namespace: full_disk.sh MNT RESULT OLD NAME ARGS...
mnt=$1 res=$2 old=$3 name=$4
shift 4
state() {
  (cd "$1" && find . -printf '%y %p\n' | LC_ALL=C sort &&
    find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
}
mount -t tmpfs -o size=4m tmpfs "$mnt" || exit 99
case $old in
  dir) mkdir "$mnt/$name" && echo old >"$mnt/$name/old.txt" ;;
  file) echo old >"$mnt/$name" ;;
esac
state "$mnt" >"$res/before"
"$@" >"$res/stdout" 2>"$res/stderr"
echo $? >"$res/status"
state "$mnt" >"$res/after"
NS
  local probe=(unshare -m) case_ what old name args
  if ! timeout 20 unshare -m sh -c 'mount -t tmpfs -o size=4m tmpfs "$1"' sh "$mnt" 2>/dev/null; then
    probe=(unshare -rm)
    if ! timeout 20 unshare -rm sh -c 'mount -t tmpfs -o size=4m tmpfs "$1"' sh "$mnt" 2>/dev/null; then
      skip "full disk: cannot mount a tmpfs here"
      return
    fi
  fi
  # WHAT|OLD|NAME|ARGS: what DST holds before (none, dir, file), its name, more options.
  for case_ in "a directory DST|none|out|" "a .gguf DST|none|out.gguf|" \
      "an existing directory DST with --overwrite (kept)|dir|out|--overwrite" \
      "an existing .gguf DST with --overwrite (kept)|file|out.gguf|--overwrite" \
      "a sharded DST (--max-shard-size 1MB)|none|out|--max-shard-size 1MB"; do
    IFS='|' read -r what old name args <<<"$case_"
    rm -f "$res"/*
    # shellcheck disable=SC2086  # $args: options split into words
    timeout -k 5 120 "${probe[@]}" bash "$T/full_disk.sh" "$mnt" "$res" "$old" "$name" \
      timeout -k 5 100 "$STRATA" convert "$SRC" "$mnt/$name" --to bfloat16 $args
    status=$(cat "$res/status" 2>/dev/null || echo "none (the namespace script failed)")
    [ "$status" = 2 ] || problem "exit $status, want 2"
    case $name in
      *.gguf) grep -qF "\"$mnt/$name\"" "$res/stderr" || problem "stderr does not name $mnt/$name" ;;
      *) grep -qF "\"$mnt/$name/" "$res/stderr" || problem "stderr does not name a file of $mnt/$name/" ;;
    esac
    grep -q 'No space left on device' "$res/stderr" || problem "stderr does not say 'No space left on device'"
    cmp -s "$res/before" "$res/after" ||
      problem "the tmpfs changed: $(diff "$res/before" "$res/after" | grep '^[<>]' | head -n 4 | tr '\n' ' ')"
    [ -z "$problems" ] || problem "stderr: $(head -c 300 "$res/stderr" | tr '\n' ' ')"
    report "full disk: $what exits 2 naming the file and ENOSPC, leaves the 4 MiB tmpfs as it was"
  done
  src_untouched "full disk" "$SRC" "$src_state"
}

# 3. A write error: `ulimit -f 1024` (1 MiB) with SIGXFSZ ignored, so that write() fails
# with EFBIG. Exit 2, the message names the file and "File too large", DST's parent as it
# was (it holds another file, and in one case the old DST).
check_write_error() {
  local d=$T/c3 case_ what old name args before
  for case_ in "a directory DST|none|out|" "a .gguf DST|none|out.gguf|" \
      "an existing directory DST with --overwrite (kept)|dir|out|--overwrite"; do
    IFS='|' read -r what old name args <<<"$case_"
    rm -rf "$d"
    mkdir "$d"
    echo keep >"$d/keep.txt"
    [ "$old" = dir ] && mkdir "$d/$name" && echo old >"$d/$name/old.txt"
    before=$(state "$d")
    # shellcheck disable=SC2086  # $args: options split into words
    (ulimit -f 1024 && trap '' XFSZ &&
      exec timeout -k 5 120 "$STRATA" convert "$SRC" "$d/$name" --to bfloat16 $args) \
      >"$T/stdout" 2>"$T/stderr"
    status=$?
    [ "$status" = 2 ] || problem "exit $status, want 2"
    case $name in
      *.gguf) grep -qF "\"$d/$name\"" "$T/stderr" || problem "stderr does not name $d/$name" ;;
      *) grep -qF "\"$d/$name/" "$T/stderr" || problem "stderr does not name a file of $d/$name/" ;;
    esac
    grep -q 'File too large' "$T/stderr" || problem "stderr does not say 'File too large'"
    [ "$(state "$d")" = "$before" ] || problem "DST's parent changed: $(ls -A "$d" | tr '\n' ' ')"
    [ -z "$problems" ] || problem "stderr: $(stderr_text)"
    report "write error: $what exits 2 naming the file and EFBIG, leaves DST's parent as it was"
  done
  src_untouched "write error" "$SRC" "$src_state"
}

# 4. An existing DST: untouched without --overwrite, replaced with it; an empty directory is
# fine; DST equal to or inside SRC is refused.
check_existing_dst() {
  local d=$T/c4 before dst overwrite
  mkdir "$d" "$d/full"
  echo old >"$d/full/old.txt"
  before=$(state "$d/full")
  run_convert "$SRC" "$d/full" --to bfloat16
  [ "$status" = 2 ] || problem "exit $status, want 2"
  [ "$(state "$d/full")" = "$before" ] || problem "DST changed"
  [ -z "$(temporaries "$d")" ] || problem "temporaries left: $(temporaries "$d")"
  report "existing DST: a non-empty directory without --overwrite exits 2 and is untouched"

  run_convert "$SRC" "$d/full" --to bfloat16 --overwrite
  [ "$status" = 0 ] || problem "exit $status, want 0: $(stderr_text)"
  [ ! -e "$d/full/old.txt" ] || problem "the old DST's old.txt is still there"
  compare "DST" "$d/full" "$SRC.ref"
  [ -z "$(temporaries "$d")" ] || problem "temporaries left: $(temporaries "$d")"
  report "existing DST: with --overwrite exits 0 and replaces it (old files gone)"

  echo old >"$d/old.gguf"
  run_convert "$SRC" "$d/old.gguf" --to bfloat16
  [ "$status" = 2 ] || problem "exit $status, want 2"
  [ "$(cat "$d/old.gguf")" = old ] || problem "DST changed"
  run_convert "$SRC" "$d/old.gguf" --to bfloat16 --overwrite
  [ "$status" = 0 ] || problem "with --overwrite: exit $status, want 0: $(stderr_text)"
  compare "DST" "$d/old.gguf" "$SRC.ref"
  report "existing DST: a .gguf file is untouched without --overwrite (exit 2), replaced with it (exit 0)"

  mkdir "$d/empty"
  run_convert "$SRC" "$d/empty" --to bfloat16
  [ "$status" = 0 ] || problem "exit $status, want 0: $(stderr_text)"
  compare "DST" "$d/empty" "$SRC.ref"
  report "existing DST: an empty directory exits 0 and is written"

  mkdir "$d/empty_slash"
  run_convert "$SRC" "$d/empty_slash/" --to bfloat16
  [ "$status" = 0 ] || problem "exit $status, want 0: $(stderr_text)"
  compare "DST" "$d/empty_slash" "$SRC.ref"
  report "existing DST: an empty directory given as DIR/ (a trailing slash) exits 0 and is written"

  ln -s "$SRC" "$d/link"
  mkdir "$d/parent"
  cp -r "$SRC" "$d/parent/src"
  before=$(state "$d/parent")
  for dst in "$SRC" "$SRC/" "$SRC/sub" "$SRC/x.gguf" "$d/link" "$d/link/sub" "$d/../src"; do
    for overwrite in "" --overwrite; do
      run_convert "$SRC" "$dst" --to bfloat16 $overwrite
      [ "$status" = 2 ] || problem "$dst $overwrite: exit $status, want 2"
      [ "$(state "$SRC")" = "$src_state" ] || problem "$dst $overwrite: SRC changed"
      [ -z "$(temporaries "$T")" ] || problem "$dst $overwrite: temporaries beside SRC: $(temporaries "$T")"
    done
  done
  run_convert "$d/parent/src" "$d/parent" --to bfloat16 --overwrite
  [ "$status" = 2 ] || problem "DST holding SRC with --overwrite: exit $status, want 2"
  [ "$(state "$d/parent")" = "$before" ] || problem "DST holding SRC with --overwrite: SRC changed"
  report "existing DST: DST equal to SRC, inside it (also through a link or ..) or holding it exits 2, with --overwrite too, SRC untouched"
  src_untouched "existing DST" "$SRC" "$src_state"
}

# 5. Signals mid-way: exit 128 + the signal, no DST, no temporaries; an old DST kept.
make_old_dst() { cp -r "$T/old" "$T/c5/out"; }
check_signals() {
  local d=$T/c5 case_ what sig code name old args setup
  mkdir "$d" "$T/old"
  echo old >"$T/old/old.txt"
  # WHAT|SIGNAL|EXIT|NAME|OLD|ARGS
  for case_ in "a directory DST|INT|130|out|none|" "a directory DST|TERM|143|out|none|" \
      "a .gguf DST|HUP|129|out.gguf|none|" \
      "an existing directory DST with --overwrite (kept)|TERM|143|out|dir|--overwrite"; do
    IFS='|' read -r what sig code name old args <<<"$case_"
    setup=:
    [ "$old" = dir ] && setup=make_old_dst
    # shellcheck disable=SC2086
    if start_and_stop "$setup" "$BIG" "$d/$name" --to bfloat16 $args; then
      signal_and_wait "$sig"
      [ "$status" = "$code" ] || problem "exit status $status, want $code: $(head -c 300 "$T/bg.stderr" | tr '\n' ' ')"
      if [ "$old" = dir ]; then
        [ "$(state "$d/$name")" = "$(state "$T/old")" ] ||
          problem "the old DST changed: $(ls -A "$d/$name" | tr '\n' ' ')"
        rm -rf "${d:?}/$name"
      fi
      [ -z "$(ls -A "$d")" ] || problem "left in DST's parent: $(ls -A "$d" | tr '\n' ' ')"
    fi
    rm -rf "${d:?}"/*
    report "signals: SIG$sig mid-way to $what exits $code and leaves no temporary, no new DST"
  done
  src_untouched "signals" "$BIG" "$big_state"
}

# 6. SIGKILL mid-way leaves the temporary; the next run removes it (not those of live
# processes) and writes DST complete.
check_kill() {
  local d=$T/c6 name live
  mkdir "$d"
  for name in out out.gguf; do
    if ! start_and_stop : "$BIG" "$d/$name" --to bfloat16; then
      report "kill: SIGKILL mid-way to $name"
      continue
    fi
    signal_and_wait KILL
    [ "$status" = 137 ] || problem "exit status $status, want 137"
    [ -e "$temp" ] || problem "the killed run's temporary ${temp##*/} is gone"
    [ ! -e "$d/$name" ] || problem "DST exists"
    report "kill: SIGKILL mid-way to $name leaves its temporary and no DST"

    # A temporary of a live process (this shell) must survive the next run.
    live=$d/$name.strata-tmp-$$-999
    mkdir "$live"
    run_convert "$BIG" "$d/$name" --to bfloat16
    [ "$status" = 0 ] || problem "exit $status, want 0: $(stderr_text)"
    [ ! -e "$temp" ] || problem "the killed run's temporary ${temp##*/} is still there"
    [ -d "$live" ] || problem "a live process's temporary ${live##*/} was removed"
    rm -rf "$live"
    [ -z "$(temporaries "$d")" ] || problem "temporaries left: $(temporaries "$d")"
    compare "DST" "$d/$name" "$BIG.ref"
    report "kill: the next run to $name exits 0, removes the leftover (not a live process's) and writes the reference's tensors"
  done
  src_untouched "kill" "$BIG" "$big_state"
}

# 7. Refusals: exit 1, each refused tensor named on stderr, the rest written.
check_refusal() {
  local d=$T/c7 before
  mkdir "$d"
  # x.weight (32, 40): nvfp4_ts blocks the last dim by 16. A DeepSeek group whose scale
  # grid is wrong (a.weight (256, 256) with a.weight_scale_inv (3, 3), not (2, 2)): the
  # reference refuses it too.
  timeout 60 "$PYTHON" - "$REFERENCE" "$d" <<'PY' || problem "cannot make the sources"
import os, sys
import numpy as np
sys.path.insert(0, os.path.dirname(sys.argv[1]))
import checkpoint_reference as cr
d = sys.argv[2]
rng = np.random.default_rng(7)
def bf16(*shape):
    bits = rng.standard_normal(shape).astype(np.float32).view(np.uint32) >> 16
    return ("BF16", shape, bits.astype(np.uint16).tobytes())
cr.write_hf_directory(os.path.join(d, "ragged"), {
    "x.weight": bf16(32, 40), "y.weight": bf16(32, 64), "z.norm.weight": bf16(64)},
    metadata={"format": "pt"})
def f32(shape, v):
    return ("F32", shape, np.full(shape, v, np.float32).tobytes())
cr.write_hf_directory(os.path.join(d, "group"), {
    "a.weight": ("F8_E4M3", (256, 256), cr._fp8_codes(rng, 256 * 256)),
    "a.weight_scale_inv": f32((3, 3), 2.0 ** -8),
    "b.weight": ("F8_E4M3", (128, 256), cr._fp8_codes(rng, 128 * 256)),
    "b.weight_scale_inv": f32((1, 2), 2.0 ** -7),
    "c.norm.weight": bf16(64)}, metadata={"format": "pt"})
PY
  before=$(state "$d/ragged")
  run_convert "$d/ragged" "$d/ragged.out" --to nvfp4_ts
  [ "$status" = 1 ] || problem "exit $status, want 1: $(stderr_text)"
  grep -q '^x\.weight: ' "$T/stderr" || problem "x.weight not named on stderr: $(stderr_text)"
  ! grep -q '[yz]\.' "$T/stderr" || problem "stderr names another tensor: $(stderr_text)"
  grep -q '^converted 1, copied 1, refused 1;' "$T/stdout" || problem "summary: $(tail -n 1 "$T/stdout")"
  timeout 60 "$PYTHON" - "$REFERENCE" "$d/ragged" "$d/ragged.out" <<'PY' >"$T/py" || problem "$(cat "$T/py")"
import os, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]))
import checkpoint_reference as cr
src = cr.read_hf_directory(sys.argv[2])["tensors"]
out = cr.read_hf_directory(sys.argv[3])["tensors"]
bad = [n for n in out if n.startswith("x.")]
if bad: print("refused tensors written: %s" % bad)
if "y.weight" not in out: print("y.weight (nvfp4_ts) not written: %s" % sorted(out))
if "z.norm.weight" not in out or bytes(out["z.norm.weight"][2]) != bytes(src["z.norm.weight"][2]):
    print("z.norm.weight not copied unchanged")
sys.exit(1 if bad or "y.weight" not in out or "z.norm.weight" not in out else 0)
PY
  [ "$(state "$d/ragged")" = "$before" ] || problem "SRC changed"
  report "refusal: --to nvfp4_ts of a (32,40) x.weight exits 1, names it, writes y.weight and z.norm.weight"

  before=$(state "$d/group")
  timeout 60 "$PYTHON" "$REFERENCE" --convert "$d/group" "$d/group.ref" --to bfloat16 >/dev/null 2>&1
  [ $? = 1 ] || problem "the reference does not refuse it"
  run_convert "$d/group" "$d/group.out" --to bfloat16
  [ "$status" = 1 ] || problem "exit $status, want 1: $(stderr_text)"
  grep -q '^a\.weight: ' "$T/stderr" || problem "a.weight not named on stderr: $(stderr_text)"
  ! grep -q '^[bc]\.' "$T/stderr" || problem "stderr names another tensor: $(stderr_text)"
  compare "DST" "$d/group.out" "$d/group.ref"
  [ "$(state "$d/group")" = "$before" ] || problem "SRC changed"
  report "refusal: an FP8 group with a wrong scale grid exits 1, names a.weight, writes what the reference writes"
}

# 8. A source that is not a checkpoint: exit 2, DST not created, nothing beside it.
check_not_a_checkpoint() {
  local d=$T/c8 what src name
  mkdir "$d" "$d/empty" "$d/config_only" "$d/truncated" "$d/out"
  echo 'not a checkpoint' >"$d/text.txt"
  echo '{}' >"$d/config_only/config.json"
  cp -r "$SRC"/. "$d/truncated/"
  head -c 100000 "$SRC/model-00003-of-00005.safetensors" >"$d/truncated/model-00003-of-00005.safetensors"
  for what in "a text file:text.txt" "an empty directory:empty" "a directory of config.json only:config_only" \
      "a missing path:missing" "a directory with a truncated shard:truncated"; do
    src=$d/${what#*:}
    for name in dst dst.gguf; do
      run_convert "$src" "$d/out/$name" --to bfloat16
      [ "$status" = 2 ] || problem "$name: exit $status, want 2"
      [ -s "$T/stderr" ] || problem "$name: nothing on stderr"
    done
    [ -z "$(ls -A "$d/out")" ] || problem "left in DST's parent: $(ls -A "$d/out" | tr '\n' ' ')"
    rm -rf "${d:?}/out/"*
    report "not a checkpoint: SRC ${what%%:*} exits 2 and creates no DST (directory or .gguf)"
  done
  src_untouched "not a checkpoint" "$SRC" "$src_state"
}

check_plain_success
check_full_disk
check_write_error
check_existing_dst
check_signals
check_kill
check_refusal
check_not_a_checkpoint

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
