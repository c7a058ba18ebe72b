"""fp32 gradients of `nncc run --grad` against torch.autograd on the same
weights and inputs, one case per model family (issue 4, item 4).

The models are the forward-parity models of test/Parity/Inputs/models with a
loss (sum of MSEs against random targets over their outputs) added where they
had none (Inputs/models/*.nn here); the references reuse the parity scripts'
torch modules and hand-written loops (test/Parity/Inputs/parity_*.py).
nncc runs in fp32, inference mode (dropout off); the torch reference runs in
float64 on the very same fp32 weights and inputs (so its own rounding error
is negligible), modules in eval().

Metric per tensor (loss and every grad.<param>):
    err = max|nncc - torch| / max(1, max|torch|),  tolerance 1e-4 (fp32).
`rel` (max|nncc - torch| / max|torch|) is printed too, for information only.
Usage: autograd_families.py NNCC [case ...]   (default: all cases)
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import nncc_testing as nt
from nncc_testing.refs import MLP, cho_gru, dilated_allowed, fixed, lsh_attention_layer

HERE = os.path.dirname(os.path.abspath(__file__))
PARITY = os.path.join(HERE, "..", "Parity", "Inputs")  # its models/*.nn
LENGTHS = [7, 3, 5, 1]  # unsorted, one full, one of length 1
torch.set_num_threads(1)
torch.manual_seed(0)
np.random.seed(0)

TOL = 1e-4
GMODELS = os.path.join(HERE, "Inputs", "models")
PMODELS = os.path.join(PARITY, "models")
RESULTS = []   # (family, worst err, worst tensor, rel, n tensors)
FAILED = []


def rand(*shape, scale=1.0):
    return (torch.randn(*shape) * scale).float()


class Ref:
    """Torch parameters under their nncc names; float64 copies of fp32 weights."""

    def __init__(self):
        self.params = {}   # nncc name -> leaf tensor (float64, requires grad)
        self.weights = {}  # nncc name -> fp32 ndarray (what nncc loads)

    def add(self, prefix, module, rename=lambda n: n):
        for n, p in module.named_parameters():
            self.weights[prefix + "." + rename(n)] = nt.to_numpy(p).astype(np.float32)
        module.double()
        for n, p in module.named_parameters():
            self.params[prefix + "." + rename(n)] = p
        return module

    def leaf(self, name, value):
        t = torch.as_tensor(nt.to_numpy(value)).float()
        self.weights[name] = nt.to_numpy(t)
        p = t.double().requires_grad_(True)
        self.params[name] = p
        return p


def compare(family, out, loss, ref):
    """loss and every grad.<param> of `ref` against nncc's `out`."""
    loss.backward()
    rows = [("loss", out["loss"], loss.detach())]
    for n, p in ref.params.items():
        g = p.grad if p.grad is not None else torch.zeros_like(p)
        if "grad." + n not in out:
            raise KeyError("nncc gave no grad.%s (has %s)" % (
                n, sorted(k for k in out if k.startswith("grad."))))
        rows.append(("grad." + n, out["grad." + n], g))
    extra = sorted(k for k in out if k.startswith("grad.") and k[5:] not in ref.params)
    if extra:
        raise KeyError("nncc gradients without a torch counterpart: %s" % extra)
    worst = (-1.0, "", 0.0)
    bad = []
    for n, a, b in rows:
        a = np.asarray(a, dtype=np.float64)
        b = nt.to_numpy(b).astype(np.float64)
        if a.shape != b.shape:
            raise AssertionError("%s: shape %s vs torch %s" % (n, a.shape, b.shape))
        d = float(np.abs(a - b).max()) if a.size else 0.0
        mb = float(np.abs(b).max()) if b.size else 0.0
        e = d / max(1.0, mb)
        rel = d / mb if mb > 0 else d
        if not np.isfinite(e) or e > TOL:
            bad.append("%s err=%.3e max|torch|=%.3g" % (n, e, mb))
        if e > worst[0] or not np.isfinite(e):
            worst = (e, n, rel)
    ok = not bad
    RESULTS.append((family, worst[0], worst[1], worst[2], len(rows)))
    print("%s %s: %d tensors (loss + %d grads), worst err=%.3e (%s, rel %.1e) tol=%.0e"
          % ("PASS" if ok else "FAIL", family, len(rows), len(rows) - 1, worst[0], worst[1],
             worst[2], TOL))
    for b in bad:
        print("  FAIL %s %s" % (family, b))
    if not ok:
        FAILED.append(family)


