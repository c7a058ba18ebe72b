"""Training under a memory budget follows the run without one: `nncc train`
of the same model on the same data from the same seed, without a budget
(keep everything, loss heads unfused, reversible blocks reconstructed) and
with `--memory-budget BUDGET` (heads fused, nn.linear_cross_entropy;
residuals recomputed; reversible blocks stored, as the search chooses); the
per-step losses and gradient norms (the log's 9 digits) and the final
weights agree to `tol` (relative to each tensor's largest magnitude), over
several steps of Adam with clipping.

    fused_head_equiv.py NNCC MODEL.nn WORKDIR BUDGET TOL [--dim ...] [--precision f64]
"""
import argparse
import os
import sys

import numpy as np
from nncc_testing.train_runs import random_data, train

ap = argparse.ArgumentParser()
ap.add_argument("nncc")
ap.add_argument("model")
ap.add_argument("work")
ap.add_argument("budget")
ap.add_argument("tol", type=float)
ap.add_argument("--dim", action="append", default=[])
ap.add_argument("--precision", default="f32")
a = ap.parse_args()
os.makedirs(a.work, exist_ok=True)
data = os.path.join(a.work, "data.safetensors")
random_data(a.nncc, a.model, data, a.dim)


def run(tag, extra):
    rows, weights = train(a.nncc, a.model, data, a.work, tag,
                          ["--batch", "2", "--epochs", "3", "--no-shuffle", "--seed", "4",
                           "--precision", a.precision] + extra)
    return [(float(r["loss"]), float(r["grad_norm"])) for r in rows], weights


keep, wa = run("keep", [])
fused, wb = run("fused", ["--memory-budget", a.budget])
assert len(keep) == len(fused) >= 6, (len(keep), len(fused))
worst = max(abs(x - y) / max(1e-30, abs(x)) for k, f in zip(keep, fused) for x, y in zip(k, f))
assert sorted(wa) == sorted(wb)
for name in wa:
    x, y = np.asarray(wa[name], np.float64), np.asarray(wb[name], np.float64)
    scale = max(1e-30, float(np.max(np.abs(x), initial=0.0)))
    worst = max(worst, float(np.max(np.abs(x - y), initial=0.0)) / scale)
ok = worst <= a.tol
print("%s: %s %s budget %s: %d steps, losses %.6g..%.6g, worst relative difference %.2e "
      "(tol %.0e, losses, norms and %d weights)" % ("PASS" if ok else "FAIL", os.path.basename(a.model), a.precision,
                      a.budget, len(keep), keep[0][0], keep[-1][0], worst, a.tol, len(wa)))
sys.exit(0 if ok else 1)
