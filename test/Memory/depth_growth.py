"""Activation memory of a reversible encoder against its depth (issue 9's
goal: a 12-block and a 24-block reversible encoder at sequence 4096 within 5%
of each other).

Writes copies of MODEL with `N = depth` (and the position table `S = T`, so
T may exceed the file's S), asks `nncc inspect --memory --grad` for the
training step's planned peak (the arena: activations and workspaces; weights,
gradients and optimizer state are separate) at the default budget and at
`min`, and prints the peaks and their ratio. Exits 1 when a ratio exceeds
--max-ratio.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def peak(nncc, path, dims, budget):
    cmd = [nncc, "inspect", path, "--memory", "--grad"]
    if budget:
        cmd += ["--memory-budget", budget]
    for d in dims:
        cmd += ["--dim", d]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["peak_bytes"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("dims", nargs="+", help="NAME=SIZE bindings, T among them")
    ap.add_argument("--depths", default="12,24")
    ap.add_argument("--max-ratio", type=float, default=1.05)
    ap.add_argument("--nncc", default="nncc")
    args = ap.parse_args()

    source = open(args.model).read()
    seq = dict(d.split("=") for d in args.dims)["T"]
    depths = [int(x) for x in args.depths.split(",")]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for budget in ("", "min"):
            peaks = []
            for depth in depths:
                text, n = re.subn(r"\bN = \d+", f"N = {depth}", source)
                text, s = re.subn(r"\bS = \d+", f"S = {seq}", text)
                if n != 1 or s != 1:
                    sys.exit(f"{args.model}: expected one 'N = ' and one 'S = ' constant")
                path = os.path.join(tmp, f"depth{depth}.nn")
                with open(path, "w") as f:
                    f.write(text)
                peaks.append(peak(args.nncc, path, args.dims, budget))
            ratio = max(peaks) / min(peaks)
            label = budget or "default"
            print(f"{label}: " + ", ".join(f"{d} blocks {p}" for d, p in zip(depths, peaks))
                  + f"; ratio {ratio:.4f}")
            ok &= ratio <= args.max_ratio
    print("OK" if ok else f"FAIL: a ratio above {args.max_ratio}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
