"""Backward parity of the recurrent kernels: nncc_rnn_backward_* vs
torch.autograd through nn.LSTM / nn.GRU / nn.RNN with pack_padded_sequence
(2 layers, bidirectional, unsorted lengths), Cho GRU vs autograd through a
hand-written reference, cell backward vs autograd of the cell equations, and
a central finite-difference check in fp64."""
import ctypes as C
import sys

import numpy as np
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nncc_testing.ckernels import (CELL, CTYPE, SUFFIX, check, expect, finish, i64, load, ptr,
                                   rnn_params)
from nncc_testing.refs import cho_gru_flat

torch.manual_seed(0)
np.random.seed(0)
lib = load(sys.argv[1])
lib.nncc_rnn_backward_workspace_size.restype = C.c_int64
lib.nncc_rnn_backward_workspace_size.argtypes = [C.c_int] + [C.c_int64] * 7
lib.nncc_rnn_cell_backward_workspace_size.restype = C.c_int64
lib.nncc_rnn_cell_backward_workspace_size.argtypes = [C.c_int] + [C.c_int64] * 3
lib.nncc_rnn_cell_workspace_size.restype = C.c_int64
lib.nncc_rnn_cell_workspace_size.argtypes = [C.c_int] + [C.c_int64] * 3


def c(a, dtype):
    return None if a is None else np.ascontiguousarray(a, dtype=dtype)


def parr(arrs, dtype):
    PT = C.POINTER(CTYPE[dtype])
    return (PT * len(arrs))(*[ptr(w) for w in arrs])


def kernel_forward(cell, dtype, x, flat, h0, c0, lengths, H, L, D, hb):
    B, T, I = x.shape
    ws = np.zeros(lib.nncc_rnn_workspace_size(CELL[cell], B, T, I, H, L, D,
                                              np.dtype(dtype).itemsize), np.uint8)
    y = np.zeros((B, T, D * H), dtype)
    hn = np.zeros((L * D, B, H), dtype)
    cn = np.zeros((L * D, B, H), dtype)
    ws_arrays = [c(w, dtype) for w in flat]
    lens = None if lengths is None else np.ascontiguousarray(lengths, np.int32)
    rc = getattr(lib, "nncc_rnn_forward_" + SUFFIX[dtype])(
        rnn_params(cell, B, T, I, H, L, D, hb, lens), ptr(c(x, dtype)),
        parr(ws_arrays, dtype), ptr(c(h0, dtype)), ptr(c(c0, dtype)),
        ptr(y), ptr(hn), ptr(cn), ws.ctypes.data_as(C.c_void_p), None)
    assert rc == 0, rc
    return y, hn, cn


def kernel_backward(cell, dtype, x, flat, h0, c0, lengths, H, L, D, hb, dy, dhn, dcn):
    B, T, I = x.shape
    ws = np.zeros(lib.nncc_rnn_backward_workspace_size(CELL[cell], B, T, I, H, L, D,
                                                       np.dtype(dtype).itemsize), np.uint8)
    ws_arrays = [c(w, dtype) for w in flat]
    dws = [np.full(w.shape, 9.0, dtype) for w in flat]  # garbage: overwritten
    dx = np.full((B, T, I), 9.0, dtype)
    dh0 = np.zeros((L * D, B, H), dtype)
    dc0 = np.zeros((L * D, B, H), dtype)
    lens = None if lengths is None else np.ascontiguousarray(lengths, np.int32)
    rc = getattr(lib, "nncc_rnn_backward_" + SUFFIX[dtype])(
        rnn_params(cell, B, T, I, H, L, D, hb, lens), ptr(c(x, dtype)),
        parr(ws_arrays, dtype), ptr(c(h0, dtype)), ptr(c(c0, dtype)), None,
        ptr(c(dy, dtype)), ptr(c(dhn, dtype)), ptr(c(dcn, dtype)), ptr(dx), ptr(dh0),
        ptr(dc0), parr(dws, dtype), ws.ctypes.data_as(C.c_void_p), None)
    assert rc == 0, rc
    return dx, dh0, dc0, dws


def torch_module(cell, I, H, L, D, hb, tdt):
    kw = dict(num_layers=L, bidirectional=(D == 2), batch_first=True, bias=bool(hb))
    if cell == "lstm":
        m = torch.nn.LSTM(I, H, **kw)
    elif cell in ("gru", "gru_cho"):
        m = torch.nn.GRU(I, H, **kw)
    else:
        m = torch.nn.RNN(I, H, nonlinearity=cell[4:], **kw)
    with torch.no_grad():
        for p in m.parameters():
            p.uniform_(-0.6, 0.6)
    return m.to(tdt)


