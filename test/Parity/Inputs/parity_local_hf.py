"""nncc's `kind: local` attention against transformers' LocalSelfAttention
(ReformerModel's "local" layers) with the same weights: outputs in float64
and float32, and the gradients of an MSE loss with respect to the
projections and to the input against torch.autograd through HF's module.

Layers of models/local_hf.nn: (name, chunk, before, after, causal, key
padding). T 24 and 12 cut into chunks (look-back/ahead wrapping around the
sequence; HF's module asks for multiples of the chunk); at T 12 the
chunk-12 layer takes HF's standard path. Padding: batch
row 1 has a padded tail and a hole (HF's attention_mask 0 there).

Metric: max|nncc - hf| / max|hf| per tensor; tolerances 1e-10 (f64) and
1e-5 (f32, against HF in f32 on the same values)."""
import os
import sys

import numpy as np
import torch
from transformers import ReformerConfig
from transformers.models.reformer.modeling_reformer import LocalSelfAttention

import nncc_testing as nt

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "models", "local_hf.nn")
B, D, A, MAXLEN = 2, 16, 2, 24
LAYERS = [("a", 4, 1, 0, False, True), ("b", 4, 1, 0, True, True), ("c", 3, 2, 1, False, False),
          ("d", 12, 0, 0, True, True)]
TOL = {"f64": 1e-10, "f32": 1e-5}
FAILED = []

torch.set_num_threads(1)
gen = torch.Generator().manual_seed(9)


def check(name, got, ref, tol):
    got = np.asarray(got, dtype=np.float64)
    ref = ref.detach().double().numpy()
    e = float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-300)) \
        if got.shape == ref.shape else float("inf")
    ok = e <= tol
    print("%s %s rel=%.2e tol=%.0e" % ("PASS" if ok else "FAIL", name, e, tol))
    if not ok:
        FAILED.append(name)


def hf_layer(chunk, before, after, causal, dtype, w):
    cfg = ReformerConfig(hidden_size=D, num_attention_heads=A, attention_head_size=D // A,
                         local_attn_chunk_length=chunk, local_num_chunks_before=before,
                         local_num_chunks_after=after, is_decoder=causal,
                         local_attention_probs_dropout_prob=0.0, attn_layers=["local"])
    m = LocalSelfAttention(cfg).to(dtype).eval()
    with torch.no_grad():
        for lin, part in zip((m.query, m.key, m.value), w.split(D)):
            lin.weight.copy_(part)
    return m


def case(T, padded, prec):
    dtype = torch.float64 if prec == "f64" else torch.float32
    npdt = np.float64 if prec == "f64" else np.float32
    randn = lambda *s, scale=1.0: (torch.randn(*s, generator=gen, dtype=torch.float64) *
                                   scale).to(dtype)
    x, t, pos = randn(B, T, D), randn(B, T, D), randn(MAXLEN, D, scale=0.1).requires_grad_()
    pad = torch.zeros(B, T, dtype=torch.bool)
    if padded:
        pad[1, T - 3:] = True
        pad[1, 1] = True
    h = x + pos[:T]
    loss, ys, grads, weights = 0, {}, {}, {}
    for name, chunk, before, after, causal, masked in LAYERS:
        w_in = randn(3 * D, D, scale=D ** -0.5)
        w_out = randn(D, D, scale=D ** -0.5).requires_grad_()
        m = hf_layer(chunk, before, after, causal, dtype, w_in)
        am = (~pad).long() if masked and padded else None
        ys[name] = m(h, attention_mask=am).hidden_states @ w_out.t()
        grads[name] = (m, w_out)
        weights[name + ".in_proj_weight"] = w_in.numpy().astype(npdt)
        weights[name + ".out_proj.weight"] = w_out.detach().numpy().astype(npdt)
        loss = loss + torch.nn.functional.mse_loss(ys[name], t)
    loss.backward()
    weights["p.weight"] = pos.detach().numpy().astype(npdt)
    out = nt.grad_run(MODEL, weights, {"x": x.numpy().astype(npdt),
                                       "t": t.numpy().astype(npdt), "pad": pad.numpy()},
                      precision=prec)
    tag = "T%d %s %s" % (T, "padded" if padded else "unpadded", prec)
    tol = TOL[prec]
    for name, chunk, before, after, causal, masked in LAYERS:
        what = "%s(chunk %d, before %d, after %d%s%s)" % (
            name, chunk, before, after, ", causal" if causal else "",
            ", mask" if masked and padded else "")
        check("output %s %s" % (what, tag), out["y" + name], ys[name], tol)
        m, w_out = grads[name]
        dw_in = torch.cat([m.query.weight.grad, m.key.weight.grad, m.value.weight.grad])
        check("grad %s.in_proj_weight %s" % (name, tag), out["grad.%s.in_proj_weight" % name],
              dw_in, tol)
        check("grad %s.out_proj.weight %s" % (name, tag), out["grad.%s.out_proj.weight" % name],
              w_out.grad, tol)
    check("loss %s" % tag, out["loss"], loss, tol)
    check("grad input (via p.weight) %s" % tag, out["grad.p.weight"], pos.grad, tol)


def main():
    for prec in ("f64", "f32"):
        for T, padded in ((24, True), (24, False), (12, True)):
            case(T, padded, prec)
    if FAILED:
        print("%d FAILED" % len(FAILED))
        sys.exit(1)
    print("ALL PASSED")


if __name__ == "__main__":
    main()
