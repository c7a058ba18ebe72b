"""Recurrent families vs torch.nn.RNN / LSTM / GRU (packed sequences for
variable lengths), a hand-written Cho et al. 2014 GRU, and every
variable-length batch also against running each sequence alone (through
nncc with B = 1, and through torch)."""
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from common import model, nt, rand, sd

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


def cho_cell(x, h, wih, whh, bih, bhh):
    """Cho et al. 2014, seed notes eqs. 21-24; rows of the [3H, .] weights are
    r, z, n (the PyTorch layout), biases b_. = bias_ih_. + bias_hh_.."""
    H = h.shape[-1]
    xr, xz, xn = (x @ wih.T + bih).split(H, -1)
    hr, hz = (h @ whh[:2 * H].T + bhh[:2 * H]).split(H, -1)
    z = torch.sigmoid(xz + hz)
    r = torch.sigmoid(xr + hr)
    ht = torch.tanh(xn + (r * h) @ whh[2 * H:].T + bhh[2 * H:])
    return (1 - z) * h + z * ht


def cho_gru(params, x, lengths, h0, L, D):
    """Sequence by sequence, layer by layer; y zero past each length."""
    Bn, Tn, _ = x.shape
    H = params["weight_hh_l0"].shape[1]
    hn = torch.zeros(L * D, Bn, H)
    inp = x
    for l in range(L):
        y = torch.zeros(Bn, Tn, D * H)
        for d in range(D):
            sfx = "_l%d%s" % (l, "_reverse" if d else "")
            wih, whh = params["weight_ih" + sfx], params["weight_hh" + sfx]
            bih, bhh = params["bias_ih" + sfx], params["bias_hh" + sfx]
            for b in range(Bn):
                n = int(lengths[b]) if lengths is not None else Tn
                h = h0[l * D + d, b] if h0 is not None else torch.zeros(H)
                steps = range(n - 1, -1, -1) if d else range(n)
                for t in steps:
                    h = cho_cell(inp[b, t], h, wih, whh, bih, bhh)
                    y[b, t, d * H:(d + 1) * H] = h
                hn[l * D + d, b] = h
        inp = y
    return y, hn


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


if __name__ == "__main__":
    nt.run_cases({"elman": elman, "lstm2": lstm2, "bilstm_len": bilstm_len, "gru_pt": gru_pt,
                  "gru_cho": gru_cho})