def grad_case(cell, dtype, B, T, I, H, L, D, hb, lengths, with_h0):
    tdt = torch.float32 if dtype == np.float32 else torch.float64
    m = torch_module(cell, I, H, L, D, hb, tdt)
    params = list(m._flat_weights)
    x = torch.randn(B, T, I, dtype=tdt, requires_grad=True)
    h0 = torch.randn(L * D, B, H, dtype=tdt, requires_grad=True) if with_h0 else None
    c0 = (torch.randn(L * D, B, H, dtype=tdt, requires_grad=True)
          if (with_h0 and cell == "lstm") else None)
    if cell == "gru_cho":
        out, hn = cho_gru_flat(x, params, h0, lengths, H, L, D, hb)
        cn = None
    else:
        inp = (pack_padded_sequence(x, torch.tensor(lengths), batch_first=True,
                                    enforce_sorted=False) if lengths is not None else x)
        if cell == "lstm":
            out, (hn, cn) = m(inp, None if h0 is None else (h0, c0))
        else:
            out, hn = m(inp, h0)
            cn = None
        if lengths is not None:
            out, _ = pad_packed_sequence(out, batch_first=True, total_length=T)
    gy = torch.randn(B, T, D * H, dtype=tdt)
    gh = torch.randn(L * D, B, H, dtype=tdt)
    gc = torch.randn(L * D, B, H, dtype=tdt) if cell == "lstm" else None
    loss = (out * gy).sum() + (hn * gh).sum() + ((cn * gc).sum() if cn is not None else 0)
    wrt = [x] + params + ([h0] if h0 is not None else []) + ([c0] if c0 is not None else [])
    grads = torch.autograd.grad(loss, wrt)
    flat = [w.detach().numpy() for w in params]
    np_h0 = None if h0 is None else h0.detach().numpy()
    np_c0 = None if c0 is None else c0.detach().numpy()
    dx, dh0, dc0, dws = kernel_backward(cell, dtype, x.detach().numpy(), flat, np_h0,
                                        np_c0, lengths, H, L, D, hb, gy.numpy(),
                                        gh.numpy(), None if gc is None else gc.numpy())
    tag = "bwd %s L%d D%d bias%d len%s h0%d" % (cell, L, D, hb, "var" if lengths else "full",
                                                with_h0)
    check(tag + " dx", dx, grads[0].numpy(), dtype)
    names = []
    per = 4 if hb else 2
    for l in range(L):
        for d in range(D):
            for nm in ("w_ih", "w_hh", "b_ih", "b_hh")[:per]:
                names.append("%s l%dd%d" % (nm, l, d))
    for i, nm in enumerate(names):
        check(tag + " d" + nm, dws[i], grads[1 + i].numpy(), dtype)
    k = 1 + len(params)
    if h0 is not None:
        check(tag + " dh0", dh0, grads[k].numpy(), dtype)
        k += 1
    if c0 is not None:
        check(tag + " dc0", dc0, grads[k].numpy(), dtype)


B, T, I, H = 4, 7, 5, 6
LENS = [7, 2, 5, 1]  # unsorted, includes T and 1
for dtype in (np.float64, np.float32):
    for cell in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
        grad_case(cell, dtype, B, T, I, H, 2, 2, 1, LENS, True)
        grad_case(cell, dtype, B, T, I, H, 1, 1, 0, None, False)
    grad_case("gru_cho", dtype, B, T, I, H, 2, 2, 1, LENS, True)
    grad_case("gru_cho", dtype, 3, 4, I, H, 1, 1, 0, None, False)
    grad_case("lstm", dtype, 3, 5, I, H, 3, 1, 1, [5, 1, 3], True)  # 3 layers


