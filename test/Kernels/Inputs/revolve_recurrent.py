"""The binomial (Revolve) schedule of the recurrent stack kernels:
nncc_rnn_forward_train + nncc_rnn_backward with checkpoint_snapshots = s
(the reserve keeps the layer outputs only; the backward reverses each scan
step by step, rebuilding the LSTM's cell states from at most s snapshots)
against the same without a schedule (all steps' gates kept):
forward outputs bitwise, gradients fp64 to 1e-12 and fp32 to 1e-5, for
every cell, 2 layers, bidirectional, unsorted lengths (with a zero-length
row), LSTM zoneout, s in {1, 2, 3, T + 5}. The forward steps the backward
recomputes equal the binomial optimum (an exhaustive dynamic programme) per
layer and direction, and the workspace is below sqrt(T) checkpointing's."""
import ctypes as C
import math
import sys
from functools import lru_cache

import numpy as np

from nncc_testing.ckernels import CELL, CTYPE, SUFFIX, expect, finish, load, ptr, rnn_params

lib = load(sys.argv[1])
for name, n in (("nncc_rnn_reserve_size", 6), ("nncc_rnn_backward_reserved_workspace_size", 6),
                ("nncc_rnn_forward_train_workspace_size", 4), ("nncc_rnn_reserve_ckpt_size", 7),
                ("nncc_rnn_backward_ckpt_workspace_size", 8),
                ("nncc_rnn_backward_revolve_workspace_size", 8)):
    getattr(lib, name).restype = C.c_int64
    getattr(lib, name).argtypes = [C.c_int] + [C.c_int64] * n
lib.nncc_rnn_revolve_forward_steps.restype = C.c_int64
lib.nncc_rnn_revolve_forward_steps.argtypes = [C.c_int] + [C.c_int64] * 4

B, T, I, H = 4, 23, 5, 6
LENS = [23, 0, 17, 9]  # unsorted, with T and an empty row
TOL = {np.float64: 1e-12, np.float32: 1e-5}


@lru_cache(None)
def optimum(l, c):
    """Minimal forward steps reversing l steps with c checkpoints (the
    initial state one of them)."""
    if l <= 1:
        return 0
    if c == 1:
        return l * (l - 1) // 2
    return min(m + optimum(l - m, c - 1) + optimum(m, c) for m in range(1, l))


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return 0.0 if a.size == 0 else float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def parr(arrs, dtype):
    PT = C.POINTER(CTYPE[dtype])
    return (PT * len(arrs))(*[ptr(w) for w in arrs])


