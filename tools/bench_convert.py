#!/usr/bin/python3
"""Benchmark of `strata convert SRC DST --to bfloat16` on generated DeepSeek-style FP8
checkpoints (128x128 block scales, several shards), against in-run references.

Every figure comes from ONE run of this script and is printed beside the machine (processor,
cores, kernel, the workdir's filesystem) and the bandwidths measured in the same run
(numpy copyto of 256 MiB, dd of 1 GiB from /dev/zero into the page cache). Performance
targets are reported as PASS/MISS beside the figures, never asserted: the script exits 0
unless something could not run (2: bad arguments or not enough disk; 1: a command failed).

Per size (default 1GiB and 4GiB):
  source   tools/peer/checkpoint_reference.py --make-deepseek DIR --bytes SIZE, cached in
           WORKDIR/src-SIZE (reused when its .complete marker is there).
  strata   taskset -c CPU STRATA convert SRC DST --to bfloat16 --quiet, --repeat (default 5)
           times from a warm page cache (every source file read once before each run), each
           output deleted right after it is measured; best (min) and median wall time,
           GB/s of input (the source's *.safetensors bytes) and of output, peak resident
           memory of that child alone (GNU time's %M), user and system CPU time.
  cp       taskset -c CPU cp -r of a directory holding exactly strata's output bytes (the
           output of an untimed first conversion, kept and warmed) to the same filesystem,
           timed the same way, alternating with the strata runs.
  numpy    tools/peer/checkpoint_reference.py --convert SRC DST --to bfloat16 (DeepSeek's
           rule, fp8_cast_bf16.py), timed once; skipped above --numpy-max (default 1GiB).
           Its output is compared tensor by tensor with strata's (the "match" column).

Targets (the issue, stated for 1 GiB; the same thresholds are shown for every size):
  strata >= 1 GB/s of input on one core; strata / cp <= 1.5; numpy / strata >= 10;
  peak RSS - the largest tensor's output <= 256 MiB (and independent of the size).

Run:  /usr/bin/python3 tools/bench_convert.py [--sizes 1GiB,4GiB] [--strata PATH]
          [--workdir DIR] [--json OUT] [--repeat N] [--cpu N] [--numpy-max SIZE] [--perf]
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REFERENCE = os.path.join(HERE, "peer", "checkpoint_reference.py")
sys.path.insert(0, os.path.join(HERE, "peer"))
import checkpoint_reference as cr  # noqa: E402  (found through the line above)

MiB = 2 ** 20
GiB = 2 ** 30
TARGET_GBPS_IN = 1.0
TARGET_CP_RATIO = 1.5
TARGET_NUMPY_RATIO = 10.0
TARGET_RSS_OVER_TENSOR = 256 * MiB


def parse_size(s):
    return cr._parse_size(s)


def size_label(n):
    for unit, v in (("GiB", GiB), ("MiB", MiB)):
        if n % v == 0:
            return "%d%s" % (n // v, unit)
    return str(n)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# The machine.


def cpu_model():
    """/proc/cpuinfo's model name, with family/model and the vector extensions that
    matter here (a VM may show only "AMD EPYC": family 25 is Zen 3/4, 26 Zen 5)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break
                k, _, v = line.partition(":")
                fields[k.strip()] = v.strip()
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or "unknown processor"
    flags = set(fields.get("flags", "").split())
    vec = [f for f in ("avx2", "avx512f", "avx512_bf16") if f in flags]
    extra = []
    if "cpu family" in fields:
        extra.append("family %s model %s" % (fields["cpu family"], fields.get("model", "?")))
    if vec:
        extra.append(" ".join(vec))
    return "%s (%s)" % (name, ", ".join(extra)) if extra else name


def mem_total():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def fs_type(path):
    try:
        out = subprocess.run(["df", "-T", "-P", path], capture_output=True, text=True,
                             check=True).stdout.splitlines()
        f = out[1].split()
        return "%s (%s on %s)" % (f[1], f[0], f[6])
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "unknown"


def memcpy_gbps(nbytes=256 * MiB, reps=5):
    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.zeros(nbytes, dtype=np.uint8)
    np.copyto(dst, src)  # faults the pages in
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t)
    return nbytes / best / 1e9


