"""BPTT checkpointing of the recurrent stack kernels:
nncc_rnn_forward_train + nncc_rnn_backward with checkpoint_every (gates
recomputed per segment of `every` steps) against the same without a
schedule (all steps' gates kept), fp64 to 1e-12 and fp32
to 1e-5, for every cell, 2 layers, bidirectional, unsorted lengths (with a
zero-length row), LSTM zoneout, and every in {1, 2, 3, T, T + 5} (3 does not
divide T); plus the reserve and workspace sizes shrinking with every."""
import ctypes as C
import sys

import numpy as np

from nncc_testing.ckernels import CELL, CTYPE, SUFFIX, expect, finish, load, ptr, rnn_params

lib = load(sys.argv[1])
for name, n in (("nncc_rnn_reserve_size", 6), ("nncc_rnn_backward_reserved_workspace_size", 6),
                ("nncc_rnn_forward_train_workspace_size", 4), ("nncc_rnn_reserve_ckpt_size", 7),
                ("nncc_rnn_backward_ckpt_workspace_size", 8)):
    getattr(lib, name).restype = C.c_int64
    getattr(lib, name).argtypes = [C.c_int] + [C.c_int64] * n

B, T, I, H = 4, 8, 5, 6
LENS = [8, 0, 5, 3]  # unsorted, with T and an empty row
TOL = {np.float64: 1e-12, np.float32: 1e-5}


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return 0.0 if a.size == 0 else float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def parr(arrs, dtype):
    PT = C.POINTER(CTYPE[dtype])
    return (PT * len(arrs))(*[ptr(w) for w in arrs])


def run(cell, dtype, L, D, lengths, p, every):
    """Forward-train and backward of the stack: every = 0 keeps all gates
    (no schedule), else the checkpointed schedule."""
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
                        every=every)
    args = (params, ptr(x), W, ptr(h0), ptr(c0))
    y, hn, cn = (np.zeros(s, dtype) for s in ((B, T, D * H), (L * D, B, H), (L * D, B, H)))
    if every:
        rbytes = lib.nncc_rnn_reserve_ckpt_size(cc, B, T, H, L, D, every, e)
        wbytes = lib.nncc_rnn_backward_ckpt_workspace_size(cc, B, T, I, H, L, D, every, e)
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
        parr(dws, dtype), bws.ctypes.data_as(C.c_void_p), None)
    assert rc == 0, rc
    grads = [dx, dh0] + ([dc0] if cell == "lstm" else []) + dws
    return [y, hn] + ([cn] if cell == "lstm" else []), grads, rbytes, wbytes


def case(cell, dtype, L, D, lengths, p):
    outs, ref, rb, wb = run(cell, dtype, L, D, lengths, p, 0)
    tag = "ckpt %s L%d D%d len%s zoneout%g %s" % (cell, L, D, "var" if lengths else "full", p,
                                                  SUFFIX[dtype])
    for every in (1, 2, 3, T, T + 5):
        o, g, rbk, wbk = run(cell, dtype, L, D, lengths, p, every)
        expect("%s every=%d: forward outputs == full reserve (bitwise)" % (tag, every),
               all(np.array_equal(a, b) for a, b in zip(o, outs)))
        e = max(rel_err(a, b) for a, b in zip(g, ref))
        ok = e <= TOL[dtype] and all(np.all(np.isfinite(a)) for a in g)
        expect("%s every=%d: gradients == full reserve (err=%.2e)" % (tag, every, e), ok)
        if every > 1:
            expect("%s every=%d: reserve %d < %d bytes" % (tag, every, rbk, rb), rbk < rb)


for dtype in (np.float64, np.float32):
    for cell in ("lstm", "gru", "gru_cho", "rnn_tanh", "rnn_relu"):
        case(cell, dtype, 2, 2, LENS, 0.0)
        case(cell, dtype, 1, 1, None, 0.0)
    case("lstm", dtype, 2, 2, LENS, 0.3)

