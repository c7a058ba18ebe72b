"""ctypes bindings of libnncc_kernels for the parity tests.

Error metric used everywhere: err(a, b) = max|a - b| / max(1, max|b|), with b
the PyTorch reference. Tolerances: fp32 1e-4, fp64 1e-10.
"""
import ctypes as C
import os
import sys

import numpy as np

TOL = {np.float32: 1e-4, np.float64: 1e-10}
SUFFIX = {np.float32: "f32", np.float64: "f64"}
CTYPE = {np.float32: C.c_float, np.float64: C.c_double}

CELL = {"rnn_tanh": 0, "rnn_relu": 1, "lstm": 2, "gru": 3, "gru_cho": 4}
ACT = {"none": 0, "relu": 1, "leaky_relu": 2, "gelu": 3, "gelu_tanh": 4,
       "tanh": 5, "sigmoid": 6}
ATTN = {"dense": 0, "dilated": 1, "lsh": 2}


class AttnParams(C.Structure):
    _fields_ = [("kind", C.c_int32), ("causal", C.c_int32),
                ("scale", C.c_double), ("window", C.c_int32),
                ("dilation", C.c_int32),
                ("global_pos", C.POINTER(C.c_int32)),
                ("n_global", C.c_int32), ("rotations", C.c_void_p),
                ("n_hashes", C.c_int32), ("n_buckets", C.c_int32),
                ("chunk", C.c_int32), ("same_bucket_only", C.c_int32),
                ("dropout", C.c_double), ("dropout_seed", C.c_uint64),
                ("dropout_offset", C.c_uint64)]


def load(libdir):
    lib = C.CDLL(os.path.join(libdir, "libnncc_kernels.so"))
    for name in ("nncc_rnn_workspace_size", "nncc_rnn_saved_size",
                 "nncc_attention_workspace_size", "nncc_mha_workspace_size"):
        getattr(lib, name).restype = C.c_int64
    lib.nncc_rnn_workspace_size.argtypes = [C.c_int] + [C.c_int64] * 7
    lib.nncc_rnn_saved_size.argtypes = [C.c_int] + [C.c_int64] * 5
    lib.nncc_attention_workspace_size.argtypes = [C.POINTER(AttnParams)] + [C.c_int64] * 5
    lib.nncc_mha_workspace_size.argtypes = [C.POINTER(AttnParams)] + [C.c_int64] * 5
    return lib


def ptr(a, dtype=None):
    """Pointer to a contiguous numpy array (None -> NULL)."""
    if a is None:
        return None
    assert a.flags["C_CONTIGUOUS"]
    if dtype is None:
        dtype = a.dtype.type
    ct = {np.float32: C.c_float, np.float64: C.c_double, np.int32: C.c_int32,
          np.int64: C.c_int64, np.uint8: C.c_uint8, np.uint32: C.c_uint32}[dtype]
    return a.ctypes.data_as(C.POINTER(ct))


def i64(*xs):
    return [C.c_int64(int(x)) for x in xs]


def err(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise AssertionError("shape %s vs %s" % (a.shape, b.shape))
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


FAILED = []


def check(name, a, b, dtype):
    e = err(a, b)
    tol = TOL[dtype]
    ok = e <= tol and np.all(np.isfinite(a))
    print("%s %s %s err=%.3e tol=%.0e" % ("PASS" if ok else "FAIL", name,
                                          SUFFIX[dtype], e, tol))
    if not ok:
        FAILED.append(name)
    return ok


def expect(name, cond):
    print("%s %s" % ("PASS" if cond else "FAIL", name))
    if not cond:
        FAILED.append(name)


def finish():
    if FAILED:
        print("FAILED:", ", ".join(FAILED))
        sys.exit(1)
    print("ALL PASSED")
