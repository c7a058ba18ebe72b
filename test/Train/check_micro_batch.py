#!/usr/bin/env python3
"""`nncc train --micro-batch M`: every batch runs as micro-batches of at
most M rows whose gradients are averaged (weighted by their sizes) before one
optimizer step. For a model without dropout whose loss is a mean over
samples, the run logs the same steps, learning rates, losses and gradient
norms as the run on whole batches, and ends with the same weights, up to
rounding (relative 1e-12 in f64); --micro-batch >= the batch is the plain
run bit for bit. Under --memory-budget the plan is the micro-batch's: a
budget below the whole batch's smallest plan but above the micro-batch's
trains with --micro-batch and is refused without it; with --micro-batch
auto and a budget between the keep-everything plans of M and M + 1 rows the
trainer takes ceil(B / M) micro-batches of even size (and trains as
--micro-batch with that size does, bit for bit); below one sample's
keep-everything plan it picks 1 and recomputes.

    check_micro_batch.py NNCC MODEL.nn WORKDIR --micro M [--dim D=N ...] [--precision P] [--batch B] [--epochs E]
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
from nncc_testing.safetensors import load_safetensors
from nncc_testing.train_runs import nncc_checked, random_data, train

ap = argparse.ArgumentParser()
ap.add_argument("nncc")
ap.add_argument("model")
ap.add_argument("work")
ap.add_argument("--micro", required=True)
ap.add_argument("--dim", action="append", default=[])
ap.add_argument("--precision", default="f64")
ap.add_argument("--batch", default="5")
ap.add_argument("--epochs", default="2")
a = ap.parse_args()
os.makedirs(a.work, exist_ok=True)
data = os.path.join(a.work, "data.safetensors")
random_data(a.nncc, a.model, data, a.dim)
common = ["--batch", a.batch, "--epochs", a.epochs, "--seed", "7", "--precision", a.precision]


def run(tag, extra):
    rows, weights = train(a.nncc, a.model, data, a.work, tag, common + extra)
    return rows, weights


whole, w_whole = run("whole", [])
micro, w_micro = run("micro", ["--micro-batch", a.micro])
big, w_big = run("big", ["--micro-batch", str(int(a.batch) + 3)])
name = os.path.basename(a.model)


def rel(x, y):
    return abs(x - y) / max(abs(y), 1e-300)


worst = {"loss": 0.0, "grad_norm": 0.0}
same_lr = len(whole) == len(micro)
for r, m in zip(whole, micro):
    same_lr &= (r["epoch"], r["step"], r["lr"]) == (m["epoch"], m["step"], m["lr"])
    for k in worst:
        worst[k] = max(worst[k], rel(float(m[k]), float(r[k])))
w_err = max(float(np.max(np.abs(w_micro[k] - v)) / max(float(np.max(np.abs(v))), 1e-300))
            for k, v in w_whole.items())
ok = same_lr and max(worst.values()) <= 1e-12 and w_err <= 1e-12 and sorted(w_micro) == sorted(w_whole)
print("%s %s: batch %s in micro-batches of %s: %d steps, lr equal %s, loss rel %.1e, "
      "grad_norm rel %.1e, weights rel %.1e %s" % (
          name, a.precision, a.batch, a.micro, len(micro), same_lr, worst["loss"],
          worst["grad_norm"], w_err, "ok" if ok else "FAIL"))
same = whole == big and all(np.array_equal(w_big[k], v) for k, v in w_whole.items())
print("%s: --micro-batch above the batch: log and %d weights bit-identical %s" % (
    name, len(w_whole), "ok" if same else "FAIL"))
ok &= same

# The budget: between the micro-batch's smallest plan and the batch's.
dims = {d.split("=")[0]: d for d in a.dim}
batch_dim = next(k for k in dims if k in ("B", "N"))


def planned_peak(rows_, budget=None):
    """`nncc inspect --memory --grad` of `rows_` rows: the plan under
    `budget` (None: keeping everything)."""
    d = dict(dims, **{batch_dim: "%s=%s" % (batch_dim, rows_)})
    p = subprocess.run([a.nncc, "inspect", a.model, "--memory", "--grad", "--precision",
                        a.precision] + (["--memory-budget", budget] if budget else []) +
                       sum((["--dim", v] for v in d.values()), []),
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout)["peak_bytes"]


def smallest(rows_):
    return planned_peak(rows_, "min")


lo, hi = smallest(a.micro), smallest(a.batch)
budget = str((lo + hi) // 2)
fits = subprocess.run([a.nncc, "train", a.model, "--data", data, "--quiet", "--memory-budget",
                       budget, "--micro-batch", a.micro, "-o",
                       os.path.join(a.work, "budget.safetensors")] + common,
                      capture_output=True, text=True)
refused = subprocess.run([a.nncc, "train", a.model, "--data", data, "--quiet",
                          "--memory-budget", budget, "-o",
                          os.path.join(a.work, "refused.safetensors")] + common,
                         capture_output=True, text=True)
good = (lo < hi and fits.returncode == 0 and refused.returncode == 1 and
        "is infeasible" in refused.stderr)
print("%s: budget %s bytes (micro-batch's smallest plan %d, batch's %d): trains with "
      "--micro-batch %s, refused without (%s) %s" % (
          name, budget, lo, hi, fits.returncode == 0 and "yes" or "no: " + fits.stderr.strip(),
          refused.stderr.strip().splitlines()[0] if refused.stderr else "no error",
          "ok" if good else "FAIL"))
ok &= good


keep_all = planned_peak


# --micro-batch auto: as few micro-batches as fit keeping everything, evened
# out: under a budget between the plans of M and M + 1 rows, ceil(B / M)
# micro-batches of ceil(B / ceil(B / M)) rows.
m = int(a.micro)
budget = str((keep_all(m) + keep_all(m + 1)) // 2)
count = -(-int(a.batch) // m)
even = str(-(-int(a.batch) // count))
auto = nncc_checked(a.nncc, ["train", a.model, "--data", data, "--memory-budget", budget,
                             "--micro-batch", "auto", "-o",
                             os.path.join(a.work, "auto.safetensors")] + common)
line = [l for l in auto.splitlines() if l.startswith("--micro-batch auto")][0]
_, w_fixed = run("fixed", ["--memory-budget", budget, "--micro-batch", even])
w_auto = load_safetensors(os.path.join(a.work, "auto.safetensors"))
chosen = line.split()[2] == even
same = all(np.array_equal(w_auto[k], v) for k, v in w_fixed.items())
print("%s: budget %s (plans of %d and %d rows around it): %s; weights %s --micro-batch %s's %s" % (
    name, budget, m, m + 1, line, "bit-identical to" if same else "differ from", even,
    "ok" if chosen and same else "FAIL"))
ok &= chosen and same

# Not even one sample keeping everything: one, with recomputation.
lo1, keep1 = smallest(1), keep_all(1)
budget = str((lo1 + keep1) // 2)
auto = nncc_checked(a.nncc, ["train", a.model, "--data", data, "--memory-budget", budget,
                             "--micro-batch", "auto", "-o",
                             os.path.join(a.work, "auto1.safetensors")] + common)
line = [l for l in auto.splitlines() if l.startswith("--micro-batch auto")][0]
good = lo1 < keep1 and line.split()[2] == "1"
print("%s: budget %s (one sample: smallest plan %d, keeping everything %d): %s %s" % (
    name, budget, lo1, keep1, line, "ok" if good else "FAIL"))
ok &= good
sys.exit(0 if ok else 1)
