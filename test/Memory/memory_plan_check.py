#!/usr/bin/env python3
"""For each MODEL:DIM=SIZE,... argument: the planned peak of `nncc inspect
--memory` must equal the high-water mark the runtime reports after the same
run (`nncc run --memory-stats`), forward and (--grad) training step, and
the planned arena must equal the runtime's arena. Prints one line per check;
exits 1 on the first difference.

    memory_plan_check.py [--grad] [--budget X] MODELS_DIR deep_mlp:N=2 lstm_lm:B=2,T=8 ...
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def nncc(*args):
    r = subprocess.run(["nncc", *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"nncc {' '.join(args)} failed:\n{r.stderr}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grad", action="store_true")
    ap.add_argument("--budget", help="--memory-budget for both commands")
    ap.add_argument("models_dir")
    ap.add_argument("cases", nargs="+")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    for case in a.cases:
        model, _, dims = case.partition(":")
        dim_args = []
        for d in filter(None, dims.split(",")):
            dim_args += ["--dim", d]
        extra = (["--grad"] if a.grad else []) + (
            ["--memory-budget", a.budget] if a.budget else [])
        src = os.path.join(a.models_dir, model + ".nn")
        plan = json.loads(nncc("inspect", src, "--memory", *extra, *dim_args))
        stats_path = os.path.join(tmp, model + ".json")
        nncc("run", src, "--random-inputs", "--quiet", *extra, *dim_args,
             "--memory-stats", stats_path)
        with open(stats_path) as f:
            stats = json.load(f)
        mode = "training" if a.grad else "forward"
        line = (f"{model} {mode}: planned peak {plan['peak_bytes']} arena "
                f"{plan['arena_bytes']}, runtime peak {stats['peak_bytes']} arena "
                f"{stats['arena_bytes']}")
        print(line)
        if plan["mode"] != mode or stats["mode"] != mode:
            sys.exit(f"FAIL: modes {plan['mode']} / {stats['mode']}")
        if (plan["peak_bytes"] != stats["peak_bytes"] or
                plan["arena_bytes"] != stats["arena_bytes"] or plan["peak_bytes"] <= 0):
            sys.exit("FAIL: " + line)
        peak = plan.get("peak", {})
        if not peak.get("loc", "").startswith(src):
            sys.exit(f"FAIL: the peak's location {peak} is not in {src}")
    print("OK")


if __name__ == "__main__":
    main()
