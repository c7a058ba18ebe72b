"""Backward parity of nncc_mha_backward_* (in/out projections + attention
core): dense vs torch.autograd through nn.MultiheadAttention; dilated+global
and LSH vs autograd through dense attention under the equivalent explicit
mask (LSH: the same hashes, sort and chunks; keys normalised). Plus a
central finite-difference check in fp64 (dense causal+padding, LSH)."""
import ctypes as C
import sys

import numpy as np
import torch

from nncc_kernels import (ATTN, AttnParams, FAILED, SUFFIX, check, finish, i64,
                          load, ptr)

torch.manual_seed(2)
np.random.seed(2)
lib = load(sys.argv[1])
lib.nncc_mha_backward_workspace_size.restype = C.c_int64
lib.nncc_mha_backward_workspace_size.argtypes = [C.POINTER(AttnParams)] + [C.c_int64] * 5


def params(kind, causal=0, window=0, dilation=1, globals_=None, rot=None,
           n_hashes=0, n_buckets=0, chunk=0, same_bucket=0):
    p = AttnParams()
    p.kind, p.causal, p.scale = ATTN[kind], causal, 0.0
    p.window, p.dilation = window, dilation
    if globals_ is not None:
        p._g = np.ascontiguousarray(globals_, dtype=np.int32)
        p.global_pos = ptr(p._g)
        p.n_global = len(globals_)
    if rot is not None:
        p._rot = rot
        p.rotations = rot.ctypes.data_as(C.c_void_p)
    p.n_hashes, p.n_buckets, p.chunk = n_hashes, n_buckets, chunk
    p.same_bucket_only = same_bucket
    return p


def c(a, dtype):
    return None if a is None else np.ascontiguousarray(a, dtype)


def mha_forward(p, dtype, x, in_w, in_b, out_w, out_b, H, kpm):
    B, T, E = x.shape
    ws = np.zeros(lib.nncc_mha_workspace_size(C.byref(p), B, T, E, H,
                                              np.dtype(dtype).itemsize), np.uint8)
    y = np.zeros((B, T, E), dtype)
    kp = None if kpm is None else np.ascontiguousarray(kpm, np.uint8)
    rc = getattr(lib, "nncc_mha_forward_" + SUFFIX[dtype])(
        C.byref(p), *i64(B, T, E, H), ptr(c(x, dtype)), ptr(c(in_w, dtype)),
        ptr(c(in_b, dtype)), ptr(c(out_w, dtype)), ptr(c(out_b, dtype)), ptr(kp),
        ws.ctypes.data_as(C.c_void_p), ptr(y))
    assert rc == 0, rc
    return y


def mha_backward(p, dtype, x, in_w, in_b, out_w, out_b, H, kpm, dy):
    B, T, E = x.shape
    ws = np.zeros(lib.nncc_mha_backward_workspace_size(C.byref(p), B, T, E, H,
                                                       np.dtype(dtype).itemsize), np.uint8)
    outs = [np.full(s, 9.0, dtype) for s in
            (x.shape, in_w.shape, in_b.shape, out_w.shape, out_b.shape)]
    kp = None if kpm is None else np.ascontiguousarray(kpm, np.uint8)
    rc = getattr(lib, "nncc_mha_backward_" + SUFFIX[dtype])(
        C.byref(p), *i64(B, T, E, H), ptr(c(x, dtype)), ptr(c(in_w, dtype)),
        ptr(c(in_b, dtype)), ptr(c(out_w, dtype)), ptr(c(out_b, dtype)), ptr(kp),
        ptr(c(dy, dtype)), *[ptr(o) for o in outs], ws.ctypes.data_as(C.c_void_p))
    assert rc == 0, rc
    return outs


NAMES = ("dx", "d in_proj_weight", "d in_proj_bias", "d out_proj.weight", "d out_proj.bias")


def compare(tag, got, ref, dtype):
    for n, g, r in zip(NAMES, got, ref):
        check(tag + " " + n, g, r.numpy(), dtype)