def mse(a, t):
    return F.mse_loss(a, torch.as_tensor(nt.to_numpy(t)).double())


def d(t):
    return torch.as_tensor(nt.to_numpy(t)).double()


# ----------------------------------------------------------------------------
def mlp():
    D, H, O, N = 6, 12, 5, 7
    r = Ref()
    strip = lambda n: n[len("layers."):]
    leaky = r.add("leaky", nt.randomize_(MLP(D, H, O, 3, lambda x: F.leaky_relu(x, 0.3))), strip)
    gel = r.add("gel", nt.randomize_(MLP(D, H, O, 2, F.gelu)), strip)
    tan = r.add("tan", nt.randomize_(MLP(D, H, O, 2, torch.tanh)), strip)
    fc1 = r.add("fc1", nt.randomize_(torch.nn.Linear(D, H)))
    fc2 = r.add("fc2", nt.randomize_(torch.nn.Linear(H, O, bias=False)))
    x = rand(N, D, scale=2.0)
    t = {k: rand(N, O) for k in ("ta", "tb", "tc", "td", "te")}
    out = nt.grad_run(os.path.join(GMODELS, "mlp_act.nn"), r.weights, dict(x=x, **t))
    xd = d(x)
    h = fc1(xd)
    loss = (mse(leaky(xd), t["ta"]) + mse(gel(xd), t["tb"]) + mse(tan(xd), t["tc"])
            + mse(fc2(torch.sigmoid(h)), t["td"])
            + mse(fc2(F.gelu(h, approximate="tanh") + F.relu(h) * 0.5), t["te"]))
    compare("MLP (LeakyReLU/GELU erf,tanh/tanh/sigmoid)", out, loss, r)


def residual_mlp():
    D, W, L, N = 5, 16, 4, 7
    r = Ref()
    stem = r.add("stem.fc", nt.randomize_(torch.nn.Linear(D, W)))
    hidden = [r.add("hidden.%d.fc" % k, nt.randomize_(torch.nn.Linear(W, W))) for k in range(L)]
    head = r.add("head", nt.randomize_(torch.nn.Linear(W, D)))
    x, y = rand(N, D), rand(N, D)
    out = nt.grad_run(os.path.join(PMODELS, "residual_mlp.nn"), r.weights, {"x": x, "y": y})
    h = F.leaky_relu(stem(d(x)), 0.3)
    for lin in hidden:
        h = h + F.leaky_relu(lin(h), 0.3)
    compare("residual MLP (dropout 0.3 off)", out, mse(head(h), y), r)


def elman():
    B, T, I, H = 4, 7, 5, 7
    r = Ref()
    rt = r.add("rt", nt.randomize_(torch.nn.RNN(I, H, 2, nonlinearity="tanh", batch_first=True)))
    rr = r.add("rr", nt.randomize_(torch.nn.RNN(I, H, 1, nonlinearity="relu", batch_first=True,
                                                bidirectional=True), scale=0.6))
    x, h0 = rand(B, T, I), rand(2, B, H)
    t1, t2, t3 = rand(B, T, H), rand(B, T, 2 * H), rand(2, B, H)
    out = nt.grad_run(os.path.join(GMODELS, "elman.nn"), r.weights,
                   {"x": x, "h0": h0, "t1": t1, "t2": t2, "t3": t3})
    yt, ht = rt(d(x), d(h0))
    yr, _ = rr(d(x))
    compare("Elman RNN (tanh 2 layers + h0; relu bidirectional)", out,
            mse(yt, t1) + mse(yr, t2) + mse(ht, t3), r)