# --- cell backward vs autograd of the cell equations -----------------------
def cell_ref(cell, xp, h, c, Whh, bhh, H):
    hg = h @ Whh.T
    if cell == "lstm":
        a = xp + hg + bhh
        i, f, g, o = torch.sigmoid(a[:, :H]), torch.sigmoid(a[:, H:2 * H]), \
            torch.tanh(a[:, 2 * H:3 * H]), torch.sigmoid(a[:, 3 * H:])
        cn = f * c + i * g
        return o * torch.tanh(cn), cn
    if cell == "gru":
        r = torch.sigmoid(xp[:, :H] + hg[:, :H] + bhh[:H])
        z = torch.sigmoid(xp[:, H:2 * H] + hg[:, H:2 * H] + bhh[H:2 * H])
        n = torch.tanh(xp[:, 2 * H:] + r * (hg[:, 2 * H:] + bhh[2 * H:]))
        return (1 - z) * n + z * h, None
    if cell == "gru_cho":
        r = torch.sigmoid(xp[:, :H] + hg[:, :H] + bhh[:H])
        z = torch.sigmoid(xp[:, H:2 * H] + hg[:, H:2 * H] + bhh[H:2 * H])
        ht = torch.tanh(xp[:, 2 * H:] + (r * h) @ Whh[2 * H:].T + bhh[2 * H:])
        return (1 - z) * h + z * ht, None
    a = xp + hg + bhh
    return (torch.relu(a) if cell == "rnn_relu" else torch.tanh(a)), None


def cell_case(cell, dtype, B, H):
    tdt = torch.float32 if dtype == np.float32 else torch.float64
    G = {"lstm": 4, "gru": 3, "gru_cho": 3}.get(cell, 1)
    xp = torch.randn(B, G * H, dtype=tdt, requires_grad=True)
    h = torch.randn(B, H, dtype=tdt, requires_grad=True)
    cc = torch.randn(B, H, dtype=tdt, requires_grad=True)
    Whh = (torch.rand(G * H, H, dtype=tdt) * 1.2 - 0.6).requires_grad_()
    bhh = (torch.rand(G * H, dtype=tdt) * 1.2 - 0.6).requires_grad_()
    hn, cn = cell_ref(cell, xp, h, cc, Whh, bhh, H)
    gh = torch.randn(B, H, dtype=tdt)
    gc = torch.randn(B, H, dtype=tdt)
    loss = (hn * gh).sum() + ((cn * gc).sum() if cn is not None else 0)
    wrt = [xp, h, Whh, bhh] + ([cc] if cell == "lstm" else [])
    g = torch.autograd.grad(loss, wrt)
    ws = np.zeros(lib.nncc_rnn_cell_backward_workspace_size(CELL[cell], B, H,
                                                            np.dtype(dtype).itemsize), np.uint8)
    dxp = np.zeros((B, G * H), dtype)
    dh = np.zeros((B, H), dtype)
    dc = np.zeros((B, H), dtype)
    dW = np.zeros((G * H, H), dtype)
    db = np.zeros((G * H,), dtype)
    n = lambda t: c(t.detach().numpy(), dtype)
    rc = getattr(lib, "nncc_rnn_cell_backward_" + SUFFIX[dtype])(
        C.c_int(CELL[cell]), *i64(B, H), ptr(n(xp)), ptr(n(h)),
        ptr(n(cc) if cell == "lstm" else None), ptr(n(Whh)), ptr(n(bhh)), ptr(n(gh)),
        ptr(n(gc) if cell == "lstm" else None), ptr(dxp), ptr(dh), ptr(dc), ptr(dW), ptr(db),
        ws.ctypes.data_as(C.c_void_p))
    assert rc == 0, rc
    tag = "cell bwd " + cell
    check(tag + " dxproj", dxp, g[0].numpy(), dtype)
    check(tag + " dh", dh, g[1].numpy(), dtype)
    check(tag + " dw_hh", dW, g[2].numpy(), dtype)
    check(tag + " db_hh", db, g[3].numpy(), dtype)
    if cell == "lstm":
        check(tag + " dc", dc, g[4].numpy(), dtype)


for dtype in (np.float64, np.float32):
    for cell in ("lstm", "gru", "gru_cho", "rnn_tanh", "rnn_relu"):
        cell_case(cell, dtype, 3, 5)


