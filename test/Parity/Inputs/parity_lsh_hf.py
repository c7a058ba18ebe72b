"""nncc's LSH attention under Hugging Face's conventions (the default of
kind: lsh) against transformers' LSHSelfAttention (ReformerModel's), same
weights and the same rotations: outputs in float64 and float32, and the
gradients of an MSE loss with respect to the projections and to the input
against torch.autograd through HF's module (its own backward: ReverseSort).

Layers of models/lsh_hf.nn: (name, hashes, chunk, causal, key padding). Each
T below is a case: T > chunk is HF's chunked path (all rounds in one sorted
sequence, one chunk of look-back with wrap-around across rounds), T <= chunk
its standard path (plain attention over all T). HF's rotations are what its
_hash_vectors draws from hash_seed, fed to nncc unchanged
[heads, dh, hashes, buckets / 2]. Padding: batch row 1 has a padded tail
and a hole (HF's attention_mask 0 there; nncc's pad True); without it HF
gets attention_mask=None.

f32: nncc's float32 against HF's float64 on the same float32 inputs,
weights and buckets (those of HF's float32 run; see case()).

Metric: max|nncc - hf| / max|hf| per tensor; tolerances 1e-10 (f64) and
1e-5 (f32), outputs, loss and gradients alike."""
import os
import sys

import numpy as np
import torch
from transformers import ReformerConfig
from transformers.models.reformer.modeling_reformer import LSHSelfAttention

import nncc_testing as nt

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "models", "lsh_hf.nn")
B, D, A, DH, MAXLEN = 2, 16, 2, 8, 24
LAYERS = [("a", 2, 4, False, True), ("b", 2, 4, True, True), ("c", 3, 3, False, False),
          ("d", 1, 6, True, True), ("e", 4, 12, False, True), ("f", 4, 12, True, False)]
ROT = {1: "r1", 2: "r2", 3: "r3", 4: "r4"}
TOL = {"f64": 1e-10, "f32": 1e-5}
FAILED = []

torch.set_num_threads(1)
g = torch.Generator().manual_seed(5)


def randn(*shape, scale=1.0):
    return torch.randn(*shape, generator=g, dtype=torch.float64) * scale


def rel(got, ref):
    got = np.asarray(got, dtype=np.float64)
    ref = ref.detach().double().numpy()
    if got.shape != ref.shape:
        return float("inf")
    return float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-300))


def check(name, got, ref, tol):
    e = rel(got, ref)
    ok = e <= tol
    print("%s %s rel=%.2e tol=%.0e" % ("PASS" if ok else "FAIL", name, e, tol))
    if not ok:
        FAILED.append(name)


def hf_layer(hashes, chunk, causal, nb, dtype, wqk, wv):
    cfg = ReformerConfig(hidden_size=D, num_attention_heads=A, attention_head_size=DH,
                         num_hashes=hashes, num_buckets=nb, lsh_attn_chunk_length=chunk,
                         lsh_num_chunks_before=1, lsh_num_chunks_after=0, is_decoder=causal,
                         hash_seed=11 * hashes + nb, lsh_attention_probs_dropout_prob=0.0,
                         attn_layers=["lsh"])
    m = LSHSelfAttention(cfg).to(dtype).eval()
    with torch.no_grad():
        m.query_key.weight.copy_(wqk)
        m.value.weight.copy_(wv)
    return m, cfg.hash_seed