def page_cache_write_gbps(workdir, nbytes=GiB):
    """dd of nbytes from /dev/zero into a file of the workdir (no fsync): what writing into
    the page cache costs here. Best of 2."""
    path = os.path.join(workdir, "dd.bin")
    best = float("inf")
    try:
        for _ in range(2):
            sync()
            t = time.perf_counter()
            subprocess.run(["dd", "if=/dev/zero", "of=" + path, "bs=1M",
                            "count=%d" % (nbytes // MiB)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            best = min(best, time.perf_counter() - t)
            os.unlink(path)
    except (OSError, subprocess.CalledProcessError):
        return None
    finally:
        if os.path.exists(path):
            os.unlink(path)
        sync()
    return nbytes / best / 1e9


def machine(workdir):
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "memory_bytes": mem_total(),
        "workdir": workdir,
        "filesystem": fs_type(workdir),
        "memcpy_gbps": memcpy_gbps(),
        "page_cache_write_gbps": page_cache_write_gbps(workdir),
        "loadavg_start": os.getloadavg()[0],
    }


# ---------------------------------------------------------------------------------------
# Files.


def sync():
    try:
        os.sync()
    except AttributeError:
        subprocess.run(["sync"])


def safetensors_files(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".safetensors"))


def safetensors_bytes(d):
    return sum(os.path.getsize(p) for p in safetensors_files(d))


def tree_bytes(d):
    total = 0
    for base, _, files in os.walk(d):
        for f in files:
            total += os.path.getsize(os.path.join(base, f))
    return total


def warm(d):
    """Read every file of d once (cat > /dev/null) so that it is in the page cache."""
    files = [os.path.join(b, f) for b, _, fs in os.walk(d) for f in fs]
    subprocess.run(["cat"] + sorted(files), stdout=subprocess.DEVNULL, check=True)


def remove(d):
    if os.path.lexists(d):
        shutil.rmtree(d)


def largest_output_tensor(src):
    """-> (name, bytes) of the largest tensor `convert --to bfloat16` writes, from the
    source's headers: an F8_E4M3 weight with a scale becomes 2 x its elements; the scales
    are dropped; everything else is copied as it is."""
    names = {}
    for p in safetensors_files(src):
        for name, info in cr.read_safetensors_header(p)["tensors"].items():
            names[name] = info
    best = (None, 0)
    for name, info in names.items():
        if (name.endswith("_scale_inv") and name[:-len("_scale_inv")] in names) or (
                name.endswith("_scale") and name[:-len("_scale")] in names):
            continue
        n = cr._prod(info["shape"])
        if info["dtype"] == "F8_E4M3" and (name + "_scale_inv" in names
                                           or name + "_scale" in names):
            out = 2 * n
        else:
            out = cr.safetensors_nbytes(info["dtype"], info["shape"])
        if out > best[1]:
            best = (name, out)
    return best


def compare_outputs(a, b):
    """Tensor-by-tensor comparison of two converted directories -> (equal, detail)."""
    ta = cr.read_hf_directory(a, lazy=True)["tensors"]
    tb = cr.read_hf_directory(b, lazy=True)["tensors"]
    if set(ta) != set(tb):
        return False, "tensor names differ: %s" % sorted(set(ta) ^ set(tb))[:5]
    for name in ta:
        da, sa, xa = ta[name]
        db, sb, xb = tb[name]
        if da != db or tuple(sa) != tuple(sb):
            return False, "%s: %s %s vs %s %s" % (name, da, sa, db, sb)
        if xa != xb:
            return False, "%s: bytes differ" % name
    return True, "%d tensors identical" % len(ta)


# ---------------------------------------------------------------------------------------
# Timed children.


TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
# Without GNU time: a tiny launcher (python -S, no numpy) forks and waits for the child.
LAUNCHER = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execvp(sys.argv[2], sys.argv[2:])\n"
    "_, st, ru = os.wait4(pid, 0)\n"
    "open(sys.argv[1], 'w').write('%d %f %f' % (ru.ru_maxrss, ru.ru_utime, ru.ru_stime))\n"
    "sys.exit(os.waitstatus_to_exitcode(st) & 255)\n")


