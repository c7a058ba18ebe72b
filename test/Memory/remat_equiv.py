#!/usr/bin/env python3
"""Recomputing changes memory, not results: `nncc run --grad` with a memory
budget gives the loss, outputs and every gradient of the run without one
(f64; same kernels on the same values, dropout masks drawn from the same
seeds): recomputed residuals bit for bit; a checkpointed BPTT scan sums its
weight gradients segment by segment, and a stored reversible block reads
its input where the run without a budget reconstructs it (y2 - G(y1) is x2
up to rounding), so there the metric max|a - b| / max(1, max|a|) must stay
below 1e-12. The budgeted run never uses more memory than the budget, nor,
for a budget below the unbudgeted run's peak, more than that run.

    remat_equiv.py [--train-mode] MODELS_DIR MODEL:DIM=SIZE,... BUDGET
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from nncc_testing.safetensors import load_safetensors


def run(src, dims, extra, out, stats):
    args = ["nncc", "run", src, "--grad", "--precision", "f64", "--random-inputs",
            "--quiet", "-o", out, "--memory-stats", stats, *extra]
    for d in dims:
        args += ["--dim", d]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"FAIL: {' '.join(args)}\n{r.stderr}")
    with open(stats) as f:
        return json.load(f)


def budget_bytes(budget):
    """The size of a --memory-budget in bytes (None for `min`)."""
    for suffix, scale in (("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("", 1)):
        if budget != "min" and budget.endswith(suffix):
            return int(float(budget[:len(budget) - len(suffix)]) * scale)
    return None


def main():
    argv = sys.argv[1:]
    extra = []
    if argv[0] == "--train-mode":
        extra.append("--train-mode")
        argv = argv[1:]
    models_dir, case, budget = argv
    model, _, dimstr = case.partition(":")
    dims = [d for d in dimstr.split(",") if d]
    src = os.path.join(models_dir, model + ".nn")
    tmp = tempfile.mkdtemp()
    a = run(src, dims, extra, f"{tmp}/a.st", f"{tmp}/a.json")
    b = run(src, dims, extra + ["--memory-budget", budget], f"{tmp}/b.st", f"{tmp}/b.json")
    ta, tb = load_safetensors(f"{tmp}/a.st"), load_safetensors(f"{tmp}/b.st")
    assert sorted(ta) == sorted(tb)
    def err(k):
        x, y = np.asarray(ta[k], np.float64), np.asarray(tb[k], np.float64)
        return float(np.max(np.abs(x - y), initial=0.0)) / max(1.0, float(np.max(np.abs(x), initial=0.0)))
    worst = max(err(k) for k in ta)
    bitwise = sum(np.array_equal(np.asarray(ta[k]), np.asarray(tb[k])) for k in ta)
    print(f"{model} {' '.join(extra)} budget {budget}: {len(ta)} tensors, {bitwise} "
          f"bit-identical, worst {worst:.2e}; peak {a['peak_bytes']} -> {b['peak_bytes']}")
    if worst > 1e-12:
        sys.exit(f"FAIL: worst difference {worst}")
    limit = budget_bytes(budget)
    if limit is not None and b["peak_bytes"] > limit:
        sys.exit("FAIL: the budgeted run exceeds its budget")
    if (limit is None or limit < a["peak_bytes"]) and b["peak_bytes"] > a["peak_bytes"]:
        sys.exit("FAIL: the budgeted run uses more memory")
    print("OK")


if __name__ == "__main__":
    main()
