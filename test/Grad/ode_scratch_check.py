#!/usr/bin/env python3
"""The ODE backward's scratch lives in the arena (memory_stats), not the heap.

ode_scratch_check.py [--dim K=V ...] --same A.nn B.nn
    arena bytes of A and B (compiled with --grad, one forward_backward) agree
    within 5% (the adjoint method: independent of the number of steps).
ode_scratch_check.py [--dim K=V ...] --grows N A.nn B.nn
    B's arena exceeds A's by at least N bytes (through the steps: one state
    per step in the workspace; a scratch back on the heap would not show).
ode_scratch_check.py [--dim K=V ...] --error A.nn
    forward_backward fails; prints the error message.

Inputs are random (seed 0); an input named `times` gets increasing rows."""
import sys

import numpy as np

import nncc_train as ntr
from nncc_testing.library import NNCCError


def run(path, dims):
    lib = ntr.TrainLib.compile(path)
    ctx = lib.context(seed=0)
    rng = np.random.default_rng(0)
    inputs = {}
    for name, dt, shape in lib.inputs:
        shp = [d if isinstance(d, int) else dims[d] for d in shape]
        v = rng.standard_normal(shp)
        if name == "times":
            v = np.cumsum(np.abs(v) + 0.1, axis=-1)
        inputs[name] = v.astype(dt)
    ctx.set_inputs(inputs)
    ctx.forward_backward()
    return ctx.memory_stats()


def main():
    a = sys.argv[1:]
    dims = {}
    while a and a[0] == "--dim":
        k, v = a[1].split("=")
        dims[k] = int(v)
        a = a[2:]
    mode = a[0]
    if mode == "--error":
        try:
            run(a[1], dims)
        except NNCCError as e:
            print("ERROR", e)
            return 0
        print("FAIL: no error")
        return 1
    if mode == "--same":
        x, y = run(a[1], dims)[0], run(a[2], dims)[0]
        ok = abs(y - x) <= 0.05 * max(x, y)
        print("arena %d vs %d bytes (%+.2f%%)" % (x, y, 100.0 * (y - x) / x))
    elif mode == "--grows":
        need = int(a[1])
        x, y = run(a[2], dims)[0], run(a[3], dims)[0]
        ok = y - x >= need
        print("arena %d vs %d bytes (+%d, at least %d expected)" % (x, y, y - x, need))
    else:
        raise SystemExit("bad mode " + mode)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