# --- central finite differences (fp64), LSTM 2 layers bidirectional --------
def fd_check():
    dtype = np.float64
    B_, T_, I_, H_, L_, D_ = 3, 5, 4, 3, 2, 2
    lens = [5, 2, 4]
    m = torch_module("lstm", I_, H_, L_, D_, 1, torch.float64)
    flat = [w.detach().numpy().copy() for w in m._flat_weights]
    x = np.random.randn(B_, T_, I_)
    h0 = np.random.randn(L_ * D_, B_, H_)
    c0 = np.random.randn(L_ * D_, B_, H_)
    gy = np.random.randn(B_, T_, D_ * H_)
    gh = np.random.randn(L_ * D_, B_, H_)
    gc = np.random.randn(L_ * D_, B_, H_)
    mask = np.zeros((B_, T_, 1))
    for b in range(B_):
        mask[b, :lens[b]] = 1

    def loss(x, flat, h0, c0):
        y, hn, cn = kernel_forward("lstm", dtype, x, flat, h0, c0, lens, H_, L_, D_, 1)
        return float((y * gy * mask).sum() + (hn * gh).sum() + (cn * gc).sum())

    dx, dh0, dc0, dws = kernel_backward("lstm", dtype, x, flat, h0, c0, lens, H_, L_, D_,
                                        1, gy, gh, gc)
    eps = 1e-6
    rng = np.random.RandomState(3)
    worst = 0.0
    targets = [("x", x, dx), ("h0", h0, dh0), ("c0", c0, dc0)] + \
        [("w%d" % i, flat[i], dws[i]) for i in (0, 1, 2, 5, 9, 12)]
    for name, arr, g in targets:
        for _ in range(3):
            idx = tuple(rng.randint(s) for s in arr.shape)
            old = arr[idx]
            arr[idx] = old + eps
            lp = loss(x, flat, h0, c0)
            arr[idx] = old - eps
            lm = loss(x, flat, h0, c0)
            arr[idx] = old
            fd = (lp - lm) / (2 * eps)
            worst = max(worst, abs(fd - g[idx]) / max(1.0, abs(fd)))
    ok = worst < 1e-7
    print("%s finite-difference lstm L2 D2 lengths f64 err=%.3e tol=1e-07"
          % ("PASS" if ok else "FAIL", worst))
    if not ok:
        from nncc_testing.ckernels import FAILED
        FAILED.append("fd lstm")