def heads(t, H):
    B, T, E = t.shape
    return t.reshape(B, T, H, E // H).transpose(1, 2)


def safe_attend(scores, allowed, v):
    """softmax over allowed keys (empty rows -> 0), differentiable; also lse."""
    s = scores.masked_fill(~allowed, -1e30)
    p = torch.softmax(s, -1) * allowed
    lse = torch.logsumexp(s, -1)
    return p @ v, lse


def admissible(B, T, causal, kpm):
    a = torch.ones(B, 1, T, T, dtype=torch.bool)
    if causal:
        a &= ~torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    if kpm is not None:
        a &= ~torch.from_numpy(kpm.astype(bool))[:, None, None, :]
    return a


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
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    diff = (i - j).abs()
    band = (diff <= (w // 2) * dl) & (diff % dl == 0)
    g = torch.zeros(T, dtype=torch.bool)
    for gp in glob:
        if gp < T:
            g[gp] = True
    allowed = (band | g[:, None] | g[None, :])[None, None] & admissible(B, T, causal, kpm)
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
def lsh_reference(qk, v, R, chunk, causal, kpm, same_bucket, scale):
    B, H, T, dh = qk.shape
    adm = admissible(B, T, causal, kpm)
    kn = qk / qk.norm(dim=-1, keepdim=True)
    scores = scale * qk @ kn.transpose(-1, -2)
    outs, lses = [], []
    for r in range(R.shape[0]):
        with torch.no_grad():
            xr = qk @ R[r]
            bucket = torch.argmax(torch.cat([xr, -xr], -1), -1)
            key = bucket * T + torch.arange(T)
            pos = torch.argsort(torch.argsort(key, -1), -1)
            ch = pos // chunk
            same_or_prev = (ch[..., None, :] == ch[..., :, None]) | \
                           (ch[..., None, :] == ch[..., :, None] - 1)
            allowed = same_or_prev & adm
            if same_bucket:
                allowed &= bucket[..., None, :] == bucket[..., :, None]
            eye = torch.eye(T, dtype=torch.bool)
            others = allowed & ~eye
            none = ~others.any(-1, keepdim=True)
            allowed = others | (eye & allowed & none)
        o, lse = safe_attend(scores, allowed, v)
        outs.append(o)
        lses.append(lse)
    w = torch.softmax(torch.stack(lses), 0)
    return (w[..., None] * torch.stack(outs)).sum(0)


def lsh_y(x, inw, inb, ow, ob, R, H, chunk, causal, kpm, same_bucket):
    B, T, E = x.shape
    dh = E // H
    proj = x @ inw.T + inb
    qk, v = [heads(t, H) for t in proj.split(E, -1)]
    o = lsh_reference(qk, v, R, chunk, causal, kpm, same_bucket, 1.0 / np.sqrt(dh))
    return o.transpose(1, 2).reshape(B, T, E) @ ow.T + ob


def lsh_case(dtype, B, T, E, H, n_hashes, n_buckets, chunk, causal, use_kpm, same_bucket):
    dh = E // H
    inw, inb, ow, ob = rand_weights(E, 2)
    x = torch.randn(B, T, E, dtype=torch.float64)
    R = torch.randn(n_hashes, dh, n_buckets // 2, dtype=torch.float64)
    if dtype == np.float32:
        R = R.float().double()
    x, inw, inb, ow, ob = leaf([x, inw, inb, ow, ob], dtype)
    kpm = None
    if use_kpm:
        kpm = np.zeros((B, T), np.uint8)
        kpm[0, T - 4:] = 1
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
    dilated_case(dtype, 2, 30, 16, 2, 4, 2, [0], 0, 0)
    dilated_case(dtype, 2, 30, 16, 2, 6, 3, [0, 17, 17, 29, 99], 0, 1)
    dilated_case(dtype, 2, 30, 16, 2, 5, 1, [3], 1, 0)
    lsh_case(dtype, 2, 23, 16, 2, 3, 4, 5, 0, 1, 0)
    lsh_case(dtype, 2, 20, 16, 2, 2, 8, 8, 1, 0, 0)
    lsh_case(dtype, 1, 17, 8, 1, 4, 6, 4, 0, 0, 1)


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
finish()
