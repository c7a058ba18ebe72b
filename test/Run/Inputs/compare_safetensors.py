"""Compares two safetensors files tensor by tensor: same names and shapes,
max |a - b| / max(1, max |b|) <= tol. Prints one line per tensor."""
import sys

import numpy as np
from nncc_testing.safetensors import load_safetensors as load_file

a, b, tol = load_file(sys.argv[1]), load_file(sys.argv[2]), float(sys.argv[3])
assert sorted(a) == sorted(b), (sorted(a), sorted(b))
bad = 0
for name in sorted(a):
    x, y = a[name].astype(np.float64), b[name].astype(np.float64)
    assert x.shape == y.shape, (name, x.shape, y.shape)
    e = float(np.max(np.abs(x - y)) / max(1.0, float(np.max(np.abs(y))))) if x.size else 0.0
    ok = e <= tol and np.all(np.isfinite(x))
    bad += not ok
    print("%s %s err=%.2e" % ("PASS" if ok else "FAIL", name, e))
print("FAILED" if bad else "ALL MATCH (%d tensors)" % len(a))
sys.exit(1 if bad else 0)
