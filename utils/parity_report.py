#!/usr/bin/env python3
"""Run the parity scripts and print the table of docs/parity.md: one row per
case, the number of checks and the largest error (metric of nncc_testing).

    /usr/bin/python3 utils/parity_report.py [--nncc build/bin/nncc]
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INPUTS = os.path.join(ROOT, "test", "Parity", "Inputs")
SCRIPTS = ["parity_mlp", "parity_recurrent", "parity_ode", "parity_attention", "parity_misc",
           "parity_seed_models"]

ap = argparse.ArgumentParser()
ap.add_argument("--nncc", default=os.path.join(ROOT, "build", "bin", "nncc"))
args = ap.parse_args()
res = tempfile.mktemp(suffix=".jsonl")
env = dict(os.environ, NNCC=os.path.abspath(args.nncc), NNCC_PARITY_RESULTS=res,
           PYTHONPATH=os.path.join(ROOT, "utils"), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
env.setdefault("NNCC_TEST_CACHE", os.path.join(ROOT, "build", "test", "Parity", "cache"))
failed = {}
for s in SCRIPTS:
    p = subprocess.run([sys.executable, os.path.join(INPUTS, s + ".py")], env=env, cwd=INPUTS,
                       capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("FAIL ") and " raised " in line:
            failed[(s, line.split()[1])] = line.split(" raised ", 1)[1][:110]
rows = collections.OrderedDict()
for line in open(res):
    r = json.loads(line)
    key = (r["script"], r.get("case") or r["name"].split(" ")[0])
    rows.setdefault(key, []).append(r)
print("| script | case | checks | max err | all ≤ tol |")
print("|---|---|---|---|---|")
for (script, case), rs in rows.items():
    print("| %s | %s | %d | %.1e | %s |" % (script, case, len(rs), max(r["err"] for r in rs),
                                            "yes" if all(r["ok"] for r in rs) else "**no**"))
for (s, k), v in failed.items():
    print("| %s.py | %s | — | — | **did not run**: %s |" % (s, k, v))
os.unlink(res)
