#!/usr/bin/env python3
"""Storing or reconstructing reversible blocks is nncc-remat's choice under a
budget: at `min` every block is reconstructed; under an unbounded budget
every block is stored (no reconstruction, nothing recomputed, its saves
reported kept with `stored_block`); between the two, the number of stored
blocks never falls as the budget grows, and blocks are stored only with
every residual kept, and a budget just below a plan's
peak stores fewer blocks than that plan.

    reversible_store.py MODEL.nn DIM=SIZE...
"""
import json
import subprocess
import sys


def inspect(model, dims, budget):
    args = ["nncc", "inspect", model, "--memory", "--grad", "--memory-budget", str(budget)]
    for d in dims:
        args += ["--dim", d]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"FAIL: {' '.join(args)}\n{r.stderr}")
    return json.loads(r.stdout)


def describe(name, plan):
    r = plan["remat"]
    stored = [e for e in r["kept"] if e.get("stored_block")]
    print(f"{name}: peak {plan['peak_bytes']}, stored {r['stored_reversible_blocks']}, "
          f"reconstructed {len(r['reconstructed'])}, recomputed {len(r['recomputed'])}, "
          f"{len(stored)} stored values")
    return r["stored_reversible_blocks"]


def fail(msg):
    sys.exit("FAIL: " + msg)


def main():
    model, dims = sys.argv[1], sys.argv[2:]
    low = inspect(model, dims, "min")
    high = inspect(model, dims, 10**18)
    n_low, n_high = describe("min", low), describe("unbounded", high)
    blocks = len(low["remat"]["reconstructed"]) + n_low
    if n_high != blocks or high["remat"]["reconstructed"] or high["remat"]["recomputed"]:
        fail("an unbounded budget should store every block and recompute nothing")
    if not any(e.get("stored_block") for e in high["remat"]["kept"]):
        fail("the stored blocks' values are not in the report")
    if n_low != 0:
        fail("`min` should reconstruct every block")
    if high["peak_bytes"] <= low["peak_bytes"]:
        fail("storing the blocks should cost memory")
    # Budgets between the two: the stored count is non-decreasing.
    last, counts = -1, []
    for k in range(1, 8):
        budget = low["peak_bytes"] + (high["peak_bytes"] - low["peak_bytes"]) * k // 8
        plan = inspect(model, dims, budget)
        n = plan["remat"]["stored_reversible_blocks"]
        if plan["peak_bytes"] > budget or n < last:
            fail(f"budget {budget}: peak {plan['peak_bytes']}, {n} stored after {last}")
        if n and plan["remat"]["recomputed"]:
            fail(f"budget {budget}: {n} blocks stored while residuals are recomputed")
        last = n
        counts.append(n)
    print("between: stored", " ".join(map(str, counts)))
    if not any(0 < n < blocks for n in counts):
        fail("no budget between the two stores only some blocks")
    below = inspect(model, dims, high["peak_bytes"] - 1)
    r = below["remat"]
    print(f"just below: stored {r['stored_reversible_blocks']}, reconstructed "
          f"{len(r['reconstructed'])}, recomputed {len(r['recomputed'])}")
    if r["recomputed_flops"] + r["reconstructed_flops"] <= 0:
        fail("a budget below the all-stored peak costs nothing")
    print("OK")


if __name__ == "__main__":
    main()
