#!/usr/bin/env python3
"""`nncc train --micro-batch auto` counts the fused loss heads: a budget that
the training step of M rows fits only with its heads fused (no [rows, V]
logits) gets micro-batches of M rows (evened out), not of the largest size
whose step fits with the heads as written.

    check_auto_micro_batch.py NNCC MODEL.nn WORKDIR --batch B [--dim D=N ...]

The plans come from `nncc inspect --memory --grad --train-mode`: with the
heads as written (no budget) and the best plan keeping everything
(`--memory-budget 64GiB`: the heads fused where that is smaller).
"""
import argparse
import json
import os
import subprocess
import sys

from nncc_testing.train_runs import nncc_checked, random_data

ap = argparse.ArgumentParser()
ap.add_argument("nncc")
ap.add_argument("model")
ap.add_argument("work")
ap.add_argument("--batch", type=int, required=True)
ap.add_argument("--dim", action="append", default=[])
a = ap.parse_args()
os.makedirs(a.work, exist_ok=True)
dims = {d.split("=")[0]: d for d in a.dim}


def peak(rows, budget=None):
    d = dict(dims, B="B=%d" % rows)
    out = nncc_checked(a.nncc, ["inspect", a.model, "--memory", "--grad", "--train-mode"] +
                       (["--memory-budget", budget] if budget else []) +
                       sum((["--dim", v] for v in d.values()), []))
    return json.loads(out)["peak_bytes"]


def even(rows):
    count = -(-a.batch // rows)
    return -(-a.batch // count)


written = {m: peak(m) for m in range(1, a.batch + 1)}
best = {m: peak(m, "64GiB") for m in range(1, a.batch + 1)}
# A size m that fits only fused, whose even split differs from the one the
# heads as written would give.
case = None
for m in range(a.batch - 1, 0, -1):
    budget = (best[m] + best[m + 1]) // 2
    as_written = max([k for k in written if written[k] <= budget] or [0])
    if best[m] < written[m] and as_written and even(as_written) != even(m):
        case = (m, budget, as_written)
        break
if not case:
    sys.exit("FAIL: no batch size here fits only with fused heads: %s vs %s" % (written, best))
m, budget, as_written = case
data = os.path.join(a.work, "data.safetensors")
random_data(a.nncc, a.model, data, ["B=%d" % a.batch] + [v for k, v in dims.items() if k != "B"])
out = nncc_checked(a.nncc, ["train", a.model, "--data", data, "--batch", str(a.batch),
                            "--memory-budget", str(budget), "--micro-batch", "auto",
                            "--max-steps", "1", "-o", os.path.join(a.work, "w.safetensors")])
line = [l for l in out.splitlines() if l.startswith("--micro-batch auto")][0]
ok = line.split()[2] == str(even(m))
print("%s: budget %d: %d rows fit with the heads fused (%d bytes; as written %d rows, %d "
      "bytes); %s %s" % (os.path.basename(a.model), budget, m, best[m], as_written,
                         written[as_written], line, "ok" if ok else "FAIL"))
sys.exit(0 if ok else 1)