def hf_rotations(seed, hashes, nb, dtype):
    """What HF's _hash_vectors draws: torch.manual_seed(hash_seed), then
    torch.randn([heads, dh, hashes, buckets / 2]) in the vectors' dtype."""
    torch.manual_seed(seed)
    return torch.randn((A, DH, hashes, nb // 2), dtype=dtype)


def hf_run(T, pad, padded, dtype, w, rots, buckets=None):
    """HF's layers of LAYERS on x + pos (w: f64 tensors, cast to dtype), the
    loss and its gradients; `buckets` (per layer) replaces HF's hashing."""
    pos = w["pos"].to(dtype).clone().requires_grad_()
    h = w["x"].to(dtype) + pos[:T]
    loss, ys, grads, bks = 0, {}, {}, {}
    for name, hashes, chunk, causal, masked in LAYERS:
        wqk, wv, wo = (w[name + k].to(dtype) for k in ("qk", "v", "o"))
        m, seed = hf_layer(hashes, chunk, causal, w["nb"], dtype, wqk, wv)
        rots[name] = seed
        wo = wo.clone().requires_grad_()
        am = (~pad).long() if masked and padded else None
        r = m(h, attention_mask=am, buckets=None if buckets is None else buckets[name])
        bks[name] = r.buckets
        ys[name] = r.hidden_states @ wo.t()
        grads[name] = (m, wo)
        loss = loss + torch.nn.functional.mse_loss(ys[name], w["t"].to(dtype))
    loss.backward()
    g = {"p.weight": pos.grad}
    for name, (m, wo) in grads.items():
        g[name + ".in_proj_weight"] = torch.cat([m.query_key.weight.grad, m.value.weight.grad])
        g[name + ".out_proj.weight"] = wo.grad
    return ys, loss.detach(), g, bks


def case(T, nb, padded, prec):
    """f64: nncc vs HF in f64. f32: nncc's f32 vs HF's f64 on the same f32
    inputs, weights and buckets (HF's f32 run's): HF's own f32 arithmetic
    is off by up to ~4e-3 where a causal query sees only itself in every
    round (its round weights exp(lse_r - logsumexp) of lse_r ~ -1e5 + log n
    rounded to f32's 8e-3 spacing there, not renormalised), printed as INFO."""
    dtype = torch.float64 if prec == "f64" else torch.float32
    npdt = np.float64 if prec == "f64" else np.float32
    rnd = (lambda t: t) if prec == "f64" else (lambda t: t.float().double())
    w = {"x": rnd(randn(B, T, D)), "t": rnd(randn(B, T, D)),
         "pos": rnd(randn(MAXLEN, D, scale=0.1)), "nb": nb}
    for name, *_ in LAYERS:
        for k in ("qk", "v", "o"):
            w[name + k] = rnd(randn(D, D, scale=D ** -0.5))
    pad = torch.zeros(B, T, dtype=torch.bool)
    if padded:
        pad[1, T - 3:] = True
        pad[1, 1] = True
    seeds = {}
    ys, loss, grads, bks = hf_run(T, pad, padded, dtype, w, seeds)
    if prec == "f32":
        ys32, loss32 = ys, loss
        ys, loss, grads, _ = hf_run(T, pad, padded, torch.float64, w, {}, buckets=bks)
    weights = {"p.weight": w["pos"].numpy().astype(npdt)}
    inputs = {"x": w["x"].numpy().astype(npdt), "t": w["t"].numpy().astype(npdt),
              "pad": pad.numpy()}
    for name, hashes, chunk, causal, masked in LAYERS:
        inputs[ROT[hashes]] = hf_rotations(seeds[name], hashes, nb, dtype).numpy().astype(npdt)
        weights[name + ".in_proj_weight"] = torch.cat([w[name + "qk"], w[name + "v"]]).numpy() \
            .astype(npdt)
        weights[name + ".out_proj.weight"] = w[name + "o"].numpy().astype(npdt)
    out = nt.grad_run(MODEL, weights, inputs, precision=prec)
    tag = "T%d buckets%d %s %s" % (T, nb, "padded" if padded else "unpadded", prec)
    tol = TOL[prec]
    for name, hashes, chunk, causal, masked in LAYERS:
        what = "%s(hashes %d, chunk %d%s%s)" % (name, hashes, chunk, ", causal" if causal else "",
                                                ", mask" if masked and padded else "")
        check("output %s %s" % (what, tag), out["y" + name], ys[name], tol)
        if prec == "f32":
            print("INFO HF's own f32 vs its f64: %s %s rel=%.2e" % (
                what, tag, rel(ys32[name].detach().double().numpy(), ys[name])))
    gtol = tol
    check("loss %s" % tag, out["loss"], loss, tol)
    check("grad input (via p.weight) %s" % tag, out["grad.p.weight"], grads["p.weight"], gtol)
    for name, *_ in LAYERS:
        for k in ("in_proj_weight", "out_proj.weight"):
            check("grad %s.%s %s" % (name, k, tag), out["grad.%s.%s" % (name, k)],
                  grads["%s.%s" % (name, k)], gtol)


def main():
    for prec in ("f64", "f32"):
        for T, nb, padded in ((12, 4, False), (12, 4, True), (24, 8, True), (6, 2, False),
                              (6, 4, True)):
            case(T, nb, padded, prec)
    if FAILED:
        print("%d FAILED" % len(FAILED))
        sys.exit(1)
    print("ALL PASSED")


if __name__ == "__main__":
    main()
