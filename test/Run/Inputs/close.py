"""close.py FILE A B TOL: outputs A and B of FILE agree within TOL."""
import sys

import numpy as np

from nncc_testing.safetensors import load_safetensors

t = load_safetensors(sys.argv[1])
a, b, tol = t[sys.argv[2]], t[sys.argv[3]], float(sys.argv[4])
assert a.shape == b.shape, "%s and %s have shapes %s and %s" % (sys.argv[2], sys.argv[3],
                                                                 a.shape, b.shape)
err = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
assert err <= tol, "%s and %s differ by %g" % (sys.argv[2], sys.argv[3], err)
print("%s == %s (max abs err %.3g)" % (sys.argv[2], sys.argv[3], err))
