"""Helpers of the `nncc train` tests (test/Train): random data files and
training runs that return their CSV log and final weights."""
import csv
import os
import subprocess
import sys

from .safetensors import load_safetensors


def nncc_checked(nncc, args):
    """stdout of `nncc ARGS`; exits with FAIL and its stderr when it fails."""
    p = subprocess.run([nncc] + list(args), capture_output=True, text=True)
    if p.returncode:
        sys.exit("FAIL: nncc %s: %s" % (" ".join(args), p.stderr))
    return p.stdout


def random_data(nncc, model, path, dims, seed=0):
    """`nncc run --random-inputs` written to `path` (every input, drawn from
    `seed`), for the binding `dims` (["B=4", ...])."""
    nncc_checked(nncc, ["run", model, "--random-inputs", "--inputs-only", "--seed", str(seed),
                        "--save-inputs", path] + sum((["--dim", d] for d in dims), []))


def train(nncc, model, data, work, tag, args, log=None):
    """`nncc train MODEL --data DATA ARGS` logging to LOG (default
    WORK/TAG.csv) and saving WORK/TAG.safetensors: (the log's rows as dicts,
    the weights by name)."""
    log = log or os.path.join(work, tag + ".csv")
    out = os.path.join(work, tag + ".safetensors")
    nncc_checked(nncc, ["train", model, "--data", data, "--quiet", "--log", log, "-o", out]
                 + list(args))
    return list(csv.DictReader(open(log))), load_safetensors(out)
