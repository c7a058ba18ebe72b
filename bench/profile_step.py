#!/usr/bin/env python3
"""Per-kernel-class time of one nncc training step (NNCC_PROFILE).

    /usr/bin/python3 bench/profile_step.py MODEL [-B 16] [-T 128] [--reps 2]
        [--threads 2] [--by launch|class] [--top 20]
        [--memory-budget X]

Compiles models/MODEL.nn (or a path) with --grad (and --memory-budget X for
the -B/-T binding when given), runs one untimed warm-up
train_step and --reps timed ones in a child process with NNCC_PROFILE set
(docs/runtime.md: the generated code's opt-in per-launch timer,
NNCC_PROFILE_SKIP=1 leaves the warm-up out), and prints seconds per step by
kernel class (the nnk op of each launch; the optimizer update is its own
class) or by launch, with each share of the summed launch time.
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r"""
import sys, numpy as np
sys.path.insert(0, %(utils)r)
import nncc_train as ntr
lib = ntr.TrainLib(%(so)r)
ctx = lib.context(seed=1)
r = np.random.default_rng(0)
inputs = {}
for name, dt, shape in lib.inputs:
    shape = [%(dims)r.get(d, d) if isinstance(d, str) else d for d in shape]
    if np.issubdtype(dt, np.integer):
        inputs[name] = r.integers(0, 2, shape).astype(dt)
    else:
        inputs[name] = (r.random(shape) < 0.15).astype(np.float32)
ctx.set_inputs(inputs)
import time
ctx.train_step()
t0 = time.perf_counter()
for _ in range(%(reps)d):
    ctx.train_step()
print("wall %%.6f" %% ((time.perf_counter() - t0) / %(reps)d))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("-B", type=int, default=16)
    ap.add_argument("-T", type=int, default=128)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--by", choices=["class", "launch"], default="class")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--memory-budget", help="compile under this budget for the -B/-T binding")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "utils"))
    import nncc_testing as nt
    src = a.model if os.path.exists(a.model) else os.path.join(ROOT, "models", a.model + ".nn")
    flags = ["--grad"]
    if a.memory_budget:
        flags += ["--memory-budget", a.memory_budget, "--dim", "B=%d" % a.B, "--dim", "T=%d" % a.T]
    so = nt.compile_model(src, flags)
    with tempfile.TemporaryDirectory() as d:
        prof = os.path.join(d, "profile.tsv")
        env = dict(os.environ, NNCC_PROFILE=prof, NNCC_PROFILE_SKIP="1",
                   OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads))
        code = CHILD % dict(utils=os.path.join(ROOT, "utils"), so=so, reps=a.reps,
                            dims={"B": a.B, "T": a.T})
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                             capture_output=True, text=True).stdout
        wall = float(out.split("wall ")[-1])
        rows = [l.rstrip("\n").split("\t") for l in open(prof) if not l.startswith("#")]
    groups = collections.defaultdict(lambda: [0.0, 0])
    for sec, calls, launch in rows:
        if a.by == "class":
            m = re.match(r"launch \d+: (\S+)", launch)
            key = m.group(1) if m else launch.split(":")[0]
        else:
            key = launch
        groups[key][0] += float(sec) / a.reps
        groups[key][1] += int(calls) // a.reps
    total = sum(v[0] for v in groups.values())
    print("%s B%d T%d, %d thread(s)%s: %.3f s per step (wall), %.3f s in launches" %
          (os.path.basename(src), a.B, a.T, a.threads,
           ", budget " + a.memory_budget if a.memory_budget else "", wall, total))
    print("| %s | s/step | share | calls/step |\n|---|---|---|---|" % a.by)
    for k, (sec, calls) in sorted(groups.items(), key=lambda kv: -kv[1][0])[:a.top]:
        print("| %s | %.4f | %.1f%% | %d |" % (k, sec, 100 * sec / total, calls))


if __name__ == "__main__":
    main()