def run(cell, dtype, L, D, lengths, p, snapshots):
    """Forward-train and backward of the stack: snapshots = 0 keeps all
    gates (no schedule), else the binomial schedule."""
    rng = np.random.RandomState(7)
    G = {"lstm": 4, "gru": 3, "gru_cho": 3}.get(cell, 1)
    e = np.dtype(dtype).itemsize
    cc = C.c_int(CELL[cell])
    flat = []
    for l in range(L):
        for d in range(D):
            isz = I if l == 0 else D * H
            flat += [rng.randn(G * H, isz) * 0.4, rng.randn(G * H, H) * 0.4,
                     rng.randn(G * H) * 0.1, rng.randn(G * H) * 0.1]
    flat = [np.ascontiguousarray(w, dtype) for w in flat]
    W = parr(flat, dtype)
    arr = lambda *s: np.ascontiguousarray(rng.randn(*s), dtype)
    x, h0 = arr(B, T, I), arr(L * D, B, H)
    c0 = arr(L * D, B, H) if cell == "lstm" else None
    dy, dhn = arr(B, T, D * H), arr(L * D, B, H)
    dcn = arr(L * D, B, H) if cell == "lstm" else None
    lens = None if lengths is None else np.ascontiguousarray(lengths, np.int32)
    params = rnn_params(cell, B, T, I, H, L, D, 1, lens, zoneout=p, seed=11, offset=5 << 40,
                        snapshots=snapshots)
    args = (params, ptr(x), W, ptr(h0), ptr(c0))
    y, hn, cn = (np.zeros(s, dtype) for s in ((B, T, D * H), (L * D, B, H), (L * D, B, H)))
    steps = C.c_int64(-1)
    if snapshots:
        rbytes = L * B * T * D * H * e  # the layer outputs
        wbytes = lib.nncc_rnn_backward_revolve_workspace_size(cc, B, T, I, H, L, D, snapshots, e)
    else:
        rbytes = lib.nncc_rnn_reserve_size(cc, B, T, H, L, D, e)
        wbytes = lib.nncc_rnn_backward_reserved_workspace_size(cc, B, T, H, L, D, e)
    # NaN-filled buffers: any read of a byte the kernels did not write shows.
    reserve = np.full(rbytes // e, np.nan, dtype)
    fws = np.full(lib.nncc_rnn_forward_train_workspace_size(cc, B, T, H, e), 0xFF, np.uint8)
    rc = getattr(lib, "nncc_rnn_forward_train_" + SUFFIX[dtype])(
        *args, ptr(y), ptr(hn), ptr(cn), ptr(reserve), fws.ctypes.data_as(C.c_void_p))
    assert rc == 0, rc
    dx, dh0, dc0 = (np.full(s, 9.0, dtype) for s in ((B, T, I), (L * D, B, H), (L * D, B, H)))
    dws = [np.full(w.shape, 9.0, dtype) for w in flat]
    bws = np.full(wbytes, 0xFF, np.uint8)
    rc = getattr(lib, "nncc_rnn_backward_" + SUFFIX[dtype])(
        *args, ptr(reserve), ptr(dy), ptr(dhn), ptr(dcn), ptr(dx), ptr(dh0), ptr(dc0),
        parr(dws, dtype), bws.ctypes.data_as(C.c_void_p), C.byref(steps))
    assert rc == 0, rc
    grads = [dx, dh0] + ([dc0] if cell == "lstm" else []) + dws
    return [y, hn] + ([cn] if cell == "lstm" else []), grads, steps.value


def case(cell, dtype, L, D, lengths, p):
    outs, ref, _ = run(cell, dtype, L, D, lengths, p, 0)
    tag = "revolve %s L%d D%d len%s zoneout%g %s" % (cell, L, D, "var" if lengths else "full",
                                                     p, SUFFIX[dtype])
    chain = max(lengths) if lengths else T
    for s in (1, 2, 3, T + 5):
        o, g, steps = run(cell, dtype, L, D, lengths, p, s)
        expect("%s s=%d: forward outputs == full reserve (bitwise)" % (tag, s),
               all(np.array_equal(a, b) for a, b in zip(o, outs)))
        e = max(rel_err(a, b) for a, b in zip(g, ref))
        ok = e <= TOL[dtype] and all(np.all(np.isfinite(a)) for a in g)
        expect("%s s=%d: gradients == full reserve (err=%.2e)" % (tag, s, e), ok)
        want = L * D * optimum(chain, s + 1) if cell == "lstm" else 0
        expect("%s s=%d: %d recomputed forward steps == binomial optimum %d" %
               (tag, s, steps, want), steps == want)


for dtype in (np.float64, np.float32):
    for cell in ("lstm", "gru", "gru_cho", "rnn_tanh", "rnn_relu"):
        case(cell, dtype, 2, 2, LENS, 0.0)
        case(cell, dtype, 1, 1, None, 0.0)
    case("lstm", dtype, 2, 2, LENS, 0.3)

# Counts and sizes at T = 4096 (one LSTM layer, B = 4, H = 256, f32).
cl = C.c_int(CELL["lstm"])
for s in (2, 12, 64):
    got = lib.nncc_rnn_revolve_forward_steps(cl, 4096, 1, 1, s)
    c = s + 1
    r = 0
    while math.comb(c + r, c) < 4096:
        r += 1
    want = r * 4096 - math.comb(c + r, c + 1)
    expect("lstm T=4096 s=%d: %d recomputed steps == r*T - C(s+1+r, s+2) = %d (r=%d)" %
           (s, got, want, r), got == want)
expect("gru: no recomputed steps", lib.nncc_rnn_revolve_forward_steps(
    C.c_int(CELL["gru"]), 4096, 2, 2, 4) == 0)
Bs, Ts, Hs = 4, 4096, 256
ck = lib.nncc_rnn_reserve_ckpt_size(cl, Bs, Ts, Hs, 1, 1, 64, 4)
wck = lib.nncc_rnn_backward_ckpt_workspace_size(cl, Bs, Ts, 128, Hs, 1, 1, 64, 4)
wrv = lib.nncc_rnn_backward_revolve_workspace_size(cl, Bs, Ts, 128, Hs, 1, 1, 12, 4)
outs = Bs * Ts * Hs * 4
expect("lstm T=4096: revolve s=12 reserve + workspace %d < sqrt(T) %d" %
       (outs + wrv, ck + wck), outs + wrv < ck + wck)
expect("invalid snapshots", lib.nncc_rnn_backward_revolve_workspace_size(
    cl, Bs, Ts, 128, Hs, 1, 1, 0, 4) == -1)
finish()
