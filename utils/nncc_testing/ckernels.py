"""ctypes bindings of libnncc_kernels for the kernel tests (test/Kernels):
the enums, AttnParams and RnnParams of Kernels.h, load(), calls of the attention
entry points (nncc_mha_* / nncc_attention_*), and the kernel tests' report.

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
ATTN = {"dense": 0, "dilated": 1, "lsh": 2, "local": 3}


class AttnParams(C.Structure):
    _fields_ = [("kind", C.c_int32), ("causal", C.c_int32),
                ("scale", C.c_double), ("window", C.c_int32),
                ("dilation", C.c_int32),
                ("global_pos", C.POINTER(C.c_int32)),
                ("n_global", C.c_int32), ("rotations", C.c_void_p),
                ("n_hashes", C.c_int32), ("n_buckets", C.c_int32),
                ("chunk", C.c_int32), ("same_bucket_only", C.c_int32),
                ("lsh_convention", C.c_int32),
                ("dropout", C.c_double), ("dropout_seed", C.c_uint64),
                ("dropout_offset", C.c_uint64),
                ("global_mask", C.POINTER(C.c_uint8)),
                ("dilated_convention", C.c_int32),
                ("local_chunks_before", C.c_int32),
                ("local_chunks_after", C.c_int32),
                ("pad_to_multiple", C.c_int32), ("pad_above", C.c_int32)]



class RnnParams(C.Structure):
    """nncc_rnn_params (Kernels.h): the first argument of nncc_rnn_forward,
    nncc_rnn_forward_train and nncc_rnn_backward."""
    _fields_ = [("cell", C.c_int), ("has_bias", C.c_int),
                ("batch", C.c_int64), ("steps", C.c_int64),
                ("input_size", C.c_int64), ("hidden_size", C.c_int64),
                ("num_layers", C.c_int64), ("num_directions", C.c_int64),
                ("lengths", C.POINTER(C.c_int32)),
                ("zoneout", C.c_double), ("seed", C.c_uint64), ("offset", C.c_uint64),
                ("checkpoint_every", C.c_int64), ("checkpoint_snapshots", C.c_int64)]


def rnn_params(cell, B, T, I, H, L, D, has_bias, lengths=None, zoneout=0.0, seed=0,
               offset=0, every=0, snapshots=0):
    """A pointer to an nncc_rnn_params; `cell` a CELL name or code, `lengths`
    a contiguous int32 array (kept alive by the returned struct) or None."""
    p = RnnParams(CELL.get(cell, cell), int(has_bias), B, T, I, H, L, D,
                  ptr(lengths), zoneout, seed, offset, every, snapshots)
    p._keep = lengths
    return C.byref(p)

_lib = None


def load(libdir):
    """libnncc_kernels.so of `libdir`, with the workspace-size functions
    typed; the attention helpers below call this library."""
    global _lib
    lib = C.CDLL(os.path.join(libdir, "libnncc_kernels.so"))
    for name in ("nncc_rnn_workspace_size", "nncc_rnn_saved_size",
                 "nncc_attention_workspace_size", "nncc_mha_workspace_size",
                 "nncc_mha_backward_workspace_size", "nncc_attention_backward_workspace_size",
                 "nncc_linear_sample_workspace_size", "nncc_linear_ce_workspace_size"):
        getattr(lib, name).restype = C.c_int64
    lib.nncc_rnn_workspace_size.argtypes = [C.c_int] + [C.c_int64] * 7
    lib.nncc_rnn_saved_size.argtypes = [C.c_int] + [C.c_int64] * 5
    for name in ("nncc_attention_workspace_size", "nncc_mha_workspace_size",
                 "nncc_mha_backward_workspace_size", "nncc_attention_backward_workspace_size"):
        getattr(lib, name).argtypes = [C.POINTER(AttnParams)] + [C.c_int64] * 5
    _lib = lib
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


# --- attention entry points -------------------------------------------------
def params(kind, causal=0, window=0, dilation=1, globals_=None, rot=None,
           n_hashes=0, n_buckets=0, chunk=0, same_bucket=0, dropout=0.0,
           dropout_seed=0, dropout_offset=0, scale=0.0, lsh_convention=0,
           chunks_before=1, chunks_after=0, pad_to_multiple=0, pad_above=0):
    p = AttnParams()
    p.kind, p.causal, p.scale = ATTN[kind], causal, scale
    p.window, p.dilation = window, dilation
    if globals_ is not None:
        p._g = np.ascontiguousarray(globals_, dtype=np.int32)
        p.global_pos = ptr(p._g)
        p.n_global = len(globals_)
    if rot is not None:
        p._rot = rot
        p.rotations = rot.ctypes.data_as(C.c_void_p)
    p.n_hashes, p.n_buckets, p.chunk = n_hashes, n_buckets, chunk
    p.same_bucket_only = same_bucket
    p.lsh_convention = lsh_convention  # 0 NNCC_LSH_NNCC, 1 NNCC_LSH_HF
    p.dropout, p.dropout_seed, p.dropout_offset = dropout, dropout_seed, dropout_offset
    p.local_chunks_before, p.local_chunks_after = chunks_before, chunks_after
    p.pad_to_multiple, p.pad_above = pad_to_multiple, pad_above
    return p


def _c(a, dtype):
    return None if a is None else np.ascontiguousarray(a, dtype)


def mha_forward(p, dtype, x, in_w, in_b, out_w, out_b, H, kpm):
    B, T, E = x.shape
    ws = np.zeros(_lib.nncc_mha_workspace_size(C.byref(p), B, T, E, H,
                                               np.dtype(dtype).itemsize), np.uint8)
    y = np.zeros((B, T, E), dtype)
    kp = None if kpm is None else np.ascontiguousarray(kpm, np.uint8)
    rc = getattr(_lib, "nncc_mha_forward_" + SUFFIX[dtype])(
        C.byref(p), *i64(B, T, E, H), ptr(_c(x, dtype)), ptr(_c(in_w, dtype)),
        ptr(_c(in_b, dtype)), ptr(_c(out_w, dtype)), ptr(_c(out_b, dtype)), ptr(kp),
        ws.ctypes.data_as(C.c_void_p), ptr(y))
    assert rc == 0, rc
    return y


def mha_backward(p, dtype, x, in_w, in_b, out_w, out_b, H, kpm, dy):
    B, T, E = x.shape
    ws = np.zeros(_lib.nncc_mha_backward_workspace_size(C.byref(p), B, T, E, H,
                                                        np.dtype(dtype).itemsize), np.uint8)
    outs = [np.full(s, 9.0, dtype) for s in
            (x.shape, in_w.shape, in_b.shape, out_w.shape, out_b.shape)]
    kp = None if kpm is None else np.ascontiguousarray(kpm, np.uint8)
    rc = getattr(_lib, "nncc_mha_backward_" + SUFFIX[dtype])(
        C.byref(p), *i64(B, T, E, H), ptr(_c(x, dtype)), ptr(_c(in_w, dtype)),
        ptr(_c(in_b, dtype)), ptr(_c(out_w, dtype)), ptr(_c(out_b, dtype)), ptr(kp),
        ptr(_c(dy, dtype)), *[ptr(o) for o in outs], ws.ctypes.data_as(C.c_void_p))
    assert rc == 0, rc
    return outs


def _core_ptrs(p, dtype, qkv, E):
    """q, k, v pointers into a packed [B, T, P*E] projection (LSH: k NULL)."""
    PT = C.POINTER(C.c_float if dtype == np.float32 else C.c_double)
    at = lambda j: C.cast(qkv.ctypes.data + j * E * np.dtype(dtype).itemsize, PT)
    if p.kind == ATTN["lsh"]:
        return at(0), None, at(1)
    return at(0), at(1), at(2)


def core_forward(p, dtype, qkv, E, H, kpm):
    """nncc_attention_S on a packed projection: (out [B,T,E], lse [B,H,T])."""
    B, T, PE = qkv.shape
    ws = np.zeros(_lib.nncc_attention_workspace_size(C.byref(p), B, T, H, E // H,
                                                     np.dtype(dtype).itemsize), np.uint8)
    out = np.zeros((B, T, E), dtype)
    lse = np.zeros((B, H, T), dtype)
    kp = None if kpm is None else np.ascontiguousarray(kpm, np.uint8)
    rc = getattr(_lib, "nncc_attention_" + SUFFIX[dtype])(
        C.byref(p), *i64(B, T, H, E // H), *_core_ptrs(p, dtype, qkv, E), C.c_int64(PE),
        ptr(out), C.c_int64(E), ptr(kp), ws.ctypes.data_as(C.c_void_p), None, ptr(lse))
    assert rc == 0, rc
    return out, lse


def core_backward(p, dtype, qkv, dout, E, H, kpm, saved=None):
    """nncc_attention_backward_S: d(packed projection); with saved = (out,
    lse) the forward's, else recomputed."""
    B, T, PE = qkv.shape
    ws = np.zeros(_lib.nncc_attention_backward_workspace_size(
        C.byref(p), B, T, H, E // H, np.dtype(dtype).itemsize), np.uint8)
    dqkv = np.full((B, T, PE), 9.0, dtype)
    dq, dk, dv = _core_ptrs(p, dtype, dqkv, E)
    kp = None if kpm is None else np.ascontiguousarray(kpm, np.uint8)
    out, lse = saved if saved is not None else (None, None)
    rc = getattr(_lib, "nncc_attention_backward_" + SUFFIX[dtype])(
        C.byref(p), *i64(B, T, H, E // H), *_core_ptrs(p, dtype, qkv, E), C.c_int64(PE),
        ptr(np.ascontiguousarray(dout, dtype)), C.c_int64(E), dq, dk, dv, C.c_int64(PE),
        ptr(kp), ws.ctypes.data_as(C.c_void_p), ptr(out), ptr(lse))
    assert rc == 0, rc
    return dqkv


# --- report -----------------------------------------------------------------
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
