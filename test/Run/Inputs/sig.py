"""Reads `nncc inspect` JSON from stdin (must parse) and prints one line per
tensor: `<kind> <name> <dtype> <shape as JSON>`."""
import json
import sys

sig = json.load(sys.stdin)
print("model", sig["model"], "dims", json.dumps(sig["dims"]))
for kind in ("inputs", "outputs", "parameters"):
    for t in sig[kind]:
        print(kind[:-1], t["name"], t["dtype"], json.dumps(t["shape"]))
