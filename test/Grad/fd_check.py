#!/usr/bin/env python3
"""Central finite differences vs `nncc run --grad --precision f64`.

fd_check.py NNCC MODEL.nn WORKDIR [--dim K=V ...] [--coords N] [--eps E] [--tol T]
            [--train-mode] [--params K] [--only SUBSTR ...]

Draws inputs (--random-inputs, saved) and weights, runs `--grad` once, then
for N random coordinates of every parameter re-runs the model with that
weight perturbed by +-eps and compares (L+ - L-)/2eps with grad.<param>.
The perturbed losses come from plain `nncc run` (inference mode), so the
check also proves that --grad differentiates the loss `run` reports. With
--train-mode both sides run in training mode (dropout active, fixed seeds):
`--grad --train-mode`. --params K checks K parameters drawn at random (all
by default; for BERT-sized models), --only SUBSTR restricts the check to
parameters whose name contains SUBSTR (repeatable). safetensors files go
through nncc_testing.safetensors."""
import json, os, struct, subprocess, sys
import numpy as np

from nncc_testing.safetensors import load_safetensors as read_st
from nncc_testing.safetensors import save_safetensors as write_st


def main():
    a = sys.argv[1:]
    nncc, model, work = a[0], a[1], a[2]
    dims, coords, eps, tol, seed, train = [], 2, 1e-6, 1e-4, 0, False
    max_params, only = 0, []
    i = 3
    while i < len(a):
        if a[i] == "--dim": dims += ["--dim", a[i + 1]]; i += 2
        elif a[i] == "--coords": coords = int(a[i + 1]); i += 2
        elif a[i] == "--eps": eps = float(a[i + 1]); i += 2
        elif a[i] == "--tol": tol = float(a[i + 1]); i += 2
        elif a[i] == "--train-mode": train = True; i += 1
        elif a[i] == "--params": max_params = int(a[i + 1]); i += 2
        elif a[i] == "--only": only.append(a[i + 1]); i += 2
        else: raise SystemExit("bad arg " + a[i])
    os.makedirs(work, exist_ok=True)
    have = json.loads(subprocess.run([nncc, "inspect", model], check=True, capture_output=True).stdout)["dims"]
    dims = [x for k in range(0, len(dims), 2) for x in dims[k:k + 2] if dims[k + 1].split("=")[0] in have]
    inp, out = [os.path.join(work, f) for f in ("in.st", "out.st")]
    plain = [nncc, "run", model, "--precision", "f64", "--quiet", "--seed", "0"]
    base = plain + ["--grad"] + (["--train-mode"] if train else [])
    # Perturbed losses: plain runs (inference), or --grad --train-mode runs.
    perturbed = base if train else plain
    subprocess.run(base + ["--random-inputs"] + dims + ["--save-inputs", inp, "-o", out], check=True)
    res = read_st(out)
    grads = {k[5:]: v for k, v in res.items() if k.startswith("grad.")}
    # The weights init_weights(0) drew, as f64 (rebuilt through a dump run).
    dump = os.path.join(work, "dump.st")
    weights = {}
    sig = json.loads(subprocess.run([nncc, "inspect", model], check=True, capture_output=True).stdout)
    # init weights are not exported by run: use load/save through perturbation of a
    # saved copy written by --save-weights when available; else draw our own.
    rng = np.random.default_rng(1)
    for p in sig["parameters"]:
        weights[p["name"]] = (rng.standard_normal([int(d) for d in p["shape"]]) * 0.2).astype(np.float64)
    write_st(dump, weights)
    # Where each parameter's data starts in the dump: a perturbation rewrites
    # one element in place instead of the whole file (BERT's f64 weights are
    # 139 MB).
    with open(dump, "rb") as f:
        (hlen,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(hlen))
    data_start = {n: 8 + hlen + e["data_offsets"][0] for n, e in header.items() if n != "__metadata__"}

    def poke(name, c, value):
        with open(dump, "r+b") as f:
            f.seek(data_start[name] + 8 * int(c))
            f.write(struct.pack("<d", value))

    def loss(cmd=perturbed):
        subprocess.run(cmd + ["--inputs", inp, "--weights", dump, "-o", out], check=True)
        r = read_st(out)
        return float(r["loss"]), r
    _, r0 = loss(base)
    grads = {k[5:]: v for k, v in r0.items() if k.startswith("grad.")}
    worst = 0.0
    bad = 0
    names = [n for n in weights if not only or any(o in n for o in only)]
    if max_params and max_params < len(names):
        names = [names[k] for k in sorted(rng.choice(len(names), size=max_params, replace=False))]
    for name in names:
        w = weights[name]
        g = grads[name]
        flat = w.reshape(-1)
        picks = rng.choice(flat.size, size=min(coords, flat.size), replace=False)
        for c in picks:
            old = flat[c]
            poke(name, c, old + eps); lp, _ = loss()
            poke(name, c, old - eps); lm, _ = loss()
            poke(name, c, old)
            fd = (lp - lm) / (2 * eps)
            an = float(g.reshape(-1)[c])
            err = abs(fd - an) / max(1e-3, abs(fd), abs(an))
            worst = max(worst, err)
            status = "ok" if err <= tol else "MISMATCH"
            bad += err > tol
            print(f"{name}[{c}] fd={fd:.9e} grad={an:.9e} rel={err:.2e} {status}")
    print(f"worst relative error {worst:.2e} over {len(names)} of {len(weights)} parameters; {'FAIL' if bad else 'PASS'}")
    sys.exit(1 if bad else 0)

if __name__ == "__main__":
    main()
