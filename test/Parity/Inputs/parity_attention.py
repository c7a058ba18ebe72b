"""Encoder layer vs nn.TransformerEncoderLayer; dilated + global attention
vs nn.MultiheadAttention under the explicit Longformer mask; LSH attention
vs dense attention under the mask built from the same hashes, sort and
chunks (Reformer); reversible blocks vs y1 = x1 + F(x2), y2 = x2 + G(y1)."""
import torch
import torch.nn.functional as F
from common import model, nt, rand, sd
from nncc_testing.refs import dilated_allowed, lsh_attention_layer

B, T = 3, 13


def pad_mask():
    m = torch.zeros(B, T, dtype=torch.bool)
    m[1, T - 4:] = True   # a padded tail
    m[2, 3] = True        # and a hole
    return m


def encoder_dense():
    D, A, FF = 16, 4, 32
    enc = nt.randomize_(torch.nn.TransformerEncoderLayer(
        D, A, FF, dropout=0.1, activation="gelu", batch_first=True, norm_first=False)).eval()
    enc2 = nt.randomize_(torch.nn.TransformerEncoderLayer(
        D, 2, FF, dropout=0.1, activation="relu", batch_first=True, norm_first=False)).eval()
    x, pad = rand(B, T, D), pad_mask()
    out = model("encoder_dense").run(dict(sd(enc, "enc"), **sd(enc2, "enc2")),
                                     {"x": x, "pad": pad})
    # grad mode on: torch's fast path (which zeroes padded rows) is not taken
    y = enc(x, src_key_padding_mask=pad).detach()
    y2 = enc2(x).detach()
    nt.check("encoder_layer gelu + key padding vs nn.TransformerEncoderLayer", out["y"], y)
    nt.check("encoder_layer relu vs nn.TransformerEncoderLayer", out["y2"], y2)


def attention_variants():
    D, Tn = 16, 70  # several 32-query / 64-key tiles
    enc = nt.randomize_(torch.nn.TransformerEncoderLayer(
        D, 2, 24, activation="gelu", batch_first=True, norm_first=False)).eval()
    ca = nt.randomize_(torch.nn.MultiheadAttention(D, 4, batch_first=True))
    nb = nt.randomize_(torch.nn.MultiheadAttention(D, 2, bias=False, batch_first=True))
    x = rand(2, Tn, D)
    pad = torch.zeros(2, Tn, dtype=torch.bool)
    pad[1, 50:] = True
    pad[0, 7] = True
    w = dict(sd(enc, "enc"), **sd(ca, "ca"), **sd(nb, "nb"))
    out = model("attention_variants").run(w, {"x": x, "pad": pad})
    allowed = dilated_allowed(Tn, 8, 2, [0, 3])
    y = enc(x, src_mask=~allowed, src_key_padding_mask=pad).detach()
    nt.check("encoder_layer dilated w8 d2 global[0,3] + padding vs masked TransformerEncoderLayer",
             out["y"], y)
    causal = torch.triu(torch.ones(Tn, Tn, dtype=torch.bool), 1)
    nt.check("dense causal T70 vs nn.MultiheadAttention", out["yc"],
             masked_mha(ca, x, ~causal))
    nt.check("dense without biases + padding T70 vs nn.MultiheadAttention", out["yn"],
             masked_mha(nb, x, torch.ones(Tn, Tn, dtype=torch.bool), pad))


def masked_mha(m, x, allowed, pad=None):
    with torch.no_grad():
        y, _ = m(x, x, x, need_weights=False, attn_mask=~allowed, key_padding_mask=pad)
    return y


def attn_dilated():
    D = 16
    ma = nt.randomize_(torch.nn.MultiheadAttention(D, 2, batch_first=True))
    mb = nt.randomize_(torch.nn.MultiheadAttention(D, 4, batch_first=True))
    mc = nt.randomize_(torch.nn.MultiheadAttention(D, 2, batch_first=True))
    x, pad = rand(B, T, D), pad_mask()
    w = dict(sd(ma, "a"), **sd(mb, "b"), **sd(mc, "c"))
    out = model("attn_dilated").run(w, {"x": x, "pad": pad})
    nt.check("dilated w4 d2 global[0,5] + padding vs masked nn.MultiheadAttention", out["ya"],
             masked_mha(ma, x, dilated_allowed(T, 4, 2, [0, 5]), pad))
    nt.check("dilated w6 d1 vs masked nn.MultiheadAttention", out["yb"],
             masked_mha(mb, x, dilated_allowed(T, 6, 1, [])))
    nt.check("dilated w5 d3 global[2] causal vs masked nn.MultiheadAttention", out["yc"],
             masked_mha(mc, x, dilated_allowed(T, 5, 3, [2], causal=True)))


