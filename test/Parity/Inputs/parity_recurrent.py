"""Recurrent families vs torch.nn.RNN / LSTM / GRU (packed sequences for
variable lengths), a hand-written Cho et al. 2014 GRU, and every
variable-length batch also against running each sequence alone (through
nncc with B = 1, and through torch)."""
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from common import model, nt, rand, sd
from nncc_testing.refs import cho_cell, cho_gru

B, T = 4, 7
LENGTHS = [7, 3, 5, 1]  # unsorted, one full, one of length 1


def torch_rnn(m, x, lengths=None, h0=None):
    """(y, h_n[, c_n]) of a batch_first torch RNN module; packed when lengths."""
    with torch.no_grad():
        if lengths is None:
            y, st = m(x, h0)
        else:
            p = pack_padded_sequence(x, torch.tensor(lengths), batch_first=True,
                                     enforce_sorted=False)
            y, st = m(p, h0)
            y, _ = pad_packed_sequence(y, batch_first=True, total_length=x.shape[1])
    return (y,) + (tuple(st) if isinstance(st, tuple) else (st,))


def check_alone(tag, mdl, w, x, lengths, out, names, extra=None, tmod=None):
    """Each sequence alone (B = 1, T = its length) through nncc, compared
    with the batch run's row (y up to the length; states) and with torch."""
    for b, L in enumerate(lengths):
        inp = {"x": x[b:b + 1, :L], "lengths": torch.tensor([L], dtype=torch.int32)}
        for k, v in (extra or {}).items():
            inp[k] = v(b)
        alone = mdl.run(w, inp)
        for n in names:
            got = alone[n]
            ref = out[n][b:b + 1, :L] if n.startswith("y") else out[n][:, b:b + 1]
            nt.check("%s b%d len%d %s alone vs batch" % (tag, b, L, n), got, ref)
        if tmod is not None:
            h0 = (extra or {}).get("h0")
            tr = torch_rnn(tmod, x[b:b + 1, :L], None, None if h0 is None else h0(b))
            for n, r in zip(names, tr):
                nt.check("%s b%d len%d %s alone vs torch" % (tag, b, L, n), alone[n], r)


def elman():
    I, H = 5, 7
    rt = nt.randomize_(torch.nn.RNN(I, H, 2, nonlinearity="tanh", batch_first=True))
    rr = nt.randomize_(torch.nn.RNN(I, H, 1, nonlinearity="relu", batch_first=True,
                                    bidirectional=True), scale=0.6)
    x, h0 = rand(B, T, I), rand(2, B, H)
    w = dict(sd(rt, "rt"), **sd(rr, "rr"))
    out = model("elman").run(w, {"x": x, "h0": h0})
    yt, ht = torch_rnn(rt, x, None, h0)
    yr, hr = torch_rnn(rr, x)
    for n, r in (("yt", yt), ("ht", ht), ("yr", yr), ("hr", hr)):
        nt.check("elman %s" % n, out[n], r)


def lstm2():
    I, H = 6, 8
    m = nt.randomize_(torch.nn.LSTM(I, H, 2, batch_first=True))
    x, h0, c0 = rand(B, T, I), rand(2, B, H), rand(2, B, H)
    out = model("lstm2").run(sd(m, "r"), {"x": x, "h0": h0, "c0": c0})
    y, hn, cn = torch_rnn(m, x, None, (h0, c0))
    for n, r in (("y", y), ("hn", hn), ("cn", cn)):
        nt.check("lstm2 %s" % n, out[n], r)


def bilstm_len():
    I, H = 5, 6
    m = nt.randomize_(torch.nn.LSTM(I, H, 2, batch_first=True, bidirectional=True))
    x = rand(B, T, I)
    lengths = torch.tensor(LENGTHS, dtype=torch.int32)
    mdl = model("bilstm_len")
    w = sd(m, "r")
    out = mdl.run(w, {"x": x, "lengths": lengths})
    y, hn, cn = torch_rnn(m, x, LENGTHS)
    for n, r in (("y", y), ("hn", hn), ("cn", cn)):
        nt.check("bilstm_len %s vs packed" % n, out[n], r)
    check_alone("bilstm_len", mdl, w, x, LENGTHS, out, ["y", "hn", "cn"], tmod=m)


def gru_pt():
    I, H = 5, 6
    m = nt.randomize_(torch.nn.GRU(I, H, 2, batch_first=True, bidirectional=True))
    x, h0 = rand(B, T, I), rand(4, B, H)
    lengths = torch.tensor(LENGTHS, dtype=torch.int32)
    mdl = model("gru_pt")
    w = sd(m, "r")
    out = mdl.run(w, {"x": x, "lengths": lengths, "h0": h0})
    y, hn = torch_rnn(m, x, LENGTHS, h0)
    for n, r in (("y", y), ("hn", hn)):
        nt.check("gru_pt %s vs packed" % n, out[n], r)
    check_alone("gru_pt", mdl, w, x, LENGTHS, out, ["y", "hn"],
                extra={"h0": lambda b: h0[:, b:b + 1].contiguous()}, tmod=m)