# --- layer API: reverse direction of a D=2 layer through dxproj, i64
# lengths including a zero length (state adjoint passes through: dh0 = dh_n,
# nothing else touched), vs the stack kernel on the same weights -----------
def layer_api_case(cell, dtype):
    B_, T_, I_, H_ = 3, 5, 4, 3
    lens = np.array([5, 0, 3], np.int64)
    G = {"lstm": 4, "gru": 3, "gru_cho": 3}.get(cell, 1)
    rng = np.random.RandomState(11)
    x = rng.randn(B_, T_, I_).astype(dtype)
    wih = (rng.rand(G * H_, I_) * 1.2 - 0.6).astype(dtype)
    whh = (rng.rand(G * H_, H_) * 1.2 - 0.6).astype(dtype)
    bih = (rng.rand(G * H_) * 1.2 - 0.6).astype(dtype)
    bhh = (rng.rand(G * H_) * 1.2 - 0.6).astype(dtype)
    h0 = rng.randn(2, B_, H_).astype(dtype)
    c0 = rng.randn(2, B_, H_).astype(dtype)
    dy = rng.randn(B_, T_, 2 * H_).astype(dtype)
    dhn = rng.randn(2, B_, H_).astype(dtype)
    dcn = rng.randn(2, B_, H_).astype(dtype)
    es = np.dtype(dtype).itemsize
    xproj = (x.reshape(-1, I_) @ wih.T + bih).astype(dtype).reshape(B_, T_, G * H_)
    lib.nncc_rnn_layer_workspace_size.restype = C.c_int64
    lib.nncc_rnn_layer_workspace_size.argtypes = [C.c_int] + [C.c_int64] * 3
    ws = np.zeros(lib.nncc_rnn_layer_workspace_size(CELL[cell], B_, H_, es), np.uint8)
    y = np.zeros((B_, T_, 2 * H_), dtype)
    saved = np.zeros(lib.nncc_rnn_saved_size(CELL[cell], B_, T_, H_, 1, 2), dtype)
    isc = cell == "lstm"
    rc = fn_layer = getattr(lib, "nncc_rnn_layer_" + SUFFIX[dtype])(
        C.c_int(CELL[cell]), *i64(B_, T_, H_, 2, 1), C.c_int(1), ptr(xproj), ptr(whh),
        ptr(bhh), ptr(h0), ptr(c0 if isc else None), None, ptr(lens), ptr(y), None, None,
        ws.ctypes.data_as(C.c_void_p), ptr(saved))
    assert rc == 0, rc
    lib.nncc_rnn_layer_backward_workspace_size.restype = C.c_int64
    lib.nncc_rnn_layer_backward_workspace_size.argtypes = [C.c_int] + [C.c_int64] * 4
    bws = np.zeros(lib.nncc_rnn_layer_backward_workspace_size(CELL[cell], B_, T_, H_, es),
                   np.uint8)
    dxproj = np.zeros((B_, T_, G * H_), dtype)
    dh0 = np.zeros((2, B_, H_), dtype)
    dc0 = np.zeros((2, B_, H_), dtype)
    dwhh = np.zeros_like(whh)
    dbhh = np.zeros_like(bhh)
    rc = getattr(lib, "nncc_rnn_layer_backward_" + SUFFIX[dtype])(
        C.c_int(CELL[cell]), *i64(B_, T_, 0, H_, 2, 1), C.c_int(1), None, None, ptr(whh),
        ptr(saved), ptr(y), ptr(h0), ptr(c0 if isc else None), None, ptr(lens), ptr(dy),
        ptr(dhn), ptr(dcn if isc else None), None, ptr(dh0), ptr(dc0), None, ptr(dwhh), None,
        ptr(dbhh), ptr(dxproj), bws.ctypes.data_as(C.c_void_p))
    assert rc == 0, rc
    # Reference: the stack kernel with D=2 (direction 0 weights arbitrary,
    # its adjoints independent), restricted to direction 1.
    flat = [wih, whh, bih, bhh, wih, whh, bih, bhh]
    sdx, sdh0, sdc0, sdw = kernel_backward(cell, dtype, x, flat, h0, c0 if isc else None,
                                           [5, 0, 3], H_, 1, 2, 1, dy, dhn,
                                           dcn if isc else None)
    tag = "layer api %s reverse lengths64 zero-length" % cell
    check(tag + " dh0", dh0[1], sdh0[1], dtype)
    check(tag + " dw_hh", dwhh, sdw[5], dtype)
    check(tag + " db_hh", dbhh, sdw[7], dtype)
    check(tag + " db_ih = sum dxproj", dxproj.reshape(-1, G * H_).sum(0), sdw[6], dtype)
    check(tag + " dw_ih = dxproj^T x", dxproj.reshape(-1, G * H_).T @ x.reshape(-1, I_),
          sdw[4], dtype)
    expect(tag + " zero-length row: dh0 = dh_n", np.array_equal(dh0[1, 1], dhn[1, 1]))
    expect(tag + " zero-length row: dxproj = 0", not dxproj[1].any())
    if isc:
        check(tag + " dc0", dc0[1], sdc0[1], dtype)
        expect(tag + " zero-length row: dc0 = dc_n", np.array_equal(dc0[1, 1], dcn[1, 1]))


for dtype in (np.float64, np.float32):
    for cell in ("lstm", "gru", "gru_cho", "rnn_tanh"):
        layer_api_case(cell, dtype)



# --- reserve path: forward_train + backward_reserved vs the recompute path --
for name in ("nncc_rnn_reserve_size", "nncc_rnn_backward_reserved_workspace_size"):
    getattr(lib, name).restype = C.c_int64
    getattr(lib, name).argtypes = [C.c_int] + [C.c_int64] * 6
lib.nncc_rnn_forward_train_workspace_size.restype = C.c_int64
lib.nncc_rnn_forward_train_workspace_size.argtypes = [C.c_int] + [C.c_int64] * 4