def attn_lsh():
    D, A = 16, 2
    x = rand(B, T, D)
    mk = lambda: (rand(2 * D, D, scale=D ** -0.5), rand(2 * D, scale=0.1),
                  rand(D, D, scale=D ** -0.5), rand(D, scale=0.1))
    wa, wc = mk(), mk()
    w = {}
    for p, ws in (("a", wa), ("c", wc)):
        w.update({p + ".in_proj_weight": ws[0], p + ".in_proj_bias": ws[1],
                  p + ".out_proj.weight": ws[2], p + ".out_proj.bias": ws[3]})
    pad = pad_mask()
    mdl = model("attn_lsh")
    for nb in (2, 4, 8):
        R, R2 = rand(3, D // A, nb // 2), rand(2, D // A, max(1, nb // 4))
        out = mdl.run(w, {"x": x, "rot": R, "rot2": R2, "pad": pad})
        ref = lsh_attention_layer(x.double(), *[t.double() for t in wa], A, R.double(), 4)
        nt.check("lsh hashes3 chunk4 buckets%d vs masked dense (Reformer)" % nb, out["y"], ref)
        refc = lsh_attention_layer(x.double(), *[t.double() for t in wc], A, R2.double(), 3,
                                   pad=pad, causal=True)
        nt.check("lsh hashes2 chunk3 buckets%d causal + padding vs masked dense (Reformer)"
                 % (2 * R2.shape[-1]), out["yc"], refc)


def attn_lsh_onechunk():
    """T <= chunk: one chunk per round, rotations do not matter (the model
    draws its own); every query attends to all other keys (self only when
    nothing else is admissible), identical in every round."""
    D, A = 16, 2
    x = rand(B, 8, D)
    in_w, in_b = rand(2 * D, D, scale=D ** -0.5), rand(2 * D, scale=0.1)
    out_w, out_b = rand(D, D, scale=D ** -0.5), rand(D, scale=0.1)
    w = {"a.in_proj_weight": in_w, "a.in_proj_bias": in_b, "a.out_proj.weight": out_w,
         "a.out_proj.bias": out_b}
    mdl = model("attn_lsh_onechunk")
    for Tn in (8, 5):
        xt = x[:, :Tn].contiguous()
        pad = torch.zeros(B, Tn, dtype=torch.bool)
        pad[1, Tn - 2:] = True
        out = mdl.run(w, {"x": xt, "pad": pad})
        R = torch.randn(3, D // A, 1).double()  # any rotations: one chunk
        ref = lsh_attention_layer(xt.double(), in_w.double(), in_b.double(), out_w.double(),
                            out_b.double(), A, R, 8)
        nt.check("lsh one chunk T%d (all keys but self) vs masked dense" % Tn, out["y"], ref)
        refp = lsh_attention_layer(xt.double(), in_w.double(), in_b.double(), out_w.double(),
                             out_b.double(), A, R, 8, pad=pad)
        nt.check("lsh one chunk T%d + key padding vs masked dense" % Tn, out["yp"], refp)


def lsh_causal():
    """The issue-8 reproduction: causal LSH, 2 rounds of 2 buckets, chunk 2,
    identity projections. Query 1 has no other admissible key in round 0
    but key 0 in round 1, so Reformer gives y[1] = v[0] = (-1, 1) (before
    the fix nncc normalised round 0 over the self score: (0.762, -0.762)).
    yp: not causal, key 2 padded: round 0 offers query 1 nothing, round 1
    keys 0 and 3."""
    I2 = torch.eye(2)
    w = {}
    for p in ("a", "p"):
        w.update({p + ".in_proj_weight": torch.cat([I2, I2]), p + ".in_proj_bias": torch.zeros(4),
                  p + ".out_proj.weight": I2.clone(), p + ".out_proj.bias": torch.zeros(2)})
    x = torch.tensor([[[-1.0, 1.0], [1.0, -1.0], [1.0, 2.0], [2.0, 1.0]]])
    rot = torch.tensor([[[1.0], [0.0]], [[0.0], [1.0]]])
    pad = torch.tensor([[False, False, True, False]])
    out = model("lsh_causal").run(w, {"x": x, "rot": rot, "pad": pad})
    nt.check("lsh causal reproduction y[1] = (-1, 1)", out["y"][0, 1], torch.tensor([-1.0, 1.0]))
    ws = (torch.cat([I2, I2]).double(), torch.zeros(4).double(), I2.double(),
          torch.zeros(2).double())
    nt.check("lsh causal reproduction vs Reformer reference", out["y"],
             lsh_attention_layer(x.double(), *ws, 1, rot.double(), 2, causal=True))
    nt.check("lsh padded reproduction vs Reformer reference", out["yp"],
             lsh_attention_layer(x.double(), *ws, 1, rot.double(), 2, pad=pad))


def reversible():
    D, FF = 8, 16
    blocks = []
    w = {}
    for k in range(2):
        fn, fa = nt.randomize_(torch.nn.LayerNorm(D)), nt.randomize_(
            torch.nn.MultiheadAttention(D, 2, batch_first=True))
        gn, gu, gd = (nt.randomize_(torch.nn.LayerNorm(D)), nt.randomize_(torch.nn.Linear(D, FF)),
                      nt.randomize_(torch.nn.Linear(FF, D)))
        for p, m in (("f.norm", fn), ("f.attn", fa), ("g.norm", gn), ("g.up", gu), ("g.down", gd)):
            w.update(sd(m, "blocks.%d.%s" % (k, p)))
        blocks.append((fn, fa, gn, gu, gd))
    x = rand(B, T, 2 * D)
    out = model("reversible").run(w, {"x": x})
    with torch.no_grad():
        x1, x2 = x.split(D, -1)
        for fn, fa, gn, gu, gd in blocks:
            h = fn(x2)
            y1 = x1 + fa(h, h, h, need_weights=False)[0]
            y2 = x2 + gd(F.gelu(gu(gn(y1))))
            x1, x2 = y1, y2
        ref = torch.cat([x1, x2], -1)
    nt.check("reversible x2 vs y1 = x1 + F(x2), y2 = x2 + G(y1)", out["y"], ref)


if __name__ == "__main__":
    nt.run_cases({"encoder_dense": encoder_dense, "attn_dilated": attn_dilated, "attn_lsh": attn_lsh,
                  "attn_lsh_onechunk": attn_lsh_onechunk, "lsh_causal": lsh_causal,
                  "attention_variants": attention_variants,
                  "reversible": reversible})
