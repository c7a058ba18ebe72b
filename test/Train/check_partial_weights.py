#!/usr/bin/env python3
"""`nncc train --weights W` (strict), `--partial-weights` and
`--weights-prefix` on tiny_mlp: the missing / unexpected names nncc reports
are exactly the sets torch's load_state_dict(strict=False) reports
(computed here as torch does: parameters not in the file, file keys not
parameters), the loaded tensors are the file's and the missing ones stay at
PyTorch's default init from --seed (bit-identical trained weights against the
equivalent strict run and the run without --weights).

    check_partial_weights.py NNCC MODEL.nn WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
from nncc_testing.safetensors import load_safetensors, save_safetensors

nncc, model, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
r = np.random.default_rng(0)
data = os.path.join(work, "data.safetensors")
save_safetensors(data, {"x": r.standard_normal((8, 6)).astype(np.float32),
                        "y": r.standard_normal((8, 3)).astype(np.float32)})
shapes = {"body.0.weight": (64, 6), "body.0.bias": (64,), "body.1.weight": (64, 64),
          "body.1.bias": (64,), "body.2.weight": (3, 64), "body.2.bias": (3,)}
full = {k: (0.1 * r.standard_normal(s)).astype(np.float32) for k, s in shapes.items()}
failures = 0


def check(cond, what):
    global failures
    print(("ok: " if cond else "FAIL: ") + what)
    failures += not cond


def train(name, weights=None, extra=()):
    out = os.path.join(work, name + ".out.safetensors")
    cmd = [nncc, "train", model, "--data", data, "--epochs", "1", "--batch", "4", "--seed", "5",
           "--quiet", "-o", out] + list(extra)
    if weights is not None:
        w = os.path.join(work, name + ".in.safetensors")
        save_safetensors(w, weights)
        cmd += ["--weights", w]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr)
        sys.exit("nncc train failed: " + " ".join(cmd))
    return load_safetensors(out), p.stderr


def same(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def reported(stderr, head):
    for line in stderr.splitlines():
        if line.startswith("nncc: note: " + head):
            rest = line.split("): ", 1)[1]
            return set() if rest == "none" else set(rest.split(", "))
    sys.exit("no '" + head + "' note in:\n" + stderr)


def torch_sets(keys):
    # torch.nn.Module.load_state_dict(strict=False)'s _IncompatibleKeys
    return set(shapes) - set(keys), set(keys) - set(shapes)


strict, _ = train("strict", full)
none, _ = train("none")

# Every parameter plus extra names: what matches is loaded (= the strict run).
extras = {"pooler.weight": np.ones((2, 2), np.float32), "classifier.bias": np.zeros(2, np.float32)}
w, err = train("extras", {**full, **extras}, ["--partial-weights"])
miss, unexp = torch_sets(list(full) + list(extras))
check(reported(err, "missing") == miss and reported(err, "unexpected") == unexp,
      "extras: missing/unexpected as torch's %s / %s" % (sorted(miss), sorted(unexp)))
check(same(w, strict), "extras: trained weights bit-identical to the strict run")

# Nothing matches: every parameter keeps its init from --seed (= no --weights).
w, err = train("nomatch", extras, ["--partial-weights"])
miss, unexp = torch_sets(extras)
check(reported(err, "missing") == miss and reported(err, "unexpected") == unexp,
      "nomatch: missing/unexpected as torch's")
check(same(w, none), "nomatch: trained weights bit-identical to the run without --weights")

# Half of them: reported sets, and a different result from both.
part = {k: v for k, v in full.items() if k.startswith("body.0.") or k == "body.2.bias"}
w, err = train("part", {**part, "body.9.weight": np.ones(3, np.float32)}, ["--partial-weights"])
miss, unexp = torch_sets(list(part) + ["body.9.weight"])
check(reported(err, "missing") == miss and reported(err, "unexpected") == unexp,
      "part: missing %s, unexpected %s as torch's" % (sorted(miss), sorted(unexp)))
check(not same(w, none) and not same(w, strict), "part: differs from both")

# A prefix (an ELECTRA run's discriminator): strict after the prefix, the
# tensors without it skipped.
electra = {"discriminator." + k: v for k, v in full.items()}
electra["generator.body.0.weight"] = np.ones((4, 6), np.float32)
w, err = train("prefix", electra, ["--weights-prefix", "discriminator."])
check(same(w, strict), "prefix: trained weights bit-identical to the strict run")
check("1 tensor(s) without the prefix skipped" in err, "prefix: the skipped tensors noted")

print("ALL PASSED" if failures == 0 else "%d FAILED" % failures)
sys.exit(1 if failures else 0)
