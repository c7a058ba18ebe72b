"""Parity of the recurrent kernels with nn.RNN / nn.LSTM / nn.GRU (packed
sequences) and of the Cho et al. 2014 GRU with a hand-written reference."""
import ctypes as C
import sys

import numpy as np
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nncc_testing.ckernels import CELL, CTYPE, SUFFIX, check, expect, finish, load, ptr, rnn_params
from nncc_testing.refs import cho_gru_flat

torch.manual_seed(0)
np.random.seed(0)
lib = load(sys.argv[1])


def run_kernel(cell, dtype, x, flat, h0, c0, lengths, H, L, D, has_bias,
               saved=False):
    B, T, I = x.shape
    ws = np.zeros(lib.nncc_rnn_workspace_size(CELL[cell], B, T, I, H, L, D,
                                              np.dtype(dtype).itemsize),
                  dtype=np.uint8)
    y = np.full((B, T, D * H), 7.0, dtype=dtype)  # garbage: must be overwritten
    hn = np.zeros((L * D, B, H), dtype=dtype)
    cn = np.zeros((L * D, B, H), dtype=dtype)
    ws_arrays = [np.ascontiguousarray(w, dtype=dtype) for w in flat]
    PT = C.POINTER(CTYPE[dtype])
    wp = (PT * len(ws_arrays))(*[ptr(w) for w in ws_arrays])
    sv = None
    if saved:
        sv = np.zeros(lib.nncc_rnn_saved_size(CELL[cell], B, T, H, L, D), dtype=dtype)
    lens = None if lengths is None else np.ascontiguousarray(lengths, dtype=np.int32)
    fn = getattr(lib, "nncc_rnn_forward_" + SUFFIX[dtype])
    rc = fn(rnn_params(cell, B, T, I, H, L, D, has_bias, lens),
            ptr(np.ascontiguousarray(x, dtype=dtype)), wp,
            ptr(h0), ptr(c0), ptr(y), ptr(hn), ptr(cn),
            ws.ctypes.data_as(C.c_void_p), ptr(sv))
    assert rc == 0, rc
    return y, hn, cn, sv


def torch_module(cell, I, H, L, D, has_bias, tdtype):
    kw = dict(num_layers=L, bidirectional=(D == 2), batch_first=True, bias=bool(has_bias))
    if cell == "lstm":
        m = torch.nn.LSTM(I, H, **kw)
    elif cell == "gru":
        m = torch.nn.GRU(I, H, **kw)
    else:
        m = torch.nn.RNN(I, H, nonlinearity=cell[4:], **kw)
    # Larger weights than the default so the test is not trivially linear.
    with torch.no_grad():
        for p in m.parameters():
            p.uniform_(-0.6, 0.6)
    return m.to(tdtype)


def one_case(cell, dtype, B, T, I, H, L, D, has_bias, lengths, with_h0):
    tdtype = torch.float32 if dtype == np.float32 else torch.float64
    m = torch_module(cell, I, H, L, D, has_bias, tdtype)
    x = torch.randn(B, T, I, dtype=tdtype)
    h0 = torch.randn(L * D, B, H, dtype=tdtype) if with_h0 else None
    c0 = torch.randn(L * D, B, H, dtype=tdtype) if (with_h0 and cell == "lstm") else None
    with torch.no_grad():
        if lengths is not None:
            inp = pack_padded_sequence(x, torch.tensor(lengths), batch_first=True,
                                       enforce_sorted=False)
        else:
            inp = x
        if cell == "lstm":
            out, (hn, cn) = m(inp, None if h0 is None else (h0, c0))
        else:
            out, hn = m(inp, h0)
            cn = None
        if lengths is not None:
            out, _ = pad_packed_sequence(out, batch_first=True, total_length=T)
    flat = [w.detach().numpy() for w in m._flat_weights]
    np_h0 = None if h0 is None else h0.numpy().copy()
    np_c0 = None if c0 is None else c0.numpy().copy()
    y, khn, kcn, _ = run_kernel(cell, dtype, x.numpy(), flat, np_h0, np_c0, lengths,
                                H, L, D, has_bias)
    tag = "%s L%d D%d bias%d len%s h0%d" % (cell, L, D, has_bias,
                                            "var" if lengths else "full", with_h0)
    check(tag + " y", y, out.numpy(), dtype)
    check(tag + " h_n", khn, hn.numpy(), dtype)
    if cell == "lstm":
        check(tag + " c_n", kcn, cn.numpy(), dtype)


# --- Cho et al. 2014 GRU vs the hand-written reference of eqs. 21-24 ------
def cho_case(dtype, B, T, I, H, L, D, has_bias, lengths):
    tdtype = torch.float32 if dtype == np.float32 else torch.float64
    m = torch_module("gru", I, H, L, D, has_bias, tdtype)
    flat = [w.detach() for w in m._flat_weights]
    x = torch.randn(B, T, I, dtype=tdtype)
    h0 = torch.randn(L * D, B, H, dtype=tdtype)
    ry, rhn = cho_gru_flat(x, flat, h0, lengths, H, L, D, has_bias)
    y, hn, _, _ = run_kernel("gru_cho", dtype, x.numpy(), [f.numpy() for f in flat],
                             h0.numpy().copy(), None, lengths, H, L, D, has_bias)
    tag = "gru_cho L%d D%d bias%d len%s" % (L, D, has_bias, "var" if lengths else "full")
    check(tag + " y", y, ry.numpy(), dtype)
    check(tag + " h_n", hn, rhn.numpy(), dtype)


B, T, I, H = 4, 9, 5, 7
LENS = [9, 3, 6, 1]  # unsorted, includes T and 1
for dtype in (np.float32, np.float64):
    for cell in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
        one_case(cell, dtype, B, T, I, H, 2, 2, 1, LENS, True)
        one_case(cell, dtype, B, T, I, H, 1, 1, 0, None, False)
    one_case("lstm", dtype, B, T, I, H, 3, 1, 1, LENS, False)
    one_case("gru", dtype, B, T, I, H, 1, 2, 0, LENS, True)
    cho_case(dtype, B, T, I, H, 2, 2, 1, LENS)
    cho_case(dtype, B, T, I, H, 1, 1, 0, None)

# Saved activations: LSTM slot 4 is c_t, its value at the last valid step of
# a forward single-layer run is c_n; RNN slot 0 is h_t = y.
tdtype = torch.float64
m = torch_module("lstm", I, H, 1, 1, 1, tdtype)
x = np.random.randn(B, T, I)
flat = [w.detach().numpy() for w in m._flat_weights]
y, hn, cn, sv = run_kernel("lstm", np.float64, x, flat, None, None, LENS, H, 1, 1, 1,
                           saved=True)
sv = sv.reshape(1, 1, B, T, 5, H)
last_c = np.stack([sv[0, 0, b, LENS[b] - 1, 4] for b in range(B)])
check("lstm saved c_t", last_c, cn[0], np.float64)
last_h = np.stack([sv[0, 0, b, LENS[b] - 1, 3] * np.tanh(sv[0, 0, b, LENS[b] - 1, 4])
                   for b in range(B)])
check("lstm saved o*tanh(c)", last_h, hn[0], np.float64)
finish()
