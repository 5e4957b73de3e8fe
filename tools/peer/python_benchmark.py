"""The Python package's speed against PyTorch's from Python, in one run
(tools/bench.sh --python DIR; beside the package, python/, its
directory would shadow the built package on sys.path): each view, and Tensor construction, timed
over the same shapes; the ratio is torch's time over Strata's (> 1: Strata is
faster). Timings are the median of repeated timeit runs of many calls each,
so one slow repetition on a shared machine does not decide the figure."""

import json
import statistics
import sys
import timeit

import numpy as np
import torch

import strata
from strata import dtype as sd

REPEATS = 9
CALLS = 20000


def per_call_ns(statement, namespace):
    timer = timeit.Timer(statement, globals=namespace)
    runs = timer.repeat(repeat=REPEATS, number=CALLS)
    return statistics.median(runs) / CALLS * 1e9


def main():
    array = np.zeros((8, 16, 4), np.float32)
    t = torch.from_numpy(array)
    carrier = strata.HostCarrier(sd.float32, array.size)
    layout = strata.Layout((8, 16, 4), (64, 4, 1))
    s = strata.Tensor(carrier, 0, layout)
    mx = strata.quantize(strata.zeros((8, 16, 64), sd.float32), "mxfp8_e4m3", 2)
    names = dict(globals(), array=array, t=t, s=s, carrier=carrier, layout=layout, mx=mx)
    cases = [
        # (name, Strata statement, torch statements: the fastest is the peer)
        ("permute", "s.permute(2, 0, 1)", ["t.permute(2, 0, 1)"]),
        ("slice", "s.slice(1, 2, 10)", ["t.narrow(1, 2, 8)", "t[:, 2:10]"]),
        ("slice with step", "s.slice(1, 2, 10, 2)", ["t[:, 2:10:2]"]),
        ("reshape", "s.reshape(8, 64)", ["t.view(8, 64)", "t.reshape(8, 64)"]),
        ("index [2:6]", "s[2:6]", ["t[2:6]"]),
        ("unsqueeze", "s.unsqueeze(1)", ["t.unsqueeze(1)"]),
        ("broadcast_to", "s.broadcast_to(2, 8, 16, 4)", ["t.expand(2, 8, 16, 4)"]),
        ("construction", "strata.Tensor(carrier, 0, layout)", ["torch.from_numpy(array)"]),
        ("mxfp8 permute (two levels)", "mx.permute(2, 0, 1)", ["t.permute(2, 0, 1)"]),
        ("mxfp8 slice (two levels)", "mx.slice(2, 32, 64)", ["t.narrow(2, 2, 2)"]),
    ]
    results = []
    for name, mine, theirs in cases:
        ns = per_call_ns(mine, names)
        peers = {statement: per_call_ns(statement, names) for statement in theirs}
        best = min(peers.values())
        results.append({"case": name, "strata": mine, "strata_ns": round(ns, 1),
                        "torch": peers, "torch_ns": round(best, 1),
                        "ratio": round(best / ns, 2)})
    lines = ["| case | Strata | ns | torch (fastest form) | ns | torch / Strata |",
             "|---|---|---|---|---|---|"]
    for r in results:
        peer = min(r["torch"], key=r["torch"].get)
        lines.append(f"| {r['case']} | `{r['strata']}` | {r['strata_ns']} | `{peer}` | "
                     f"{r['torch_ns']} | {r['ratio']} |")
    report = "\n".join(lines)
    print(report)
    if len(sys.argv) > 1:
        with open(sys.argv[1] + "/python.json", "w") as f:
            json.dump(results, f, indent=1)
        with open(sys.argv[1] + "/python.md", "w") as f:
            f.write(f"torch {torch.__version__}, numpy {np.__version__}; median of "
                    f"{REPEATS} runs of {CALLS} calls\n\n" + report + "\n")


if __name__ == "__main__":
    main()
