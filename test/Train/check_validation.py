#!/usr/bin/env python3
"""`nncc train --validation V`: after each epoch, the loss on V in inference
mode. The last epoch's val_loss (stdout and the CSV's last row of that
epoch, the other rows' val_loss empty) equals the loss `nncc run` computes
on all of V with the trained weights (a mean-reduced loss whose samples
weigh the same: the sample-weighted mean of the batch losses is the loss of
the whole set).

    check_validation.py NNCC MODEL.nn WORKDIR TOL [--dim D=N ...] [--val-dim D=N ...] [--precision P] [--batch B]
"""
import argparse
import csv
import os
import re
import sys

from nncc_testing.safetensors import load_safetensors
from nncc_testing.train_runs import nncc_checked, random_data

ap = argparse.ArgumentParser()
ap.add_argument("nncc")
ap.add_argument("model")
ap.add_argument("work")
ap.add_argument("tol", type=float)
ap.add_argument("--dim", action="append", default=[])
ap.add_argument("--val-dim", action="append", default=[])
ap.add_argument("--precision", default="f32")
ap.add_argument("--batch", default="4")
a = ap.parse_args()
os.makedirs(a.work, exist_ok=True)
train_data = os.path.join(a.work, "train.safetensors")
val = os.path.join(a.work, "val.safetensors")
random_data(a.nncc, a.model, train_data, a.dim, seed=1)
random_data(a.nncc, a.model, val, a.val_dim or a.dim, seed=2)
log, weights = os.path.join(a.work, "log.csv"), os.path.join(a.work, "w.safetensors")
out = nncc_checked(a.nncc, ["train", a.model, "--data", train_data, "--validation", val,
                            "--epochs", "2", "--batch", a.batch, "--precision", a.precision,
                            "--log", log, "-o", weights])
epochs = re.findall(r"^epoch (\d+)/2 .* val_loss (\S+)", out, re.M)
if [e for e, _ in epochs] != ["1", "2"]:
    sys.exit("FAIL: the epoch lines have no val_loss:\n" + out)
rows = list(csv.DictReader(open(log)))
last = {}
for r in rows:
    if r["val_loss"]:
        last[r["epoch"]] = (int(r["step"]), float(r["val_loss"]))
ends = {e: max(int(r["step"]) for r in rows if r["epoch"] == e) for e in ("1", "2")}
if sorted(last) != ["1", "2"] or any(last[e][0] != ends[e] for e in last):
    sys.exit("FAIL: val_loss should be on each epoch's last row only: %s" % last)
outputs = os.path.join(a.work, "outputs.safetensors")
nncc_checked(a.nncc, ["run", a.model, "--inputs", val, "--weights", weights, "--precision",
                      a.precision, "--quiet", "-o", outputs])
whole, logged = float(load_safetensors(outputs)["loss"]), last["2"][1]
rel = abs(whole - logged) / max(1e-30, abs(whole))
print("%s %s: val_loss %.9g after 2 epochs, nncc run on the whole set %.9g, relative %.1e "
      "(tol %.0e)" % (os.path.basename(a.model), a.precision, logged, whole, rel, a.tol))
sys.exit(0 if rel <= a.tol else 1)
