#!/usr/bin/env python3
"""ODE adjoint gradients vs backpropagation through the solver steps.

ode_adjoint_check.py NNCC MODEL.nn WORKDIR [--dim K=V ...] [--tol T] [--steps S]

MODEL must contain `adjoint: true`. A copy with `adjoint: false` (and, with
--steps, both with `steps: S`) runs `nncc run --grad --precision f64` on the
same inputs and weights. Backprop through the steps is the exact gradient of
the discrete forward; the adjoint integrates the continuous adjoint ODE back
with the same method and steps, so the two differ by the solver's
truncation error (O(h^p), p = 4 for rk4). Prints per parameter
max|g_adj - g_bp| / max|g_bp| and PASS if all are <= tol."""
import os, re, subprocess, sys
import numpy as np

def main():
    a = sys.argv[1:]
    nncc, model, work = a[0], a[1], a[2]
    dims, tol, steps = [], 1e-5, None
    i = 3
    while i < len(a):
        if a[i] == "--dim": dims += ["--dim", a[i + 1]]; i += 2
        elif a[i] == "--tol": tol = float(a[i + 1]); i += 2
        elif a[i] == "--steps": steps = int(a[i + 1]); i += 2
        else: raise SystemExit("bad arg " + a[i])
    os.makedirs(work, exist_ok=True)
    src = open(model).read()
    if "adjoint: true" not in src:
        raise SystemExit("model has no `adjoint: true`")
    if steps is not None:
        src = re.sub(r"steps: \d+", f"steps: {steps}", src)
    name = os.path.splitext(os.path.basename(model))[0]
    paths = {}
    for mode, text in (("adjoint", src), ("steps", src.replace("adjoint: true", "adjoint: false"))):
        p = os.path.join(work, mode, name + ".nn")
        os.makedirs(os.path.dirname(p), exist_ok=True)
        open(p, "w").write(text)
        paths[mode] = p
    import fd_check as fc
    inp, wts = os.path.join(work, "in.st"), os.path.join(work, "w.st")
    base = [nncc, "run", "--precision", "f64", "--quiet", "--seed", "0", "--grad"]
    subprocess.run(base[:2] + [paths["adjoint"]] + base[2:] + ["--random-inputs"] + dims +
                   ["--save-inputs", inp, "-o", os.path.join(work, "first.st")], check=True)
    r0 = fc.read_st(os.path.join(work, "first.st"))
    rng = np.random.default_rng(1)
    weights = {k[5:]: (rng.standard_normal(v.shape) * 0.2).astype(np.float64)
               for k, v in r0.items() if k.startswith("grad.")}
    fc.write_st(wts, weights)
    g = {}
    for mode, p in paths.items():
        out = os.path.join(work, mode + ".st")
        subprocess.run(base[:2] + [p] + base[2:] + ["--inputs", inp, "--weights", wts, "-o", out],
                       check=True)
        g[mode] = {k[5:]: v for k, v in fc.read_st(out).items() if k.startswith("grad.")}
    worst = 0.0
    for k in weights:
        ga, gb = g["adjoint"][k], g["steps"][k]
        err = float(np.max(np.abs(ga - gb)) / max(1e-12, float(np.max(np.abs(gb)))))
        worst = max(worst, err)
        print(f"{k} rel={err:.2e}")
    print(f"worst adjoint vs through-steps {worst:.2e}; {'PASS' if worst <= tol else 'FAIL'}")
    sys.exit(0 if worst <= tol else 1)

if __name__ == "__main__":
    main()
