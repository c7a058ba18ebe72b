#!/usr/bin/env python3
"""BPTT schedules of one recurrent model at a long sequence: the training
step's exact planned peak (`nncc inspect --memory`, which equals the
runtime's) and its forward + backward time for keeping every gate, sqrt(T)
checkpointing and the binomial (Revolve) schedule with a few snapshot
counts. Timings are interleaved (round robin over the variants), median of
--reps.

    bench/bptt_schedules.py [--model bench/models/lstm_train.nn] [--B 4] [--T 4096]
                            [--snapshots 2,12,64] [--reps 3]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "utils"))

import numpy as np  # noqa: E402

import nncc_testing as nt  # noqa: E402
import nncc_train as ntr  # noqa: E402


def sh(*args):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if p.returncode:
        sys.exit("%s failed:\n%s" % (" ".join(args), p.stderr))
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(HERE, "models", "lstm_train.nn"))
    ap.add_argument("--B", type=int, default=4)
    ap.add_argument("--T", type=int, default=4096)
    ap.add_argument("--snapshots", default="2,12,64")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    nncc = nt.NNCC
    opt = os.path.join(os.path.dirname(nncc), "nncc-opt")
    tmp = tempfile.mkdtemp(prefix="bptt-")
    full = os.path.join(tmp, "full.mlir")
    sh(nncc, "compile", a.model, "--emit", "nn-grad", "-o", full)
    k = math.ceil(math.sqrt(a.T))
    variants = [("keep", None), ("sqrt_t k=%d" % k, "every=%d" % k)]
    variants += [("binomial s=%s" % s, "snapshots=%s" % s) for s in a.snapshots.split(",")]
    dims = ["--dim", "B=%d" % a.B, "--dim", "T=%d" % a.T]
    rows = []
    for name, flag in variants:
        path = full
        if flag:
            path = os.path.join(tmp, flag.replace("=", "") + ".mlir")
            sh(opt, full, "--nn-bptt-checkpoint=" + flag, "-o", path)
        plan = json.loads(sh(nncc, "inspect", path, "--memory", "--grad", *dims))
        lib = ntr.TrainLib(nt.compile_model(path, ["--grad"]))
        ctx = lib.context(seed=1)
        rng = np.random.RandomState(0)
        ctx.set_inputs({n: rng.randn(*[a.B if d == "B" else a.T if d == "T" else d
                                        for d in shape]).astype(np.float32)
                        for n, _, shape in lib.inputs})
        ctx.forward_backward()  # warm-up
        rows.append({"variant": name, "peak": plan["peak_bytes"], "ctx": ctx, "times": []})
    for _ in range(a.reps):
        for r in rows:
            t0 = time.perf_counter()
            r["ctx"].forward_backward()
            r["times"].append(time.perf_counter() - t0)
    base_peak, base_t = rows[0]["peak"], float(np.median(rows[0]["times"]))
    print("%s B=%d T=%d, forward + backward, median of %d (interleaved)" %
          (os.path.basename(a.model), a.B, a.T, a.reps))
    print("| variant | planned peak MiB | × keep | step s | × keep |")
    print("|---|---|---|---|---|")
    for r in rows:
        t = float(np.median(r["times"]))
        print("| %s | %.1f | %.2f | %.3f | %.2f |" % (r["variant"], r["peak"] / 2**20,
                                                     r["peak"] / base_peak, t, t / base_t))


if __name__ == "__main__":
    main()
