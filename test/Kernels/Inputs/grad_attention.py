"""Backward parity of nncc_mha_backward_* (in/out projections + attention
core): dense vs torch.autograd through nn.MultiheadAttention; dilated+global
and LSH vs autograd through dense attention under the equivalent explicit
mask (LSH: the same hashes, sort and chunks; keys normalised). Plus a
central finite-difference check in fp64 (dense causal+padding, LSH)."""
import sys

import numpy as np
import torch

from nncc_testing.ckernels import (FAILED, check, core_backward, core_forward, expect, finish,
                                   load, mha_backward, mha_forward, params)
from nncc_testing.refs import (admissible, dilated_allowed, heads, lsh_kpm, lsh_mixed,
                               lsh_reference, safe_attend)

torch.manual_seed(2)
np.random.seed(2)
load(sys.argv[1])


NAMES = ("dx", "d in_proj_weight", "d in_proj_bias", "d out_proj.weight", "d out_proj.bias")


def compare(tag, got, ref, dtype):
    for n, g, r in zip(NAMES, got, ref):
        check(tag + " " + n, g, r.numpy(), dtype)


# --- dense vs nn.MultiheadAttention ---------------------------------------
def dense_case(dtype, B, T, E, H, causal, use_kpm):
    tdt = torch.float32 if dtype == np.float32 else torch.float64
    m = torch.nn.MultiheadAttention(E, H, batch_first=True).to(tdt)
    with torch.no_grad():
        m.in_proj_bias.uniform_(-0.3, 0.3)
        m.out_proj.bias.uniform_(-0.3, 0.3)
        m.in_proj_weight.mul_(2.0)
    x = torch.randn(B, T, E, dtype=tdt, requires_grad=True)
    kpm = None
    if use_kpm:
        kpm = np.zeros((B, T), np.uint8)
        for b in range(B):
            kpm[b, T - 1 - 5 * b:] = 1
        kpm[0, 3] = 1
    y, _ = m(x, x, x, need_weights=False,
             key_padding_mask=None if kpm is None else torch.from_numpy(kpm.astype(bool)),
             attn_mask=torch.triu(torch.ones(T, T, dtype=torch.bool), 1) if causal else None)
    gy = torch.randn(B, T, E, dtype=tdt)
    ref = torch.autograd.grad((y * gy).sum(), [x, m.in_proj_weight, m.in_proj_bias,
                                               m.out_proj.weight, m.out_proj.bias])
    d = lambda t: t.detach().numpy()
    got = mha_backward(params("dense", causal=causal), dtype, d(x), d(m.in_proj_weight),
                       d(m.in_proj_bias), d(m.out_proj.weight), d(m.out_proj.bias), H, kpm,
                       gy.numpy())
    compare("bwd dense vs nn.MultiheadAttention T%d causal%d kpm%d" % (T, causal, use_kpm),
            got, ref, dtype)


def rand_weights(E, P):
    t = torch.float64
    return [torch.randn(P * E, E, dtype=t) / np.sqrt(E), torch.randn(P * E, dtype=t) * 0.1,
            torch.randn(E, E, dtype=t) / np.sqrt(E), torch.randn(E, dtype=t) * 0.1]


def leaf(ts, dtype):
    if dtype == np.float32:  # same rounded inputs on both sides
        ts = [t.float().double() for t in ts]
    return [t.clone().requires_grad_() for t in ts]