def gru_cho():
    I, H = 5, 6
    m = nt.randomize_(torch.nn.GRU(I, H, 2, batch_first=True, bidirectional=True))
    m1 = nt.randomize_(torch.nn.GRU(I, H, 1, batch_first=True))
    x, h0 = rand(B, T, I), rand(4, B, H)
    lengths = torch.tensor(LENGTHS, dtype=torch.int32)
    mdl = model("gru_cho")
    w = dict(sd(m, "r"), **sd(m1, "r1"))
    out = mdl.run(w, {"x": x, "lengths": lengths, "h0": h0})
    p = {k: v.detach() for k, v in m.state_dict().items()}
    p1 = {k: v.detach() for k, v in m1.state_dict().items()}
    with torch.no_grad():
        y, hn = cho_gru(p, x, LENGTHS, h0, 2, 2)
        y1, hn1 = cho_gru(p1, x, None, None, 1, 1)
    for n, r in (("y", y), ("hn", hn), ("y1", y1), ("hn1", hn1)):
        nt.check("gru_cho %s vs eqs. 21-24" % n, out[n], r)
    # alone: the other model's input x is needed too, same rows
    for b, L in enumerate(LENGTHS):
        alone = mdl.run(w, {"x": x[b:b + 1, :L], "lengths": torch.tensor([L], dtype=torch.int32),
                            "h0": h0[:, b:b + 1].contiguous()})
        nt.check("gru_cho b%d len%d y alone vs batch" % (b, L), alone["y"], out["y"][b:b + 1, :L])
        nt.check("gru_cho b%d len%d hn alone vs batch" % (b, L), alone["hn"], out["hn"][:, b:b + 1])


def cells():
    I, H = 5, 6
    rt, rr = torch.nn.RNNCell(I, H), torch.nn.RNNCell(I, H, nonlinearity="relu")
    lc, gp, gc = torch.nn.LSTMCell(I, H), torch.nn.GRUCell(I, H), torch.nn.GRUCell(I, H)
    for m in (rt, rr, lc, gp, gc):
        nt.randomize_(m)
    w = {}
    for p, m in (("rt", rt), ("rr", rr), ("lc", lc), ("gp", gp), ("gc", gc)):
        w.update(sd(m, p))
    x, h, c = rand(B, I), rand(B, H), rand(B, H)
    out = model("cells").run(w, {"x": x, "h": h, "c": c})
    with torch.no_grad():
        h2, c2 = lc(x, (h, c))
        k = cho_cell(x, h, gc.weight_ih, gc.weight_hh, gc.bias_ih, gc.bias_hh)
        ref = {"a": rt(x, h), "b": rr(x, h), "h2": h2, "c2": c2, "g": gp(x, h), "k": k}
    for n, r in ref.items():
        nt.check("cells %s" % n, out[n], r)


def recurrent_variants():
    I, H = 4, 5
    lengths = [7, 0, 2, 6]  # a zero-length sequence: y = 0, h_n = h0
    l3 = nt.randomize_(torch.nn.LSTM(I, H, 3, bias=False, batch_first=True), scale=1.0)
    rb = nt.randomize_(torch.nn.RNN(I, H, 2, nonlinearity="relu", bidirectional=True,
                                    batch_first=True), scale=0.5)
    lh = nt.randomize_(torch.nn.LSTM(I, H, 1, bidirectional=True, batch_first=True))
    x, h0, c0 = rand(B, T, I), rand(2, B, H), rand(2, B, H)
    w = dict(sd(l3, "l3"), **sd(rb, "rb"), **sd(lh, "lh"))
    out = model("recurrent_variants").run(w, {"x": x, "lengths": torch.tensor(lengths, dtype=torch.int32),
                                              "h0": h0, "c0": c0})
    y3, h3, c3 = torch_rnn(l3, x)
    for n, r in (("y3", y3), ("h3", h3), ("c3", c3)):
        nt.check("lstm 3 layers no bias %s" % n, out[n], r)
    # per sequence through torch (packing refuses length 0)
    for b, L in enumerate(lengths):
        if L == 0:
            nt.check("rnn relu b%d len0 y = 0" % b, out["yr"][b], torch.zeros(T, 2 * H))
            nt.check("rnn relu b%d len0 h_n = 0" % b, out["hr"][:, b], torch.zeros(4, H))
            nt.check("lstm h0 b%d len0 y = 0" % b, out["yl"][b], torch.zeros(T, 2 * H))
            nt.check("lstm h0 b%d len0 h_n = h0" % b, out["hl"][:, b], h0[:, b])
            nt.check("lstm h0 b%d len0 c_n = c0" % b, out["cl"][:, b], c0[:, b])
            continue
        yr, hr = torch_rnn(rb, x[b:b + 1, :L])
        nt.check("rnn relu bidir b%d len%d y" % (b, L), out["yr"][b:b + 1, :L], yr)
        nt.check("rnn relu bidir b%d len%d y past length = 0" % (b, L), out["yr"][b, L:],
                 torch.zeros(T - L, 2 * H))
        nt.check("rnn relu bidir b%d len%d h_n" % (b, L), out["hr"][:, b:b + 1], hr)
        yl, hl, cl = torch_rnn(lh, x[b:b + 1, :L], None,
                               (h0[:, b:b + 1].contiguous(), c0[:, b:b + 1].contiguous()))
        nt.check("lstm bidir h0 b%d len%d y" % (b, L), out["yl"][b:b + 1, :L], yl)
        nt.check("lstm bidir h0 b%d len%d h_n" % (b, L), out["hl"][:, b:b + 1], hl)
        nt.check("lstm bidir h0 b%d len%d c_n" % (b, L), out["cl"][:, b:b + 1], cl)


if __name__ == "__main__":
    nt.run_cases({"elman": elman, "lstm2": lstm2, "bilstm_len": bilstm_len, "gru_pt": gru_pt,
                  "gru_cho": gru_cho, "cells": cells, "recurrent_variants": recurrent_variants})
