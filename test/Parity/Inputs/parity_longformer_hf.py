"""nncc's dilated attention in Hugging Face's convention (kind:
dilated(convention: hf)) against transformers' LongformerSelfAttention
(LongformerModel's), same weights: outputs in float64 and float32, and the
gradients of an MSE loss with respect to the six projections (q, k, v and
the global queries' query_global, key_global, value_global, stacked as
nncc's in_proj_weight [6D, D]), the out-projection and the input, against
torch.autograd through HF's module.

Layers of models/longformer_hf.nn: (name, attention_window, key padding).
Global tokens differ per example (HF's global_attention_mask; nncc's
global_mask), one of them on a padded position (neither makes it global),
and a case without any. HF's module wants T a multiple of its window; the
model-level import test (test/HuggingFace) covers other lengths through
LongformerModel's own padding.

HF's module computes its softmax in float32 whatever the input's dtype (a
1e-7 error in float64), and rows whose every score is -inf (a padded query
whose whole window is padding; the unused slots of a batch row with fewer
global tokens than another) give NaN there, which HF zeroes in the forward
but whose NaN reaches its backward. The reference therefore runs HF's module
with a softmax that stays in float64 and gives zero for such a row (the
forward values HF itself produces); `hf_own` reports the distance to HF's
unpatched float64 output as INFO.

f32: nncc's float32 against HF's float64 on the same float32 values.
Metric: max|nncc - hf| / max|hf| per tensor; tolerances 1e-10 (f64) and
1e-5 (f32), outputs, loss and gradients alike."""
import os
import sys

import numpy as np
import torch
from transformers import LongformerConfig
from transformers.models.longformer.modeling_longformer import LongformerSelfAttention

import nncc_testing as nt
from nncc_testing.hf_softmax import softmax_f64, torch_softmax

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "models", "longformer_hf.nn")
B, D, A, MAXLEN = 2, 16, 2, 48
LAYERS = [("a", 4, True), ("b", 12, True), ("c", 8, False)]
PROJ = ("query", "key", "value", "query_global", "key_global", "value_global")
TOL = {"f64": 1e-10, "f32": 1e-5}
FAILED = []

torch.set_num_threads(1)
g = torch.Generator().manual_seed(7)


def randn(*shape, scale=1.0):
    return torch.randn(*shape, generator=g, dtype=torch.float64) * scale


def check(name, got, ref, tol):
    got = np.asarray(got, dtype=np.float64)
    ref = ref.detach().double().numpy()
    if np.isnan(got).any() or np.isnan(ref).any():
        print("NAN %s nncc %d hf %d" % (name, np.isnan(got).sum(), np.isnan(ref).sum()))
    e = float("inf") if got.shape != ref.shape else \
        float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-300))
    ok = e <= tol
    print("%s %s rel=%.2e tol=%.0e" % ("PASS" if ok else "FAIL", name, e, tol))
    if not ok:
        FAILED.append(name)


def hf_layer(window, w):
    cfg = LongformerConfig(hidden_size=D, num_attention_heads=A, attention_window=[window],
                           attention_probs_dropout_prob=0.0)
    m = LongformerSelfAttention(cfg, layer_id=0).double().eval()
    with torch.no_grad():
        for i, name in enumerate(PROJ):
            getattr(m, name).weight.copy_(w["in_w"][i * D:(i + 1) * D])
            getattr(m, name).bias.copy_(w["in_b"][i * D:(i + 1) * D])
    return m


def grad_of(param):
    """A parameter's gradient; zero for one HF never used (the global
    projections without global tokens)."""
    return param.grad if param.grad is not None else torch.zeros_like(param)


def hf_run(T, pad, glob, padded, w, patched=True):
    """HF's layers on x + pos, the loss and the gradients (float64), with
    softmax_f64 in HF's module (or, patched=False, HF's own softmax)."""
    torch.nn.functional.softmax = softmax_f64 if patched else torch_softmax
    try:
        return hf_layers(T, pad, glob, padded, w)
    finally:
        torch.nn.functional.softmax = torch_softmax


