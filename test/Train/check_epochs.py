"""`nncc train` with mini-batches: mean loss of the last epoch < first epoch.

    check_epochs.py NNCC MODEL.nn WORKDIR --dim N=50 [--dim T=6] --batch 16 --epochs 8
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
ap.add_argument("--batch", type=int, required=True)
ap.add_argument("--epochs", type=int, required=True)
a, extra = ap.parse_known_args()
os.makedirs(a.work, exist_ok=True)
data = os.path.join(a.work, "data.safetensors")
log = os.path.join(a.work, "log.csv")
dims = sum((["--dim", d] for d in a.dim), [])
p = subprocess.run([a.nncc, "run", a.model, "--random-inputs", "--inputs-only",
                    "--save-inputs", data] + dims, capture_output=True, text=True)
if p.returncode:
    sys.exit("data: " + p.stderr)
n = int(a.dim[0].split("=")[1])
p = subprocess.run([a.nncc, "train", a.model, "--data", data, "--batch", str(a.batch),
                    "--epochs", str(a.epochs), "--log", log, "-o",
                    os.path.join(a.work, "w.safetensors"), "--progress"] + extra,
                   capture_output=True, text=True)
sys.stdout.write(p.stdout)
if p.returncode:
    print("FAIL: nncc train exited %d:\n%s" % (p.returncode, p.stderr))
    sys.exit(1)
rows = list(csv.DictReader(open(log)))
steps = (n + a.batch - 1) // a.batch
by = {}
for r in rows:
    by.setdefault(int(r["epoch"]), []).append(float(r["loss"]))
first, last = by[1], by[a.epochs]
ok = (len(rows) == steps * a.epochs and len(first) == steps and
      sum(last) / len(last) < sum(first) / len(first) and "epoch 1/" in p.stderr)
print("%s: %s epoch-mean loss %.5g -> %.5g (%d steps/epoch)" % (
    "PASS" if ok else "FAIL", os.path.basename(a.model), sum(first) / len(first),
    sum(last) / len(last), steps))
sys.exit(0 if ok else 1)