def run_child(argv, stdout=subprocess.DEVNULL):
    """Run argv; -> dict(wall, rc, maxrss bytes, user, sys, stderr) of that child alone.
    Linux carries the high-water RSS of the process that execs into the new program
    (exec_mmap), so this (numpy-sized) process cannot read the child's peak from its own
    wait4: GNU time (or a tiny launcher) forks the child and reports its rusage instead."""
    fd, stats = tempfile.mkstemp(prefix="bench_convert.", suffix=".rusage")
    os.close(fd)
    if TIME:
        wrapped = [TIME, "-f", "%M %U %S", "-o", stats, "--"] + argv
    else:
        wrapped = [sys.executable, "-S", "-c", LAUNCHER, stats] + argv
    try:
        t = time.perf_counter()
        p = subprocess.run(wrapped, stdout=stdout, stderr=subprocess.PIPE)
        wall = time.perf_counter() - t
        with open(stats) as f:
            last = f.read().strip().splitlines()
    finally:
        os.unlink(stats)
    try:
        kb, user, sys_ = last[-1].split()[-3:]
        kb, user, sys_ = int(kb), float(user), float(sys_)
    except (IndexError, ValueError):
        kb, user, sys_ = 0, 0.0, 0.0
    return {"wall": wall, "rc": p.returncode, "maxrss": kb * 1024, "user": user,
            "sys": sys_, "stderr": p.stderr.decode(errors="replace")}


def checked(r, what):
    if r["rc"] != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (what, r["rc"], r["stderr"][-2000:]))
    return r


def summary(runs):
    walls = [r["wall"] for r in runs]
    return {"best": min(walls), "median": statistics.median(walls), "runs": walls}


# ---------------------------------------------------------------------------------------
# One size.


def make_source(workdir, nbytes):
    src = os.path.join(workdir, "src-" + size_label(nbytes))
    marker = os.path.join(workdir, "src-" + size_label(nbytes) + ".complete")
    if os.path.exists(marker) and os.path.isdir(src):
        log("  source %s (cached)" % src)
        return src
    remove(src)
    if os.path.exists(marker):
        os.unlink(marker)
    log("  making %s with checkpoint_reference.py --make-deepseek ..." % src)
    r = run_child([sys.executable, REFERENCE, "--make-deepseek", src, "--bytes", str(nbytes)],
                  stdout=subprocess.PIPE)
    checked(r, "checkpoint_reference.py --make-deepseek")
    with open(marker, "w") as f:
        f.write("made in %.1fs\n" % r["wall"])
    return src