def hf_layers(T, pad, glob, padded, w):
    pos = w["pos"].clone().requires_grad_()
    h = w["x"] + pos[:T]
    loss, ys, mods = 0, {}, {}
    for name, window, masked in LAYERS:
        lw = w[name]
        m = hf_layer(window, lw)
        wo, bo = lw["out_w"].clone().requires_grad_(), lw["out_b"].clone().requires_grad_()
        keep = ~pad if masked and padded else torch.ones_like(pad)
        # LongformerModel's mask: 0 padding, 1 local, 2 global -> -1e4, 0, +1e4.
        merged = keep.long() * (glob.long() + 1)
        ext = torch.where(merged == 0, -10000.0, torch.where(merged == 2, 10000.0, 0.0)).double()
        is_global = merged == 2
        out = m(h, attention_mask=ext, is_index_masked=merged == 0,
                is_index_global_attn=is_global, is_global_attn=bool(is_global.any()))[0]
        ys[name] = out @ wo.t() + bo
        mods[name] = (m, wo, bo)
        loss = loss + torch.nn.functional.mse_loss(ys[name], w["t"])
    loss.backward()
    grads = {"p.weight": pos.grad}
    for name, (m, wo, bo) in mods.items():
        grads[name + ".in_proj_weight"] = torch.cat([grad_of(getattr(m, p).weight) for p in PROJ])
        grads[name + ".in_proj_bias"] = torch.cat([grad_of(getattr(m, p).bias) for p in PROJ])
        grads[name + ".out_proj.weight"] = wo.grad
        grads[name + ".out_proj.bias"] = bo.grad
    return ys, loss.detach(), grads


def case(T, padded, globals_, prec):
    npdt = np.float64 if prec == "f64" else np.float32
    rnd = (lambda t: t) if prec == "f64" else (lambda t: t.float().double())
    w = {"x": rnd(randn(B, T, D)), "t": rnd(randn(B, T, D)),
         "pos": rnd(randn(MAXLEN, D, scale=0.1))}
    for name, *_ in LAYERS:
        w[name] = {"in_w": rnd(randn(6 * D, D, scale=D ** -0.5)), "in_b": rnd(randn(6 * D, scale=0.1)),
                   "out_w": rnd(randn(D, D, scale=D ** -0.5)), "out_b": rnd(randn(D, scale=0.1))}
    pad = torch.zeros(B, T, dtype=torch.bool)
    if padded:
        pad[1, T - 3:] = True
        pad[1, 2] = True
    glob = torch.zeros(B, T, dtype=torch.bool)
    if globals_:
        glob[0, 0] = glob[0, 5] = True
        glob[1, 3] = True
        glob[1, T - 1] = True  # padded in the padded cases: not global there
    ys, loss, grads = hf_run(T, pad, glob, padded, w)
    hf_own, _, _ = hf_run(T, pad, glob, padded, w, patched=False)
    weights = {"p.weight": w["pos"].numpy().astype(npdt)}
    for name, *_ in LAYERS:
        lw = w[name]
        weights[name + ".in_proj_weight"] = lw["in_w"].numpy().astype(npdt)
        weights[name + ".in_proj_bias"] = lw["in_b"].numpy().astype(npdt)
        weights[name + ".out_proj.weight"] = lw["out_w"].numpy().astype(npdt)
        weights[name + ".out_proj.bias"] = lw["out_b"].numpy().astype(npdt)
    inputs = {"x": w["x"].numpy().astype(npdt), "t": w["t"].numpy().astype(npdt),
              "pad": pad.numpy(), "glob": glob.numpy()}
    out = nt.grad_run(MODEL, weights, inputs, precision=prec)
    tag = "T%d %s %s %s" % (T, "padded" if padded else "unpadded",
                            "globals" if globals_ else "no-globals", prec)
    tol = TOL[prec]
    for name, window, masked in LAYERS:
        what = "%s(window %d%s)" % (name, window, ", mask" if masked and padded else "")
        check("output %s %s" % (what, tag), out["y" + name], ys[name], tol)
        own = hf_own[name].detach().numpy()
        print("INFO HF's float32 softmax vs float64: %s %s rel=%.2e" % (
            what, tag, np.max(np.abs(own - ys[name].detach().numpy())) /
            np.max(np.abs(ys[name].detach().numpy()))))
    check("loss %s" % tag, out["loss"], loss, tol)
    for k, ref in grads.items():
        check("grad %s %s" % (k, tag), out["grad." + k], ref, tol)


def main():
    for prec in ("f64", "f32"):
        for T, padded, globals_ in ((24, True, True), (24, False, True), (24, True, False),
                                    (48, True, True)):
            case(T, padded, globals_, prec)
    if FAILED:
        print("%d FAILED" % len(FAILED))
        sys.exit(1)
    print("ALL PASSED")


if __name__ == "__main__":
    main()
