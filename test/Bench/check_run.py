"""Checks bench/run.py's --json output (a --quick run): the FMA peak, every
case of --only with every side it should have (timed, or failed with a
reason), the outputs of every timed peer agreeing with nncc's within the
row's tolerance, the FLOP counts, GFLOP/s, shares of the peak and the ratio
to the best peer consistent with the medians, every side on the threads
asked for, and the markdown table's rows.

    check_run.py RESULT.json STDOUT.log GROUPS [--no-torch2]
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_common import expect, finish  # noqa: E402

res = json.load(open(sys.argv[1]))
log = open(sys.argv[2]).read()
groups = sys.argv[3].split(",")
torch2 = "--no-torch2" not in sys.argv
PEERS = ["torch2", "compile", "ort", "ort_fused"]
ENCODERS = {"encoder", "bert_small"}

peak = res.get("fma_peak_gflops")
if expect(peak and peak > 0 and res.get("fma_peak_how"), "a measured FMA peak"):
    print("peak ok")
expect(res["quick"] and res["reps"] == 2, "quick, 2 rounds")
rows = res["rows"]
expect(sorted(set(r["group"] for r in rows)) == sorted(groups),
       "the rows' cases %s are %s" % (sorted(set(r["group"] for r in rows)), sorted(groups)))


def close(a, b):
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b))


timed = 0
for row in rows:
    name, kind, sides = row["name"], row["kind"], row["sides"]
    base = kind[:-6] if kind.endswith("_train") else kind
    want = {"nncc", "torch1"}
    if torch2:
        want |= {"torch2", "compile"}
        if not kind.endswith("_train"):
            want.add("ort")
            if base in ENCODERS:
                want.add("ort_fused")
    expect(set(sides) == want, "%s: sides %s, want %s" % (name, sorted(sides), sorted(want)))
    expect(row["flops"] > 0 and row["flop_formula"], "%s: a FLOP count and its formula" % name)
    n = sides.get("nncc", {})
    if not expect("median_ms" in n, "%s: nncc timed" % name):
        continue
    for side, r in sides.items():
        if "failed" in r:
            expect(r["failed"].strip() != "", "%s, %s: a failure says why" % (name, side))
            continue
        ok = expect(len(r.get("times_ms", [])) == res["reps"], "%s, %s: one time per round" % (name, side))
        if not ok:
            continue
        timed += 1
        # every side runs on the threads asked for (the workers' environment
        # sets them; torch 1.13's own default here is 1, torch 2.x's the cores)
        if r.get("threads_seen") is not None:
            expect(r["threads_seen"] == res["threads"], "%s, %s: ran on %s threads, asked %s" % (
                name, side, r["threads_seen"], res["threads"]))
        expect(side == "ort" or side == "ort_fused" or r.get("threads_seen") is not None,
               "%s, %s: its thread count reported" % (name, side))
        expect(close(r["gflops"], row["flops"] / (r["median_ms"] * 1e-3) / 1e9),
               "%s, %s: GFLOP/s = FLOPs / median" % (name, side))
        expect(close(r["share"], r["gflops"] / peak), "%s, %s: share = GFLOP/s / peak" % (name, side))
        if side != "nncc":
            expect(math.isfinite(r["err"]) and r["err"] <= row["tolerance"] and not r["mismatch"],
                   "%s, %s: output agrees with nncc's (err %s, tol %g)" % (name, side, r["err"],
                                                                           row["tolerance"]))
    # the torch sides never fail at these shapes (torch.compile falls back to
    # eager where it cannot trace)
    for side in want & {"torch1", "torch2", "compile"}:
        expect("median_ms" in sides[side], "%s, %s timed: %s" % (name, side, sides[side].get("failed")))
    live = [p for p in PEERS if "median_ms" in sides.get(p, {})]
    if torch2 and expect(live, "%s: a peer timed" % name):
        best = min(live, key=lambda p: sides[p]["median_ms"])
        expect(row.get("best_peer") == best, "%s: the best peer is the fastest" % name)
        expect(close(row["best_over_nncc"], sides[best]["median_ms"] / n["median_ms"]),
               "%s: best peer / nncc = their medians' ratio" % name)
    if "median_ms" in sides.get("torch1", {}):
        expect(close(row["torch1_over_nncc"], sides["torch1"]["median_ms"] / n["median_ms"]),
               "%s: torch 1.13 / nncc" % name)
    expect(("| %s |" % name) in log, "%s: a markdown row" % name)
print("rows ok: %d" % len(rows))
print("timed sides ok: %d" % timed)
expect("| case | nncc ms | torch 1.13 |" in log, "the markdown header")
finish()
