#!/usr/bin/env python3
"""Budgets of `nncc inspect --memory --grad --memory-budget X` for one model
and binding: the plan at `min` and the larger of the plan with no budget
and the plan under an unbounded budget (reversible blocks stored rather than
reconstructed) bound the range; for budgets spread over it (and at both
ends) the planned peak never exceeds the budget, and a larger budget never
recomputes more (the FLOPs of recomputation, and of recomputation plus
reconstruction, are non-increasing, and zero once everything fits); just below `min` the budget
is an error that names the smallest feasible size.

    budget_sweep.py MODEL.nn DIM=SIZE... [--steps N]
"""
import json
import subprocess
import sys


def inspect(model, dims, budget=None):
    args = ["nncc", "inspect", model, "--memory", "--grad"]
    for d in dims:
        args += ["--dim", d]
    if budget is not None:
        args += ["--memory-budget", str(budget)]
    r = subprocess.run(args, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def main():
    steps = 8
    argv = sys.argv[1:]
    if "--steps" in argv:
        i = argv.index("--steps")
        steps = int(argv[i + 1])
        del argv[i:i + 2]
    model, dims = argv[0], argv[1:]
    rc, out, err = inspect(model, dims)
    assert rc == 0, err
    full = json.loads(out)
    rc, out, err = inspect(model, dims, "min")
    assert rc == 0, err
    low = json.loads(out)
    rc, out, err = inspect(model, dims, 10**18)
    assert rc == 0, err
    unbounded = json.loads(out)
    top, bottom = max(full["peak_bytes"], unbounded["peak_bytes"]), low["peak_bytes"]
    print(f"keep everything: peak {full['peak_bytes']}; unbounded: peak "
          f"{unbounded['peak_bytes']}, {unbounded['remat']['stored_reversible_blocks']} "
          f"reversible blocks stored; min: peak {bottom}, "
          f"{len(low['remat']['recomputed'])} recomputed")
    assert bottom <= top, (bottom, top)
    budgets = sorted({bottom + (top - bottom) * k // steps for k in range(steps + 1)})
    last = last_recomputed = None
    for b in budgets:
        rc, out, err = inspect(model, dims, b)
        assert rc == 0, f"budget {b}: {err}"
        plan = json.loads(out)
        r = plan["remat"]
        line = (f"budget {b}: peak {plan['peak_bytes']}, recomputed "
                f"{len(r['recomputed'])} ({r['recomputed_bytes']} bytes, "
                f"{r['recomputed_flops']:.4g} FLOPs)")
        if r["reconstructed"] or r["stored_reversible_blocks"]:
            line += (f", reconstructed {len(r['reconstructed'])} "
                     f"({r['reconstructed_flops']:.4g} FLOPs), stored "
                     f"{r['stored_reversible_blocks']}")
        print(line)
        if plan["peak_bytes"] > b:
            sys.exit("FAIL: over budget: " + line)
        flops = r["recomputed_flops"] + r["reconstructed_flops"]
        if last is not None and flops > last + 1e-9 * max(1.0, last):
            sys.exit(f"FAIL: not monotone: {flops} FLOPs after {last}")
        if last_recomputed is not None and \
                r["recomputed_flops"] > last_recomputed + 1e-9 * max(1.0, last_recomputed):
            sys.exit(f"FAIL: recomputation not monotone: {r['recomputed_flops']} FLOPs "
                     f"after {last_recomputed}")
        last, last_recomputed = flops, r["recomputed_flops"]
    if budgets[-1] >= top and last != 0:
        sys.exit("FAIL: a budget that fits everything still recomputes")
    rc, out, err = inspect(model, dims, bottom - 1)
    if rc != 1 or "infeasible" not in err or str(bottom) not in err:
        sys.exit(f"FAIL: budget {bottom - 1}: rc {rc}, stderr {err!r}")
    print(err.strip().splitlines()[0])
    print("OK")


if __name__ == "__main__":
    main()