def lstm2():
    B, T, I, H = 4, 7, 6, 8
    r = Ref()
    m = r.add("r", nt.randomize_(torch.nn.LSTM(I, H, 2, batch_first=True)))
    x, h0, c0 = rand(B, T, I), rand(2, B, H), rand(2, B, H)
    ty, tc = rand(B, T, H), rand(2, B, H)
    out = nt.grad_run(os.path.join(GMODELS, "lstm2.nn"), r.weights,
                   {"x": x, "h0": h0, "c0": c0, "ty": ty, "tc": tc})
    y, (hn, cn) = m(d(x), (d(h0), d(c0)))
    compare("LSTM 2 layers (h0, c0)", out, mse(y, ty) + mse(cn, tc), r)


def packed(m, x, lengths, h0=None):
    p = pack_padded_sequence(x, torch.tensor(lengths), batch_first=True, enforce_sorted=False)
    y, st = m(p, h0)
    y, _ = pad_packed_sequence(y, batch_first=True, total_length=x.shape[1])
    return y, st


def bilstm_len():
    B, T, I, H = 4, 7, 5, 6
    r = Ref()
    m = r.add("r", nt.randomize_(torch.nn.LSTM(I, H, 2, batch_first=True, bidirectional=True)))
    x, ty, th = rand(B, T, I), rand(B, T, 2 * H), rand(4, B, H)
    out = nt.grad_run(os.path.join(GMODELS, "bilstm_len.nn"), r.weights,
                   {"x": x, "lengths": torch.tensor(LENGTHS, dtype=torch.int32), "ty": ty, "th": th})
    y, (hn, _) = packed(m, d(x), LENGTHS)
    compare("bi-LSTM 2 layers, lengths %s" % LENGTHS, out, mse(y, ty) + mse(hn, th), r)


def gru_pt():
    B, T, I, H = 4, 7, 5, 6
    r = Ref()
    m = r.add("r", nt.randomize_(torch.nn.GRU(I, H, 2, batch_first=True, bidirectional=True)))
    x, h0, ty, th = rand(B, T, I), rand(4, B, H), rand(B, T, 2 * H), rand(4, B, H)
    out = nt.grad_run(os.path.join(GMODELS, "gru_pt.nn"), r.weights,
                   {"x": x, "lengths": torch.tensor(LENGTHS, dtype=torch.int32), "h0": h0,
                    "ty": ty, "th": th})
    y, hn = packed(m, d(x), LENGTHS, d(h0))
    compare("GRU PyTorch form, 2 layers bidirectional, lengths, h0", out,
            mse(y, ty) + mse(hn, th), r)


def gru_cho():
    B, T, I, H = 4, 7, 5, 6
    r = Ref()
    m = r.add("r", nt.randomize_(torch.nn.GRU(I, H, 2, batch_first=True, bidirectional=True)))
    m1 = r.add("r1", nt.randomize_(torch.nn.GRU(I, H, 1, batch_first=True)))
    x, h0 = rand(B, T, I), rand(4, B, H)
    ty, th, ty1 = rand(B, T, 2 * H), rand(4, B, H), rand(B, T, H)
    out = nt.grad_run(os.path.join(GMODELS, "gru_cho.nn"), r.weights,
                   {"x": x, "lengths": torch.tensor(LENGTHS, dtype=torch.int32), "h0": h0,
                    "ty": ty, "th": th, "ty1": ty1})
    p, p1 = dict(m.named_parameters()), dict(m1.named_parameters())
    torch.set_default_dtype(torch.float64)
    try:
        y, hn = cho_gru(p, d(x), LENGTHS, d(h0), 2, 2)
        y1, _ = cho_gru(p1, d(x), None, None, 1, 1)
    finally:
        torch.set_default_dtype(torch.float32)
    compare("GRU Cho 2014 (hand-written torch), 2 layers bidir + lengths + h0; 1 layer", out,
            mse(y, ty) + mse(hn, th) + mse(y1, ty1), r)


def pad_mask(B, T):
    m = torch.zeros(B, T, dtype=torch.bool)
    m[1, T - 4:] = True
    m[2, 3] = True
    return m


