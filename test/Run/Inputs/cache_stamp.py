import os
import sys

import nncc_testing.library as lib

inc = sys.argv[1]
lib.RUNTIME_INCLUDE = inc
h = os.path.join(inc, "nncc", "K.cuh")
with open(h, "w") as f:
    f.write("// v1\n")
os.utime(h, ns=(1_000_000_000, 1_000_000_000))
a = lib._nncc_stamp()
print("same stamp twice:", "ok" if lib._nncc_stamp() == a else "FAIL")
os.utime(h, ns=(2_000_000_000, 2_000_000_000))
b = lib._nncc_stamp()
print("touched header:", "ok" if b != a else "FAIL")
with open(os.path.join(inc, "nncc", "L.cuh"), "w") as f:
    f.write("\n")
os.utime(os.path.join(inc, "nncc", "L.cuh"), ns=(1_500_000_000, 1_500_000_000))
print("added header:", "ok" if lib._nncc_stamp() != b else "FAIL")
