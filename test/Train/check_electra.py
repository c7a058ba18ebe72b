"""ELECTRA under `nncc train` on utils/electra_corpus.py's corpus.

    check_electra.py NNCC MODEL.nn WORKDIR --samples N --seq T --vocab V --words W
        [--falls K] [-- args for nncc train]

Checks the CSV log: the columns gen_loss and disc_loss follow the standard
ones, every value is finite, and loss = gen_loss + 50 disc_loss on every step
(the models' lambda). With --falls K, the mean of the last K steps must be
below the mean of the first K for both losses. Prints PASS or FAIL lines.
"""
import argparse
import csv
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

ap = argparse.ArgumentParser()
ap.add_argument("nncc")
ap.add_argument("model")
ap.add_argument("work")
ap.add_argument("--samples", type=int, required=True)
ap.add_argument("--seq", type=int, required=True)
ap.add_argument("--vocab", type=int, required=True)
ap.add_argument("--words", type=int, required=True)
ap.add_argument("--falls", type=int, default=0)
a, extra = ap.parse_known_args()
os.makedirs(a.work, exist_ok=True)
data, log = os.path.join(a.work, "corpus.safetensors"), os.path.join(a.work, "log.csv")
p = subprocess.run([sys.executable, os.path.join(ROOT, "utils", "electra_corpus.py"), "-o", data,
                    "--samples", str(a.samples), "--seq", str(a.seq), "--vocab", str(a.vocab),
                    "--words", str(a.words)], capture_output=True, text=True)
if p.returncode:
    sys.exit("corpus: " + p.stdout + p.stderr)
p = subprocess.run([a.nncc, "train", a.model, "--data", data, "--log", log, "-o",
                    os.path.join(a.work, "w.safetensors")] + [x for x in extra if x != "--"],
                   capture_output=True, text=True)
sys.stdout.write(p.stdout)
name = os.path.basename(a.model)
if p.returncode:
    print("FAIL: nncc train exited %d:\n%s" % (p.returncode, p.stderr))
    sys.exit(1)
reader = csv.DictReader(open(log))
rows = list(reader)
failed = []


def expect(ok, what):
    print("%s: %s %s" % ("PASS" if ok else "FAIL", name, what))
    if not ok:
        failed.append(what)


expect(reader.fieldnames == ["epoch", "step", "lr", "loss", "grad_norm", "gen_loss", "disc_loss"],
       "CSV columns %s" % ",".join(reader.fieldnames))
vals = {k: [float(r[k]) for r in rows] for k in ("loss", "gen_loss", "disc_loss")}
expect(rows and all(math.isfinite(v) for vs in vals.values() for v in vs),
       "%d steps, every loss finite" % len(rows))
worst = max(abs(l - (g + 50 * d)) / max(1.0, abs(l))
            for l, g, d in zip(vals["loss"], vals["gen_loss"], vals["disc_loss"]))
expect(worst < 1e-5, "loss = gen_loss + 50 disc_loss on every step (worst %.2e)" % worst)
if a.falls:
    k = a.falls
    for key in ("gen_loss", "disc_loss"):
        first, last = sum(vals[key][:k]) / k, sum(vals[key][-k:]) / k
        expect(len(rows) >= 2 * k and last < first,
               "%s falls: mean of the first %d steps %.4g, of the last %d %.4g"
               % (key, k, first, k, last))
print("FAILED" if failed else "ALL PASSED")
sys.exit(1 if failed else 0)