def zoneout_backward(cell, dtype, x, flat, h0, c0, lengths, H, L, D, hb, dy, dhn, dcn, p):
    """nncc_rnn_backward without a reserve (forward recomputed) and
    nncc_rnn_forward_train + nncc_rnn_backward from its reserve, same zoneout
    seed and offset."""
    B, T, I = x.shape
    e = np.dtype(dtype).itemsize
    cc = C.c_int(CELL[cell])
    keep = [c(w, dtype) for w in flat]  # the converted arrays outlive the calls
    W = parr(keep, dtype)
    lens = None if lengths is None else np.ascontiguousarray(lengths, np.int32)
    params = rnn_params(cell, B, T, I, H, L, D, hb, lens, zoneout=p, seed=11, offset=5 << 40)
    x, h0, c0, dy, dhn, dcn = [c(a, dtype) for a in (x, h0, c0, dy, dhn, dcn)]
    args = (params, ptr(x), W, ptr(h0), ptr(c0))
    grads = (ptr(dy), ptr(dhn), ptr(dcn))

    def outs():
        return ([np.full((B, T, I), 9.0, dtype), np.full((L * D, B, H), 9.0, dtype),
                 np.full((L * D, B, H), 9.0, dtype)], [np.full(w.shape, 9.0, dtype) for w in flat])
    (dx, dh0, dc0), dws = outs()
    ws = np.zeros(lib.nncc_rnn_backward_workspace_size(cc, B, T, I, H, L, D, e), np.uint8)
    rc = getattr(lib, "nncc_rnn_backward_" + SUFFIX[dtype])(
        *args, None, *grads, ptr(dx), ptr(dh0), ptr(dc0), parr(dws, dtype),
        ws.ctypes.data_as(C.c_void_p), None)
    assert rc == 0, rc
    reserve = np.zeros(lib.nncc_rnn_reserve_size(cc, B, T, H, L, D, e) // e, dtype)
    y = np.zeros((B, T, D * H), dtype)
    hn = np.zeros((L * D, B, H), dtype)
    cn = np.zeros((L * D, B, H), dtype)
    fws = np.zeros(lib.nncc_rnn_forward_train_workspace_size(cc, B, T, H, e), np.uint8)
    rc = getattr(lib, "nncc_rnn_forward_train_" + SUFFIX[dtype])(
        *args, ptr(y), ptr(hn), ptr(cn), ptr(reserve), fws.ctypes.data_as(C.c_void_p))
    assert rc == 0, rc
    (rdx, rdh0, rdc0), rdws = outs()
    bws = np.zeros(lib.nncc_rnn_backward_reserved_workspace_size(cc, B, T, H, L, D, e), np.uint8)
    rc = getattr(lib, "nncc_rnn_backward_" + SUFFIX[dtype])(
        *args, ptr(reserve), *grads, ptr(rdx), ptr(rdh0), ptr(rdc0), parr(rdws, dtype),
        bws.ctypes.data_as(C.c_void_p), None)
    assert rc == 0, rc
    return (y, hn, cn), [dx, dh0, dc0] + dws, [rdx, rdh0, rdc0] + rdws


def reserve_case(cell, dtype, L, D, lengths, p):
    rng = np.random.RandomState(3)
    G = {"lstm": 4, "gru": 3, "gru_cho": 3}.get(cell, 1)
    flat = []
    for l in range(L):
        for d in range(D):
            isz = I if l == 0 else D * H
            flat += [rng.randn(G * H, isz) * 0.4, rng.randn(G * H, H) * 0.4,
                     rng.randn(G * H) * 0.1, rng.randn(G * H) * 0.1]
    x = rng.randn(B, T, I)
    h0 = rng.randn(L * D, B, H)
    c0 = rng.randn(L * D, B, H) if cell == "lstm" else None
    dy, dhn = rng.randn(B, T, D * H), rng.randn(L * D, B, H)
    dcn = rng.randn(L * D, B, H) if cell == "lstm" else None
    (y, hn, cn), ref, got = zoneout_backward(cell, dtype, x, flat, h0, c0, lengths, H, L, D,
                                             1, dy, dhn, dcn, p)
    tag = "reserve %s L%d D%d len%s zoneout%g %s" % (cell, L, D, "var" if lengths else "full",
                                                     p, SUFFIX[dtype])
    expect(tag + ": backward from the reserve == recomputing backward (bitwise)",
           all(np.array_equal(a, b) for a, b in zip(ref, got)))
    if p == 0:
        fy, fhn, fcn = kernel_forward(cell, dtype, x, flat, h0, c0, lengths, H, L, D, 1)
        same = np.array_equal(y, fy) and np.array_equal(hn, fhn)
        if cell == "lstm":
            same = same and np.array_equal(cn, fcn)
        expect(tag + ": forward_train outputs == nncc_rnn_forward (bitwise)", same)


for dtype in (np.float64, np.float32):
    for cell in ("lstm", "gru", "gru_cho", "rnn_tanh"):
        reserve_case(cell, dtype, 2, 2, LENS, 0.0)
        reserve_case(cell, dtype, 1, 1, None, 0.0)
    reserve_case("lstm", dtype, 2, 2, LENS, 0.3)


fd_check()
finish()
