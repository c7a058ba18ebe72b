#!/usr/bin/env python3
"""`nncc train --save-state` / `--resume`: a run stopped after K steps and
resumed from its state ends with the same weights, bit for bit, and logs the
same losses for every later step as the run that was never stopped (same
model, data, batch, seed and epochs: the optimizer state, the step counter
behind the schedule and the dropout masks, and the shuffling all continue).

    check_resume.py NNCC MODEL.nn WORKDIR K [--dim D=N ...] [--precision P] [--batch B] [--epochs E] [--every N]
"""
import argparse
import os
import sys

import numpy as np
from nncc_testing.train_runs import random_data, train

ap = argparse.ArgumentParser()
ap.add_argument("nncc")
ap.add_argument("model")
ap.add_argument("work")
ap.add_argument("stop", type=int)
ap.add_argument("--dim", action="append", default=[])
ap.add_argument("--precision", default="f32")
ap.add_argument("--batch", default="2")
ap.add_argument("--epochs", default="3")
ap.add_argument("--every", type=int, default=0,
                help="also check --save-every EVERY (STOP must be a multiple of it)")
a = ap.parse_args()
os.makedirs(a.work, exist_ok=True)
data = os.path.join(a.work, "data.safetensors")
random_data(a.nncc, a.model, data, a.dim)
common = ["--batch", a.batch, "--epochs", a.epochs, "--seed", "7", "--precision", a.precision]


def run(tag, extra):
    rows, weights = train(a.nncc, a.model, data, a.work, tag, common + extra)
    return {int(r["step"]): r for r in rows}, weights


state = os.path.join(a.work, "state.safetensors")
straight, w_straight = run("straight", [])
first, _ = run("first", ["--max-steps", str(a.stop), "--save-state", state])
resumed, w_resumed = run("resumed", ["--resume", state])
if sorted(first) != list(range(1, a.stop + 1)):
    sys.exit("FAIL: the first run logged steps %s" % sorted(first))
if sorted(resumed) != [s for s in sorted(straight) if s > a.stop]:
    sys.exit("FAIL: the resumed run logged steps %s" % sorted(resumed))
for s, row in resumed.items():
    for k in ("epoch", "lr", "loss", "grad_norm"):
        if row[k] != straight[s][k]:
            sys.exit("FAIL: step %d: %s %s resumed, %s straight" % (s, k, row[k], straight[s][k]))
# One log across the stop: the resumed run keeps the rows up to the saved
# step and drops later ones (here a row the stopped run would have written
# after its last state), so the log reads as the uninterrupted run's.
state2 = os.path.join(a.work, "state2.safetensors")
joint = os.path.join(a.work, "joint.csv")
run_logged = lambda extra: train(a.nncc, a.model, data, a.work, "joint", common + extra,
                                 log=joint)
run_logged(["--max-steps", str(a.stop), "--save-state", state2])
with open(joint, "a") as f:
    f.write("9,%d,0,1,1\n" % (a.stop + 1))
run_logged(["--resume", state2])
if open(joint).read() != open(os.path.join(a.work, "straight.csv")).read():
    sys.exit("FAIL: the resumed log is not the uninterrupted run's")
same = sum(np.array_equal(np.asarray(w_straight[k]), np.asarray(w_resumed[k]))
           for k in w_straight)
print("%s %s: stopped after %d of %d steps, resumed: %d logged steps equal, one log equal, "
      "%d/%d weights bit-identical" % (os.path.basename(a.model), a.precision, a.stop, len(straight),
                         len(resumed), same, len(w_straight)))
if same != len(w_straight) or sorted(w_straight) != sorted(w_resumed):
    sys.exit("FAIL: the weights differ")

if a.every:
    # --save-every: the uninterrupted run leaves one state per step that is a
    # multiple of `every` ('{step}' in the path) and at each epoch's end;
    # resuming from the state of step `stop` (mid-epoch) with a copy of that
    # run's log ends with the same weights and the same log.
    pattern = os.path.join(a.work, "every-{step}.safetensors")
    log_every = os.path.join(a.work, "every.csv")
    rows_every, _ = train(a.nncc, a.model, data, a.work, "every",
                          common + ["--save-state", pattern, "--save-every", str(a.every)],
                          log=log_every)
    written = sorted(int(f[len("every-"):-len(".safetensors")]) for f in os.listdir(a.work)
                     if f.startswith("every-") and f.endswith(".safetensors"))
    steps_per_epoch = len(rows_every) // int(a.epochs)
    want = sorted({s for s in range(1, len(rows_every) + 1)
                   if s % a.every == 0 or s % steps_per_epoch == 0})
    if written != want:
        sys.exit("FAIL: --save-every %d wrote the states of steps %s, expected %s" % (
            a.every, written, want))
    joint = os.path.join(a.work, "joint_every.csv")
    open(joint, "w").write(open(log_every).read())
    _, w_again = train(a.nncc, a.model, data, a.work, "again",
                       common + ["--resume", pattern.replace("{step}", str(a.stop))],
                       log=joint)
    same = sum(np.array_equal(np.asarray(w_straight[k]), np.asarray(w_again[k]))
               for k in w_straight)
    if open(joint).read() != open(os.path.join(a.work, "straight.csv")).read():
        sys.exit("FAIL: the log resumed from a --save-every state is not the uninterrupted run's")
    print("--save-every %d: states of steps %s; resumed from step %d: one log equal, "
          "%d/%d weights bit-identical" % (a.every, " ".join(map(str, written)), a.stop, same,
                                          len(w_straight)))
    if same != len(w_straight):
        sys.exit("FAIL: the weights differ")
print("OK")