def bench_size(args, workdir, nbytes, strata):
    label = size_label(nbytes)
    log("== %s" % label)
    src = make_source(workdir, nbytes)
    in_bytes = safetensors_bytes(src)
    files = len(safetensors_files(src))
    tensor_name, tensor_out = largest_output_tensor(src)
    out = os.path.join(workdir, "out-strata")
    cp_src = os.path.join(workdir, "cp-src-" + label)
    cp_dst = os.path.join(workdir, "out-cp")
    for d in (out, cp_src, cp_dst):
        remove(d)
    pin = ["taskset", "-c", str(args.cpu)]
    strata_argv = pin + [strata, "convert", src, out, "--to", "bfloat16", "--quiet"]

    # An untimed first conversion: warms the binary, and its output is cp's source.
    warm(src)
    sync()
    log("  strata (untimed first run, kept as cp's source)")
    first = checked(run_child(pin + [strata, "convert", src, cp_src, "--to", "bfloat16",
                                     "--quiet"]), "strata convert")
    out_bytes = safetensors_bytes(cp_src)
    out_tree = tree_bytes(cp_src)

    strata_runs, cp_runs = [], []
    for i in range(args.repeat):
        log("  run %d/%d: strata, cp" % (i + 1, args.repeat))
        warm(src)
        sync()
        strata_runs.append(checked(run_child(strata_argv), "strata convert"))
        if safetensors_bytes(out) != out_bytes:
            raise RuntimeError("strata's output size changed between runs")
        remove(out)
        warm(cp_src)
        sync()
        cp_runs.append(checked(run_child(pin + ["cp", "-r", cp_src, cp_dst]), "cp -r"))
        remove(cp_dst)
    sync()

    log("  strata once more, its memory sampled (anonymous / file-mapped)")
    split = rss_split(args, workdir, src, strata)
    perf = None
    if args.perf:
        perf = profile(args, workdir, src, strata)

    numpy_run, match = None, None
    if args.no_numpy or nbytes > args.numpy_max:
        why = "--no-numpy" if args.no_numpy else "size > --numpy-max %s" % size_label(
            args.numpy_max)
        log("  numpy skipped (%s)" % why)
        numpy_note = "skipped: " + why
    else:
        np_out = os.path.join(workdir, "out-numpy")
        remove(np_out)
        warm(src)
        sync()
        log("  numpy reference conversion (slow) ...")
        numpy_run = checked(run_child([sys.executable, REFERENCE, "--convert", src, np_out,
                                       "--to", "bfloat16"], stdout=subprocess.PIPE),
                            "checkpoint_reference.py --convert")
        log("  comparing strata's output with numpy's ...")
        equal, detail = compare_outputs(cp_src, np_out)
        match = {"equal": equal, "detail": detail}
        numpy_note = None
        remove(np_out)
    remove(cp_src)
    sync()

    s = summary(strata_runs)
    c = summary(cp_runs)
    rss = max(r["maxrss"] for r in strata_runs)
    res = {
        "size": label,
        "size_bytes": nbytes,
        "source": src,
        "source_files": files,
        "input_bytes": in_bytes,
        "output_bytes": out_bytes,
        "output_tree_bytes": out_tree,
        "strata": dict(s, gbps_in=in_bytes / s["best"] / 1e9,
                       gbps_out=out_bytes / s["best"] / 1e9,
                       gbps_in_median=in_bytes / s["median"] / 1e9,
                       user=[r["user"] for r in strata_runs],
                       sys=[r["sys"] for r in strata_runs],
                       maxrss=[r["maxrss"] for r in strata_runs],
                       first_run=first["wall"]),
        "cp": dict(c, maxrss=[r["maxrss"] for r in cp_runs],
                   user=[r["user"] for r in cp_runs], sys=[r["sys"] for r in cp_runs]),
        "strata_over_cp": s["best"] / c["best"],
        "strata_over_cp_median": s["median"] / c["median"],
        "numpy": None if numpy_run is None else {
            "wall": numpy_run["wall"], "maxrss": numpy_run["maxrss"],
            "user": numpy_run["user"], "sys": numpy_run["sys"]},
        "numpy_note": numpy_note,
        "numpy_over_strata": None if numpy_run is None else numpy_run["wall"] / s["best"],
        "match": match,
        "peak_rss": rss,
        "largest_tensor": tensor_name,
        "largest_tensor_out_bytes": tensor_out,
        "rss_minus_tensor": rss - tensor_out,
        "rss_split": split,
        "dirty_limit_bytes": dirty_limit(),
        "page_cache_need_bytes": in_bytes + 2 * out_tree,
        "perf": perf,
    }
    res["targets"] = {
        "gbps_in": verdict(res["strata"]["gbps_in"] >= TARGET_GBPS_IN),
        "strata_over_cp": verdict(res["strata_over_cp"] <= TARGET_CP_RATIO),
        "numpy_over_strata": None if numpy_run is None else verdict(
            res["numpy_over_strata"] >= TARGET_NUMPY_RATIO),
        "rss_minus_tensor": verdict(res["rss_minus_tensor"] <= TARGET_RSS_OVER_TENSOR),
    }
    return res


def verdict(ok):
    return "PASS" if ok else "MISS"


def dirty_limit():
    """~ the kernel's dirty_bytes threshold (dirty_ratio of the available memory): a
    writer past it is throttled to the disk's writeback speed."""
    try:
        with open("/proc/sys/vm/dirty_bytes") as f:
            b = int(f.read())
        if b:
            return b
        with open("/proc/sys/vm/dirty_ratio") as f:
            ratio = int(f.read())
        with open("/proc/meminfo") as f:
            avail = next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemAvailable:"))
        return avail * ratio // 100
    except (OSError, ValueError, StopIteration):
        return None


