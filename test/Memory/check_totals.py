#!/usr/bin/env python3
"""`nncc inspect --memory` totals (tools/nncc/Memory.cpp) against the model's
signature: parameters = sum of the parameter shapes, gradients = parameters
in training, Adam's state = 2 x parameters (SGD with momentum: 1 x), inputs and
outputs from their shapes at the binding, activations = arena_bytes, total =
their sum; and the text summary shows the same figures.

    check_totals.py MODEL.nn OPTIMIZER_COPIES NAME=SIZE...
"""
import json
import subprocess
import sys

SIZES = {"F32": 4, "F64": 8, "I32": 4, "I64": 8, "BOOL": 1, "BF16": 2}


def nncc(*args):
    return subprocess.run(["nncc", *args], check=True, capture_output=True, text=True).stdout


def nbytes(t, dims):
    n = 1
    for d in t["shape"]:
        n *= int(d) if str(d).isdigit() else dims[d]
    return n * SIZES[t["dtype"]]


def main():
    model, copies, binding = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    dims = {k: int(v) for k, v in (b.split("=") for b in binding)}
    dim_args = [a for b in binding for a in ("--dim", b)]
    sig = json.loads(nncc("inspect", model))
    params = sum(nbytes(p, dims) for p in sig["parameters"])
    inputs = sum(nbytes(t, dims) for t in sig["inputs"])
    outputs = sum(nbytes(t, dims) for t in sig["outputs"])
    for training in (False, True):
        mode = ["--grad"] if training else []
        plan = json.loads(nncc("inspect", model, "--memory", "--format", "json", *mode, *dim_args))
        t = plan["totals"]
        want = {"activation_arena": plan["arena_bytes"], "parameters": params,
                "gradients": params if training else 0,
                "optimizer_state": copies * params if training else 0,
                "inputs": inputs, "outputs": outputs}
        want["total"] = sum(want.values())
        if t != want:
            sys.exit(f"FAIL ({'training' if training else 'inference'}): {t} != {want}")
        text = nncc("inspect", model, "--memory", "--format", "text", *mode, *dim_args)
        for row in ["activations", "parameters", "inputs", "outputs", "total"] + (
                ["gradients", "optimizer state"] if training else []):
            if row not in text:
                sys.exit(f"FAIL: the summary has no '{row}' row:\n{text}")
        print(f"{'training' if training else 'inference'}: totals match the signature, "
              f"total {t['total']} bytes")
        print(text.splitlines()[0])


if __name__ == "__main__":
    main()