def encoder():
    B, T, D, A, FF = 3, 13, 16, 4, 32
    r = Ref()
    enc = r.add("enc", nt.randomize_(torch.nn.TransformerEncoderLayer(
        D, A, FF, dropout=0.1, activation="gelu", batch_first=True, norm_first=False)).eval())
    enc2 = r.add("enc2", nt.randomize_(torch.nn.TransformerEncoderLayer(
        D, 2, FF, dropout=0.1, activation="relu", batch_first=True, norm_first=False)).eval())
    x, pad, ty, ty2 = rand(B, T, D), pad_mask(B, T), rand(B, T, D), rand(B, T, D)
    out = nt.grad_run(os.path.join(GMODELS, "encoder_dense.nn"), r.weights,
                   {"x": x, "pad": pad, "ty": ty, "ty2": ty2})
    y = enc(d(x), src_key_padding_mask=pad)
    y2 = enc2(d(x))
    compare("encoder layer (post-LN; GELU + key padding; ReLU)", out,
            mse(y, ty) + mse(y2, ty2), r)


def dilated():
    B, T, D = 3, 13, 16
    r = Ref()
    ma = r.add("a", nt.randomize_(torch.nn.MultiheadAttention(D, 2, batch_first=True)))
    mb = r.add("b", nt.randomize_(torch.nn.MultiheadAttention(D, 4, batch_first=True)))
    mc = r.add("c", nt.randomize_(torch.nn.MultiheadAttention(D, 2, batch_first=True)))
    x, pad = rand(B, T, D), pad_mask(B, T)
    t = {k: rand(B, T, D) for k in ("ta", "tb", "tc")}
    out = nt.grad_run(os.path.join(GMODELS, "attn_dilated.nn"), r.weights, dict(x=x, pad=pad, **t))
    xd = d(x)
    mha = lambda m, allowed, kp=None: m(xd, xd, xd, need_weights=False, attn_mask=~allowed,
                                        key_padding_mask=kp)[0]
    ya = mha(ma, dilated_allowed(T, 4, 2, [0, 5]), pad)
    yb = mha(mb, dilated_allowed(T, 6, 1, []))
    yc = mha(mc, dilated_allowed(T, 5, 3, [2], causal=True))
    compare("dilated + global attention (masked nn.MultiheadAttention)", out,
            mse(ya, t["ta"]) + mse(yb, t["tb"]) + mse(yc, t["tc"]), r)