def rss_split(args, workdir, src, strata, period=0.01):
    """One untimed conversion with /proc/PID/status sampled every `period` s: the peaks of
    VmHWM, RssAnon (heap, buffers) and RssFile (pages of mapped files, e.g. the source,
    which count in the resident size but are page cache the kernel may drop)."""
    out = os.path.join(workdir, "out-rss")
    remove(out)
    warm(src)
    sync()
    p = subprocess.Popen(["taskset", "-c", str(args.cpu), strata, "convert", src, out,
                          "--to", "bfloat16", "--quiet"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    peak = {}
    while p.poll() is None:
        try:
            with open("/proc/%d/status" % p.pid) as f:
                for line in f:
                    k = line.split(":", 1)[0]
                    if k in ("VmHWM", "RssAnon", "RssFile"):
                        peak[k] = max(peak.get(k, 0), int(line.split()[1]) * 1024)
        except (OSError, ValueError, IndexError):
            pass
        time.sleep(period)
    remove(out)
    sync()
    if p.returncode != 0 or not peak:
        return None
    return {"hwm": peak.get("VmHWM", 0), "anon": peak.get("RssAnon", 0),
            "file": peak.get("RssFile", 0)}


def profile(args, workdir, src, strata):
    """perf record -g (cpu-clock) of one conversion: -> top symbols, self time."""
    if not shutil.which("perf"):
        return {"error": "perf not found"}
    out = os.path.join(workdir, "out-perf")
    data = os.path.join(workdir, "perf.data")
    remove(out)
    warm(src)
    sync()
    r = subprocess.run(["perf", "record", "-e", "cpu-clock", "-o", data, "--",
                        "taskset", "-c", str(args.cpu), strata, "convert", src, out, "--to",
                        "bfloat16", "--quiet"], capture_output=True, text=True)
    remove(out)
    if r.returncode != 0:
        return {"error": r.stderr[-500:]}
    rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                          "--sort", "dso,symbol"], capture_output=True, text=True)
    os.unlink(data)
    top = []
    for line in rep.stdout.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(.*)$", line)
        if m:
            top.append({"percent": float(m.group(1)), "dso": m.group(2),
                        "symbol": re.split(r"\s{2,}", m.group(4).strip())[0]})
    by_dso = {}
    for e in top:
        by_dso[e["dso"]] = by_dso.get(e["dso"], 0.0) + e["percent"]
    return {"top": top[:15], "by_dso": dict(sorted(by_dso.items(), key=lambda kv: -kv[1]))}


# ---------------------------------------------------------------------------------------
# Output.


def gb(n):
    return "%.2f GB" % (n / 1e9)


def mib(n):
    return "%.0f MiB" % (n / MiB)