# Sizes: the reserve keeps the layer outputs plus (LSTM) ceil(T/k) - 1 cell
# states per layer and direction; the backward workspace holds k steps.
cl = C.c_int(CELL["lstm"])
Bs, Ts, Hs, Ls = 4, 1024, 256, 2
full = lib.nncc_rnn_reserve_size(cl, Bs, Ts, Hs, Ls, 1, 4)
ck = lib.nncc_rnn_reserve_ckpt_size(cl, Bs, Ts, Hs, Ls, 1, 32, 4)
expect("lstm reserve: outputs + 31 checkpoints per layer",
       ck == (Ls * Bs * Ts * Hs + Ls * 31 * Bs * Hs) * 4)
expect("lstm reserve: %d -> %d bytes at k = 32" % (full, ck), 5 * ck < full)
w32 = lib.nncc_rnn_backward_ckpt_workspace_size(cl, Bs, Ts, Hs, Hs, Ls, 1, 32, 4)
wfull = lib.nncc_rnn_backward_reserved_workspace_size(cl, Bs, Ts, Hs, Ls, 1, 4)
expect("lstm backward workspace: %d -> %d bytes at k = 32" % (wfull, w32), w32 < wfull)
expect("invalid every", lib.nncc_rnn_reserve_ckpt_size(cl, Bs, Ts, Hs, Ls, 1, 0, 4) == -1)

# Parameters the stack kernels refuse with NNCC_K_EINVAL (-1) before
# touching a buffer: both schedules at once, a negative schedule, zoneout
# on a GRU or outside [0, 1), a schedule's backward without its reserve,
# and training options given to the inference forward.
Bb, Tb, Ib, Hb = 2, 4, 3, 5
wts = [np.ones(s, np.float64) for s in ((4 * Hb, Ib), (4 * Hb, Hb), (4 * Hb,), (4 * Hb,))]
Wb = parr(wts, np.float64)
xb, yb = np.ones((Bb, Tb, Ib)), np.full((Bb, Tb, Hb), 7.0)
resb = np.zeros(lib.nncc_rnn_reserve_size(cl, Bb, Tb, Hb, 1, 1, 8) // 8)
wsb = np.zeros(1 << 16, np.uint8).ctypes.data_as(C.c_void_p)
dxb = np.full((Bb, Tb, Ib), 7.0)
dwb = parr([np.zeros_like(w) for w in wts], np.float64)


def fwd_train(**kw):
    cell = kw.pop("cell", "lstm")
    return lib.nncc_rnn_forward_train_f64(rnn_params(cell, Bb, Tb, Ib, Hb, 1, 1, 1, **kw),
                                          ptr(xb), Wb, None, None, ptr(yb), None, None,
                                          ptr(resb), wsb)


def bwd(reserve, **kw):
    return lib.nncc_rnn_backward_f64(rnn_params("lstm", Bb, Tb, Ib, Hb, 1, 1, 1, **kw),
                                     ptr(xb), Wb, None, None, reserve, ptr(yb), None, None,
                                     ptr(dxb), None, None, dwb, wsb, None)


expect("rejected: both schedules", fwd_train(every=2, snapshots=2) == -1)
expect("rejected: negative checkpoint_every", fwd_train(every=-1) == -1)
expect("rejected: zoneout on a GRU", fwd_train(cell="gru", zoneout=0.2) == -1)
expect("rejected: zoneout 1", fwd_train(zoneout=1.0) == -1)
expect("rejected: a checkpointed backward without its reserve", bwd(None, every=2) == -1)
expect("rejected: the inference forward with zoneout",
       lib.nncc_rnn_forward_f64(rnn_params("lstm", Bb, Tb, Ib, Hb, 1, 1, 1, zoneout=0.1),
                                ptr(xb), Wb, None, None, ptr(yb), None, None, wsb, None) == -1)
expect("rejected calls wrote nothing", np.all(yb == 7.0) and np.all(dxb == 7.0))
expect("accepted: the same forward without the bad options", fwd_train(every=2) == 0)
finish()