def lsh():
    B, T, D, A = 3, 13, 16, 2
    for nb in (4, 8):
        r = Ref()
        ws = {}
        for p in ("a", "c"):
            ws[p] = [r.leaf(p + ".in_proj_weight", rand(2 * D, D, scale=D ** -0.5)),
                     r.leaf(p + ".in_proj_bias", rand(2 * D, scale=0.1)),
                     r.leaf(p + ".out_proj.weight", rand(D, D, scale=D ** -0.5)),
                     r.leaf(p + ".out_proj.bias", rand(D, scale=0.1))]
        R, R2 = rand(3, D // A, nb // 2), rand(2, D // A, max(1, nb // 4))
        x, pad, ty, tyc = rand(B, T, D), pad_mask(B, T), rand(B, T, D), rand(B, T, D)
        out = nt.grad_run(os.path.join(GMODELS, "attn_lsh.nn"), r.weights,
                       {"x": x, "rot": R, "rot2": R2, "pad": pad, "ty": ty, "tyc": tyc})
        y = lsh_attention_layer(d(x), *ws["a"], A, d(R), 4)
        yc = lsh_attention_layer(d(x), *ws["c"], A, d(R2), 3, pad=pad, causal=True)
        compare("LSH attention, rotations input, %d buckets (+ causal, padding, chunk 3)" % nb,
                out, mse(y, ty) + mse(yc, tyc), r)


def reversible():
    B, T, D, FF = 3, 13, 8, 16
    r = Ref()
    blocks = []
    for k in range(2):
        mods = (nt.randomize_(torch.nn.LayerNorm(D)),
                nt.randomize_(torch.nn.MultiheadAttention(D, 2, batch_first=True)),
                nt.randomize_(torch.nn.LayerNorm(D)), nt.randomize_(torch.nn.Linear(D, FF)),
                nt.randomize_(torch.nn.Linear(FF, D)))
        for p, m in zip(("f.norm", "f.attn", "g.norm", "g.up", "g.down"), mods):
            r.add("blocks.%d.%s" % (k, p), m)
        blocks.append(mods)
    x, ty = rand(B, T, 2 * D), rand(B, T, 2 * D)
    out = nt.grad_run(os.path.join(GMODELS, "reversible.nn"), r.weights, {"x": x, "ty": ty})
    x1, x2 = d(x).split(D, -1)
    for fn, fa, gn, gu, gd in blocks:
        h = fn(x2)
        y1 = x1 + fa(h, h, h, need_weights=False)[0]
        y2 = x2 + gd(F.gelu(gu(gn(y1))))
        x1, x2 = y1, y2
    compare("reversible blocks x2 (LN+attention, LN+FFN)", out,
            mse(torch.cat([x1, x2], -1), ty), r)


def neural_ode():
    B, Fi, H, W = 5, 4, 6, 10
    r = Ref()
    enc = r.add("encode", nt.randomize_(torch.nn.Linear(Fi, H)))
    f1, f2 = r.add("f.fc1", nt.randomize_(torch.nn.Linear(H, W))), r.add(
        "f.fc2", nt.randomize_(torch.nn.Linear(W, H)))
    g1, g2 = r.add("g.fc1", nt.randomize_(torch.nn.Linear(H, W))), r.add(
        "g.fc2", nt.randomize_(torch.nn.Linear(W, H)))
    x = rand(B, Fi)
    t = {k: rand(B, H) for k in ("te", "tr", "tt")}
    out = nt.grad_run(os.path.join(GMODELS, "neural_ode.nn"), r.weights, dict(x=x, **t))
    f = lambda tm, z: f2(torch.tanh(f1(z)))
    g = lambda tm, z: g2(torch.tanh(g1(z))) - tm * z
    h0 = torch.tanh(enc(d(x)))
    loss = (mse(fixed(f, h0, 0.0, 1.0, 7, "euler"), t["te"])
            + mse(fixed(f, h0, 0.0, 1.0, 5, "rk4"), t["tr"])
            + mse(fixed(g, h0, 0.5, 2.0, 6, "rk4"), t["tt"]))
    compare("neural ODE (euler 7, rk4 5, rk4 f(t,z) 6; adjoint: false)", out, loss, r)


def ode_rnn():
    B, Fi, H, W, T = 5, 3, 5, 8, 6
    r = Ref()
    cell = r.add("cell", nt.randomize_(torch.nn.GRUCell(Fi, H)))
    f1, f2 = r.add("dynamics.fc1", nt.randomize_(torch.nn.Linear(H, W))), r.add(
        "dynamics.fc2", nt.randomize_(torch.nn.Linear(W, H)))
    head = r.add("head", nt.randomize_(torch.nn.Linear(H, 1)))
    x = rand(B, T, Fi)
    times = torch.cumsum(torch.rand(B, T) * 0.8 + 0.05, 1)
    ths, tp = rand(B, T, H), rand(B, 1)
    out = nt.grad_run(os.path.join(GMODELS, "ode_rnn.nn"), r.weights,
                   {"x": x, "times": times, "ths": ths, "tp": tp})
    f = lambda tm, z: f2(torch.tanh(f1(z)))
    xd, td = d(x), d(times)
    h = torch.zeros(B, H, dtype=torch.float64)
    hs = []
    for i in range(T):
        if i > 0:
            h = fixed(f, h, td[:, i - 1:i], td[:, i:i + 1], 3, "rk4")
        h = cell(xd[:, i], h)
        hs.append(h)
    hs = torch.stack(hs, 1)
    compare("ODE-RNN (GRU cell, rk4 3 steps, irregular times; adjoint: false)", out,
            mse(hs, ths) + mse(head(hs[:, -1]), tp), r)


def ode_rnn_t():
    """Dynamics reading each row's time t [B, 1]: f(t, z) = mlp(z) - t z."""
    B, Fi, H, W, T = 4, 3, 8, 16, 5
    r = Ref()
    cell = r.add("cell", nt.randomize_(torch.nn.GRUCell(Fi, H)))
    f1, f2 = r.add("dynamics.fc1", nt.randomize_(torch.nn.Linear(H, W))), r.add(
        "dynamics.fc2", nt.randomize_(torch.nn.Linear(W, H)))
    x = rand(B, T, Fi)
    times = torch.cumsum(torch.rand(B, T) * 0.8 + 0.05, 1) + torch.arange(B)[:, None]
    the, thr = rand(B, T, H), rand(B, T, H)
    out = nt.grad_run(os.path.join(GMODELS, "ode_rnn_t.nn"), r.weights,
                   {"x": x, "times": times, "the": the, "thr": thr})
    f = lambda tm, z: f2(torch.tanh(f1(z))) - tm * z
    xd, td = d(x), d(times)
    loss = 0
    for method, steps, target in (("euler", 4, the), ("rk4", 3, thr)):
        h = torch.zeros(B, H, dtype=torch.float64)
        hs = []
        for i in range(T):
            if i > 0:
                h = fixed(f, h, td[:, i - 1:i], td[:, i:i + 1], steps, method)
            h = cell(xd[:, i], h)
            hs.append(h)
        loss = loss + mse(torch.stack(hs, 1), target)
    compare("ODE-RNN, dynamics reading t [B, 1] (GRU cell, euler 4 + rk4 3 steps)", out,
            loss, r)


def ce():
    B, T, V, E = 5, 6, 20, 8
    r = Ref()
    emb = r.add("embed", torch.nn.Embedding(V, E))
    head = r.add("head", nt.randomize_(torch.nn.Linear(E, V), scale=1.0))
    tokens = torch.randint(0, V, (B, T), dtype=torch.int32)
    target = torch.randint(0, V, (B, T), dtype=torch.int32)
    target[0, 2:5] = -100
    target[2, -1] = -100
    out = nt.grad_run(os.path.join(PMODELS, "ce_loss.nn"), r.weights,
                   {"tokens": tokens, "target": target})
    logits = head(torch.tanh(emb(tokens.long())))
    compare("embedding + cross-entropy (ignore_index -100)", out,
            F.cross_entropy(logits.reshape(-1, V), target.reshape(-1).long(), ignore_index=-100), r)


def bce():
    B, D, C = 9, 6, 5
    labels = (torch.rand(B, C) < 0.4).float()
    labels[0, 0] = 0.3
    x = rand(B, D, scale=2.0)
    pw = torch.rand(C) * 3 + 0.2
    for name, extra in (("bce_loss", {}), ("bce_posw", {"pw": pw})):
        r = Ref()
        head = r.add("head", nt.randomize_(torch.nn.Linear(D, C), scale=1.5))
        out = nt.grad_run(os.path.join(PMODELS, name + ".nn"), r.weights,
                       dict(x=x, labels=labels, **extra))
        kw = {"pos_weight": d(pw)} if extra else {}
        compare("BCE multi-label%s" % (" + pos_weight" if extra else ""), out,
                F.binary_cross_entropy_with_logits(head(d(x)), d(labels), **kw), r)


CASES = {"mlp": mlp, "residual_mlp": residual_mlp, "elman": elman, "lstm2": lstm2,
         "bilstm_len": bilstm_len, "gru_pt": gru_pt, "gru_cho": gru_cho, "encoder": encoder,
         "dilated": dilated, "lsh": lsh, "reversible": reversible, "neural_ode": neural_ode,
         "ode_rnn": ode_rnn, "ode_rnn_t": ode_rnn_t, "ce": ce, "bce": bce}


if __name__ == "__main__":
    import traceback
    nt.NNCC = sys.argv[1]
    names = sys.argv[2:] or list(CASES)
    for n in names:
        try:
            CASES[n]()
        except Exception as ex:
            traceback.print_exc(file=sys.stdout)
            print("FAIL %s raised %s: %s" % (n, type(ex).__name__, str(ex)[:2000]))
            FAILED.append(n)
        sys.stdout.flush()
    print("\n| family | tensors | worst err | worst tensor | rel (info) |")
    print("|---|---|---|---|---|")
    for fam, e, t, rel, k in RESULTS:
        print("| %s | %d | %.1e | `%s` | %.1e |" % (fam, k, e, t, rel))
    if FAILED:
        print("FAILED: " + ", ".join(FAILED))
        sys.exit(1)
    print("ALL PASSED")