def print_report(m, results, strata):
    print("machine: %s, %d cores, kernel %s, %s RAM, memcpy %.1f GB/s (numpy copyto, "
          "256 MiB, best of 5)%s" % (
              m["cpu"], m["cores"], m["kernel"],
              "%.1f GiB" % (m["memory_bytes"] / GiB) if m["memory_bytes"] else "?",
              m["memcpy_gbps"],
              ", page-cache write %.1f GB/s (dd 1 GiB from /dev/zero)" % m[
                  "page_cache_write_gbps"] if m["page_cache_write_gbps"] else ""))
    print("workdir: %s, filesystem %s; load average %.2f at the start, %.2f at the end%s" % (
        m["workdir"], m["filesystem"], m["loadavg_start"], m["loadavg_end"],
        " (other work was running: best times are the figures to trust)"
        if max(m["loadavg_start"], m["loadavg_end"]) > 0.5 else ""))
    print("strata: %s (one core: taskset -c %d; cp -r pinned the same)" % (
        strata, results[0]["cpu"] if results else 0))
    head = ["size", "input", "strata best/median", "GB/s in", "GB/s out", "cp (same bytes)",
            "strata/cp", "numpy", "numpy/strata", "peak RSS", "largest tensor out",
            "RSS - tensor"]
    rows = []
    for r in results:
        t = r["targets"]
        s = r["strata"]
        rows.append([
            r["size"],
            gb(r["input_bytes"]),
            "%.2f / %.2f s" % (s["best"], s["median"]),
            "%.2f %s" % (s["gbps_in"], t["gbps_in"]),
            "%.2f" % s["gbps_out"],
            "%.2f s" % r["cp"]["best"],
            "%.2f %s" % (r["strata_over_cp"], t["strata_over_cp"]),
            "%.1f s" % r["numpy"]["wall"] if r["numpy"] else "skipped",
            "%.0fx %s" % (r["numpy_over_strata"], t["numpy_over_strata"])
            if r["numpy"] else "-",
            mib(r["peak_rss"]),
            mib(r["largest_tensor_out_bytes"]),
            "%s %s" % (mib(r["rss_minus_tensor"]), t["rss_minus_tensor"]),
        ])
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    for row in [head] + rows:
        print("  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip())
    print("targets: GB/s in >= %.1f on one core; strata/cp <= %.1f (best times); "
          "numpy/strata >= %.0f; RSS - largest tensor's output <= 256 MiB at every size" % (
              TARGET_GBPS_IN, TARGET_CP_RATIO, TARGET_NUMPY_RATIO))
    for r in results:
        s = r["strata"]
        extra = []
        extra.append("%d shards, output %s (%s with the other files)" % (
            r["source_files"], gb(r["output_bytes"]), gb(r["output_tree_bytes"])))
        extra.append("strata runs %s s, user %.2f s sys %.2f s (best run's), first run "
                     "%.2f s" % (
                         " ".join("%.2f" % w for w in s["runs"]),
                         s["user"][s["runs"].index(s["best"])],
                         s["sys"][s["runs"].index(s["best"])], s["first_run"]))
        extra.append("cp runs %s s (%.2f GB/s), cp peak RSS %s" % (
            " ".join("%.2f" % w for w in r["cp"]["runs"]),
            r["output_bytes"] / r["cp"]["best"] / 1e9, mib(max(r["cp"]["maxrss"]))))
        extra.append("largest tensor %s; strata RSS per run %s" % (
            r["largest_tensor"], " ".join(mib(x) for x in s["maxrss"])))
        if r["numpy"]:
            extra.append("numpy peak RSS %s; outputs %s (%s)" % (
                mib(r["numpy"]["maxrss"]),
                "MATCH" if r["match"]["equal"] else "DIFFER", r["match"]["detail"]))
        else:
            extra.append("numpy %s" % r["numpy_note"])
        print("%s: %s" % (r["size"], "; ".join(extra)))
        sp = r.get("rss_split")
        if sp:
            print("  memory (one more run, /proc sampled every 10 ms): VmHWM %s; peak "
                  "RssAnon %s (minus the largest tensor's output: %s); peak RssFile %s "
                  "(mapped source pages, counted in RSS)" % (
                      mib(sp["hwm"]), mib(sp["anon"]),
                      mib(sp["anon"] - r["largest_tensor_out_bytes"]), mib(sp["file"])))
        dl = r.get("dirty_limit_bytes")
        if dl and r["output_bytes"] > dl:
            print("  note: the output (%s) exceeds the kernel's dirty limit (~%s): writers "
                  "are throttled to the disk's writeback speed, so strata and cp times at "
                  "this size measure the disk, not the page cache" % (
                      gb(r["output_bytes"]), gb(dl)))
        mem = m.get("memory_bytes")
        if mem and r["page_cache_need_bytes"] > 0.8 * mem:
            print("  note: source + cp's source + one output = %s of page cache against "
                  "%.1f GiB of RAM: the warm source may be partly evicted while writing" % (
                      gb(r["page_cache_need_bytes"]), mem / GiB))
        if r.get("perf"):
            p = r["perf"]
            if "error" in p:
                print("  perf: %s" % p["error"])
            else:
                print("  perf record (cpu-clock, self time) of one run: %s; top symbols:" % (
                    ", ".join("%s %.1f%%" % kv for kv in list(p["by_dso"].items())[:4])))
                for e in p["top"][:10]:
                    print("    %5.1f%%  %-28s %s" % (e["percent"], e["dso"][:28], e["symbol"]))
    if len(results) > 1:
        # The peak itself: once it is below one tensor's output, the difference
        # with that (growing) tensor says nothing of growth.
        rs = [r["peak_rss"] for r in results]
        print("peak RSS across sizes: %s (%s)" % (
            " -> ".join("%s %s" % (r["size"], mib(x)) for r, x in zip(results, rs)),
            "independent of the size" if max(rs) - min(rs) <= 32 * MiB
            else "GROWS with the size"))


# ---------------------------------------------------------------------------------------


def default_strata():
    for p in (os.environ.get("STRATA"), os.path.join(ROOT, "bazel-bin", "tools", "strata"),
              "/tmp/strata-bin/strata"):
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def default_workdir():
    base = os.environ.get("TMPDIR") or tempfile.gettempdir()
    return os.path.join(base, "strata-bench-convert")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    ap.add_argument("--sizes", default="1GiB,4GiB",
                    help="comma-separated checkpoint sizes (default 1GiB,4GiB)")
    ap.add_argument("--strata", default=default_strata(),
                    help="the strata binary (default $STRATA, bazel-bin/tools/strata, "
                         "/tmp/strata-bin/strata)")
    ap.add_argument("--workdir", default=default_workdir(),
                    help="where sources are cached and outputs written (default %(default)s)")
    ap.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    ap.add_argument("--repeat", type=int, default=5,
                    help="timed runs of strata and of cp each (default 5, at least 3)")
    ap.add_argument("--cpu", type=int, default=0, help="the core to pin to (default 0)")
    ap.add_argument("--numpy-max", type=parse_size, default=parse_size("1GiB"),
                    help="skip the (slow) numpy conversion above this size (default 1GiB)")
    ap.add_argument("--no-numpy", action="store_true")
    ap.add_argument("--perf", action="store_true",
                    help="also profile one conversion per size with perf record -g")
    args = ap.parse_args(argv)
    if args.repeat < 3:
        ap.error("--repeat must be at least 3")
    if not args.strata or not os.access(args.strata, os.X_OK):
        ap.error("no strata binary (give --strata PATH; build with "
                 "bazel build --config=opt //tools:strata)")
    strata = os.path.abspath(args.strata)
    try:
        sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    for tool in ("taskset", "cp", "cat", "df"):
        if not shutil.which(tool):
            ap.error("%s not found" % tool)
    workdir = os.path.abspath(args.workdir)
    os.makedirs(workdir, exist_ok=True)

    # Room: the cached sources, then per size: cp's source and one output (about 2x the
    # input each, bf16 from fp8), with 10% and 1 GiB to spare (dd's 1 GiB file included).
    free = shutil.disk_usage(workdir).free
    missing = sum(n for n in sizes if not os.path.exists(
        os.path.join(workdir, "src-%s.complete" % size_label(n))))
    need = int(1.1 * (missing + 4 * max(sizes))) + GiB
    if need > free:
        fits = [size_label(n) for n in sizes
                if int(1.1 * (n + 4 * n)) + GiB <= free]
        print("not enough room in %s: %s needs about %.1f GiB (sources %.1f GiB not yet "
              "made, then cp's source and one output of about 2x the largest input each), "
              "%.1f GiB free.%s Give --workdir elsewhere or fewer --sizes." % (
                  workdir, args.sizes, need / GiB, missing / GiB, free / GiB,
                  " Sizes that would fit alone: %s." % ",".join(fits) if fits else ""),
              file=sys.stderr)
        return 2

    log("measuring the machine (memcpy, page-cache write) ...")
    m = machine(workdir)
    results = []
    try:
        for n in sizes:
            r = bench_size(args, workdir, n, strata)
            r["cpu"] = args.cpu
            results.append(r)
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        print("error: %s" % e, file=sys.stderr)
        if results:
            m["loadavg_end"] = os.getloadavg()[0]
            print_report(m, results, strata)
        return 1
    finally:
        for d in ("out-strata", "out-cp", "out-numpy", "out-perf", "out-rss"):
            remove(os.path.join(workdir, d))
        for n in sizes:
            remove(os.path.join(workdir, "cp-src-" + size_label(n)))
    m["loadavg_end"] = os.getloadavg()[0]
    print_report(m, results, strata)
    if args.json:
        doc = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": m, "strata": strata,
               "repeat": args.repeat, "cpu": args.cpu,
               "targets": {"gbps_in_min": TARGET_GBPS_IN, "strata_over_cp_max": TARGET_CP_RATIO,
                           "numpy_over_strata_min": TARGET_NUMPY_RATIO,
                           "rss_minus_tensor_max_bytes": TARGET_RSS_OVER_TENSOR},
               "results": results}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        log("wrote %s" % args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