# --- dilated + global vs masked dense autograd -----------------------------
def dilated_case(dtype, B, T, E, H, w, dl, glob, causal, use_kpm):
    inw, inb, ow, ob = rand_weights(E, 3)
    x = torch.randn(B, T, E, dtype=torch.float64)
    x, inw, inb, ow, ob = leaf([x, inw, inb, ow, ob], dtype)
    kpm = None
    if use_kpm:
        kpm = np.zeros((B, T), np.uint8)
        kpm[-1, T - 5:] = 1
    proj = x @ inw.T + inb
    q, k, v = [heads(t, H) for t in proj.split(E, -1)]
    allowed = dilated_allowed(T, w, dl, glob)[None, None] & admissible(B, T, causal, kpm)
    o, _ = safe_attend(q @ k.transpose(-1, -2) / np.sqrt(E // H), allowed, v)
    y = o.transpose(1, 2).reshape(B, T, E) @ ow.T + ob
    gy = torch.randn(B, T, E, dtype=torch.float64)
    if dtype == np.float32:
        gy = gy.float().double()
    ref = torch.autograd.grad((y * gy).sum(), [x, inw, inb, ow, ob])
    d = lambda t: t.detach().numpy()
    p = params("dilated", causal=causal, window=w, dilation=dl, globals_=glob)
    got = mha_backward(p, dtype, d(x), d(inw), d(inb), d(ow), d(ob), H, kpm, gy.numpy())
    compare("bwd dilated w%d d%d G%s causal%d kpm%d" % (w, dl, glob, causal, use_kpm),
            got, ref, dtype)


# --- LSH vs masked dense autograd (same hashes / sort / chunks) -----------
def lsh_y(x, inw, inb, ow, ob, R, H, chunk, causal, kpm, same_bucket):
    B, T, E = x.shape
    dh = E // H
    proj = x @ inw.T + inb
    qk, v = [heads(t, H) for t in proj.split(E, -1)]
    o = lsh_reference(qk, v, R, chunk, causal, kpm, same_bucket, 1.0 / np.sqrt(dh))
    return o.transpose(1, 2).reshape(B, T, E) @ ow.T + ob


def lsh_case(dtype, B, T, E, H, n_hashes, n_buckets, chunk, causal, use_kpm, same_bucket,
             need_mixed=False):
    dh = E // H
    inw, inb, ow, ob = rand_weights(E, 2)
    x = torch.randn(B, T, E, dtype=torch.float64)
    R = torch.randn(n_hashes, dh, n_buckets // 2, dtype=torch.float64)
    if dtype == np.float32:
        R = R.float().double()
    x, inw, inb, ow, ob = leaf([x, inw, inb, ow, ob], dtype)
    kpm = lsh_kpm(B, T, use_kpm)
    if need_mixed:  # the case must exercise Reformer's self mask across rounds
        with torch.no_grad():
            qk = heads((x @ inw.T + inb)[..., :E], H)
        mixed = lsh_mixed(qk, R, chunk, causal, kpm, same_bucket)
        expect("bwd lsh case has queries with self-only rounds (%d)" % mixed, mixed > 0)
    y = lsh_y(x, inw, inb, ow, ob, R, H, chunk, causal, kpm, same_bucket)
    gy = torch.randn(B, T, E, dtype=torch.float64)
    if dtype == np.float32:
        gy = gy.float().double()
    ref = torch.autograd.grad((y * gy).sum(), [x, inw, inb, ow, ob])
    d = lambda t: t.detach().numpy()
    rot = np.ascontiguousarray(R.numpy(), dtype=dtype)
    p = params("lsh", causal=causal, rot=rot, n_hashes=n_hashes, n_buckets=n_buckets,
               chunk=chunk, same_bucket=same_bucket)
    got = mha_backward(p, dtype, d(x), d(inw), d(inb), d(ow), d(ob), H, kpm, gy.numpy())
    compare("bwd lsh hashes%d buckets%d chunk%d causal%d kpm%d same%d" % (
        n_hashes, n_buckets, chunk, causal, use_kpm, same_bucket), got, ref, dtype)


for dtype in (np.float64, np.float32):
    dense_case(dtype, 2, 40, 16, 2, 0, 1)
    dense_case(dtype, 2, 40, 16, 2, 1, 1)
    dense_case(dtype, 3, 17, 24, 3, 0, 0)
    dense_case(dtype, 2, 530, 16, 2, 0, 1)  # 9 query x 3 key blocks
    dense_case(dtype, 1, 300, 16, 2, 1, 1)
    dilated_case(dtype, 2, 30, 16, 2, 4, 2, [0], 0, 0)
    dilated_case(dtype, 2, 30, 16, 2, 6, 3, [0, 17, 17, 29, 99], 0, 1)
    dilated_case(dtype, 2, 30, 16, 2, 5, 1, [3], 1, 0)
    # several 64-query tiles per residue class (DilatedAttention.cpp)
    dilated_case(dtype, 2, 203, 16, 2, 6, 2, [0, 100, 202], 0, 1)
    dilated_case(dtype, 1, 150, 8, 1, 10, 1, [5], 1, 0)
    # the window covers most of the sequence
    dilated_case(dtype, 2, 30, 16, 2, 8, 2, [0, 17], 0, 1)
    dilated_case(dtype, 2, 24, 16, 2, 6, 1, [3], 1, 0)
    lsh_case(dtype, 2, 23, 16, 2, 3, 4, 5, 0, 1, 0)
    lsh_case(dtype, 2, 20, 16, 2, 2, 8, 8, 1, 0, 0)
    lsh_case(dtype, 1, 17, 8, 1, 4, 6, 4, 0, 0, 1)
    # Rounds that offer a query nothing but itself (causal / padded, chunk 2).
    lsh_case(dtype, 2, 20, 16, 2, 2, 4, 2, 1, 1, 0, need_mixed=True)
    lsh_case(dtype, 2, 20, 16, 2, 3, 4, 2, 0, 2, 0, need_mixed=True)


# --- backward from the forward's output and log-sum-exp ---------------------
# A training forward keeps the core's output and lse (nncc_attention_S's
# `lse`); the backward given them skips its forward pass and must agree
# with the recomputing backward (dense: bit for bit, the same tile code).
def saved_case(tag, p, dtype, B, T, E, H, P, kpm):
    qkv = np.ascontiguousarray(np.random.randn(B, T, P * E), dtype)
    dout = np.random.randn(B, T, E)
    out, lse = core_forward(p, dtype, qkv, E, H, kpm)
    ref = core_backward(p, dtype, qkv, dout, E, H, kpm)
    got = core_backward(p, dtype, qkv, dout, E, H, kpm, saved=(out, lse))
    check("saved lse %s" % tag, got, ref, dtype)
    if p.kind == 0:
        expect("saved lse %s %s bitwise" % (tag, "f32" if dtype == np.float32 else "f64"),
               np.array_equal(got, ref))


Rs = np.ascontiguousarray(np.random.randn(3, 8, 2))
for dtype in (np.float64, np.float32):
    kpm = np.zeros((2, 300), np.uint8)
    kpm[1, 250:] = 1
    saved_case("dense causal kpm T300", params("dense", causal=1), dtype, 2, 300, 32, 2, 3, kpm)
    saved_case("dense dropout", params("dense", dropout=0.3, dropout_seed=5,
                                       dropout_offset=1 << 40), dtype, 2, 70, 16, 2, 3, None)
    saved_case("dilated global", params("dilated", window=4, dilation=2, globals_=[0, 9],
                                        dropout=0.2, dropout_seed=3), dtype, 2, 40, 16, 2, 3, None)
    saved_case("dilated class tiles", params("dilated", window=6, dilation=2,
                                             globals_=[0, 100], dropout=0.2, dropout_seed=3),
               dtype, 1, 203, 16, 2, 3, None)
    saved_case("dilated wide window", params("dilated", window=10, dilation=2, globals_=[0, 9],
                                             dropout=0.2, dropout_seed=3),
               dtype, 2, 40, 16, 2, 3, None)
    saved_case("lsh", params("lsh", rot=np.ascontiguousarray(Rs, dtype), n_hashes=3,
                             n_buckets=4, chunk=5, dropout=0.25, dropout_seed=9),
               dtype, 2, 23, 16, 2, 2, None)


# --- central finite differences (fp64) -------------------------------------
def fd_case(tag, p, B, T, E, H, P, kpm):
    dtype = np.float64
    x = np.random.randn(B, T, E)
    ws = [np.random.randn(P * E, E) / np.sqrt(E), np.random.randn(P * E) * 0.1,
          np.random.randn(E, E) / np.sqrt(E), np.random.randn(E) * 0.1]
    gy = np.random.randn(B, T, E)
    loss = lambda: float((mha_forward(p, dtype, x, *ws, H, kpm) * gy).sum())
    got = mha_backward(p, dtype, x, *ws, H, kpm, gy)
    rng = np.random.RandomState(5)
    eps = 1e-6
    worst = 0.0
    for arr, g in zip([x] + ws, got):
        for _ in range(4):
            idx = tuple(rng.randint(s) for s in arr.shape)
            old = arr[idx]
            arr[idx] = old + eps
            lp = loss()
            arr[idx] = old - eps
            lm = loss()
            arr[idx] = old
            fd = (lp - lm) / (2 * eps)
            worst = max(worst, abs(fd - g[idx]) / max(1.0, abs(fd)))
    ok = worst < 1e-7
    print("%s finite-difference %s f64 err=%.3e tol=1e-07" % ("PASS" if ok else "FAIL",
                                                               tag, worst))
    if not ok:
        FAILED.append("fd " + tag)


kpm = np.zeros((2, 12), np.uint8)
kpm[1, 9:] = 1
fd_case("mha dense causal kpm", params("dense", causal=1), 2, 12, 8, 2, 3, kpm)
Rfd = np.ascontiguousarray(np.random.randn(2, 4, 2))
fd_case("mha lsh", params("lsh", rot=Rfd, n_hashes=2, n_buckets=4, chunk=4), 2, 12, 8, 2,
        2, None)
# Causal and padded LSH with chunk 2: rounds that offer a query only itself.
fd_case("mha lsh causal", params("lsh", causal=1, rot=Rfd, n_hashes=2, n_buckets=4, chunk=2),
        2, 12, 8, 2, 2, None)
fd_case("mha lsh kpm", params("lsh", rot=Rfd, n_hashes=2, n_buckets=4, chunk=2), 2, 12, 8, 2,
        2, lsh_kpm(2, 12, 2))
finish()
