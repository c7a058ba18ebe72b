"""`nncc train` reduces the loss: random valid data for a model (nncc run
--random-inputs --inputs-only), one batch of all samples repeated for
--steps steps (epochs of one step, no shuffling), then the CSV log's first
and last loss are compared. Prints PASS or FAIL with the numbers.

    check_train.py NNCC MODEL.nn WORKDIR --dim B=4 [--dim T=8] [--steps 5] [args for nncc train]
"""
import argparse
import csv
import os
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("nncc")
ap.add_argument("model")
ap.add_argument("work")
ap.add_argument("--dim", action="append", default=[])
ap.add_argument("--steps", type=int, default=5)
ap.add_argument("--seed", type=int, default=0)
a, extra = ap.parse_known_args()
os.makedirs(a.work, exist_ok=True)
data = os.path.join(a.work, "data.safetensors")
log = os.path.join(a.work, "log.csv")
dims = sum((["--dim", d] for d in a.dim), [])
p = subprocess.run([a.nncc, "run", a.model, "--random-inputs", "--inputs-only", "--save-inputs",
                    data, "--seed", str(a.seed)] + dims, capture_output=True, text=True)
if p.returncode:
    sys.exit("data: " + p.stderr)
n = None
for d in a.dim:
    k, v = d.split("=")
    if n is None:
        n = int(v)  # the first --dim is the leading (sample) dim
p = subprocess.run([a.nncc, "train", a.model, "--data", data, "--batch", str(n), "--epochs",
                    str(a.steps), "--no-shuffle", "--log", log, "-o",
                    os.path.join(a.work, "w.safetensors"), "--seed", str(a.seed)] + extra,
                   capture_output=True, text=True)
sys.stdout.write(p.stdout)
if p.returncode:
    print("FAIL: nncc train exited %d:\n%s" % (p.returncode, p.stderr))
    sys.exit(1)
rows = list(csv.DictReader(open(log)))
losses = [float(r["loss"]) for r in rows]
ok = len(losses) == a.steps and losses[-1] < losses[0] and all(
    float(r["grad_norm"]) > 0 for r in rows)
print("%s: %s loss %s" % ("PASS" if ok else "FAIL", os.path.basename(a.model),
                           " -> ".join("%.5g" % l for l in losses)))
sys.exit(0 if ok else 1)
