"""Attention with heads whose total width A = heads x head_dim is not the
model's D (attention(..., head_dim:); Hugging Face's Reformer with
num_attention_heads x attention_head_size != hidden_size): in_proj_weight
[3A, D], out_proj.weight [D, A]. Against a plain torch reference (the
projections, per-head softmax(q k^T / sqrt(head_dim) + mask) v, the
out-projection): outputs, the MSE loss and its gradients (every parameter
and the input, via a learned position table) in float64 and float32.

Layers of models/head_width.nn: (name, heads, head_dim, bias, allowed
pattern, key padding). Metric: max|nncc - torch| / max|torch| per tensor;
tolerances 1e-10 (f64) and 1e-5 (f32)."""
import os
import sys

import numpy as np
import torch

import nncc_testing as nt
from nncc_testing.refs import dilated_allowed

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "models", "head_width.nn")
B, T, D, MAXLEN = 2, 11, 12, 16
TOL = {"f64": 1e-10, "f32": 1e-5}
FAILED = []

torch.set_num_threads(1)


def allowed(kind):
    if kind == "causal":
        return ~torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    if kind == "banded":
        return dilated_allowed(T, 4, 1, [0])
    return torch.ones(T, T, dtype=torch.bool)


LAYERS = [("wide", 3, 8, True, "dense", True), ("narrow", 2, 2, False, "causal", False),
          ("banded", 2, 10, True, "banded", True)]


def attention(h, p, heads, dh, pattern, pad):
    A = heads * dh
    qkv = h @ p["in_proj_weight"].t()
    if "in_proj_bias" in p:
        qkv = qkv + p["in_proj_bias"]
    q, k, v = (t.reshape(B, T, heads, dh).transpose(1, 2) for t in qkv.split(A, dim=-1))
    s = q @ k.transpose(-1, -2) / dh ** 0.5
    keep = allowed(pattern)[None, None]
    if pad is not None:
        keep = keep & ~pad[:, None, None, :]
    s = s.masked_fill(~keep, float("-inf"))
    ctx = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, A)
    y = ctx @ p["out_proj.weight"].t()
    return y + p["out_proj.bias"] if "out_proj.bias" in p else y


def check(name, got, ref, tol):
    got = np.asarray(got, dtype=np.float64)
    ref = ref.detach().double().numpy()
    e = float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30)) \
        if got.shape == ref.shape else float("inf")
    ok = e <= tol
    print("%s %s rel=%.2e tol=%.0e" % ("PASS" if ok else "FAIL", name, e, tol))
    if not ok:
        FAILED.append(name)


def case(prec):
    dtype = torch.float64 if prec == "f64" else torch.float32
    npdt = np.float64 if prec == "f64" else np.float32
    gen = torch.Generator().manual_seed(11)
    randn = lambda *s, scale=1.0: (torch.randn(*s, generator=gen, dtype=torch.float64) *
                                   scale).to(dtype).requires_grad_()
    x, t = randn(B, T, D).detach(), randn(B, T, D).detach()
    pos = randn(MAXLEN, D, scale=0.1)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[1, T - 3:] = True
    pad[0, 4] = True
    h = x + pos[:T]
    params, loss, ys = {}, 0, {}
    for name, heads, dh, bias, pattern, masked in LAYERS:
        A = heads * dh
        p = {"in_proj_weight": randn(3 * A, D, scale=D ** -0.5),
             "out_proj.weight": randn(D, A, scale=A ** -0.5)}
        if bias:
            p["in_proj_bias"] = randn(3 * A, scale=0.1)
            p["out_proj.bias"] = randn(D, scale=0.1)
        params[name] = p
        ys[name] = attention(h, p, heads, dh, pattern, pad if masked else None)
        loss = loss + torch.nn.functional.mse_loss(ys[name], t)
    loss.backward()
    weights = {"p.weight": pos.detach().numpy().astype(npdt)}
    for name, p in params.items():
        for k, v in p.items():
            weights["%s.%s" % (name, k)] = v.detach().numpy().astype(npdt)
    out = nt.grad_run(MODEL, weights, {"x": x.numpy().astype(npdt), "t": t.numpy().astype(npdt),
                                       "pad": pad.numpy()}, precision=prec)
    tol = TOL[prec]
    for name, heads, dh, bias, pattern, masked in LAYERS:
        what = "%s (%d heads x %d = %d on D %d, %s%s) %s" % (
            name, heads, dh, heads * dh, D, pattern, ", mask" if masked else "", prec)
        check("output " + what, out["y" + name[0]], ys[name], tol)
        for k, v in params[name].items():
            check("grad %s.%s %s" % (name, k, prec), out["grad.%s.%s" % (name, k)], v.grad, tol)
    check("loss %s" % prec, out["loss"], loss, tol)
    check("grad input (via p.weight) %s" % prec, out["grad.p.weight"], pos.grad, tol)


def main():
    for prec in ("f64", "f32"):
        case(prec)
    if FAILED:
        print("%d FAILED" % len(FAILED))
        sys.exit(1)
    print("ALL PASSED")


if __name__ == "__main__":
    main()
