"""Parity of the attention kernels: dense vs nn.MultiheadAttention; dilated
sliding window + global tokens and LSH vs dense attention under the
equivalent explicit mask built in torch."""
import ctypes as C
import sys

import numpy as np
import torch

from nncc_testing.ckernels import SUFFIX, check, expect, finish, i64, load, params, ptr
from nncc_testing.ckernels import mha_forward as mha_kernel
from nncc_testing.refs import (admissible, dilated_allowed, heads, lsh_kpm, lsh_mixed,
                               lsh_reference, safe_attend)

torch.manual_seed(1)
np.random.seed(1)
lib = load(sys.argv[1])


def rand_weights(E, P, dtype):
    t = torch.float64
    return (torch.randn(P * E, E, dtype=t) / np.sqrt(E), torch.randn(P * E, dtype=t) * 0.1,
            torch.randn(E, E, dtype=t) / np.sqrt(E), torch.randn(E, dtype=t) * 0.1)


# --- dense vs nn.MultiheadAttention ---------------------------------------
def dense_case(dtype, B, T, E, H, causal, use_kpm):
    tdt = torch.float32 if dtype == np.float32 else torch.float64
    m = torch.nn.MultiheadAttention(E, H, batch_first=True).to(tdt)
    with torch.no_grad():
        m.in_proj_bias.uniform_(-0.3, 0.3)
        m.out_proj.bias.uniform_(-0.3, 0.3)
        m.in_proj_weight.mul_(2.0)
    x = torch.randn(B, T, E, dtype=tdt)
    kpm = None
    if use_kpm:
        kpm = np.zeros((B, T), np.uint8)
        for b in range(B):
            kpm[b, T - 1 - 7 * b:] = 1  # padded tails of different length
        kpm[0, 3] = 1                   # and one hole
    with torch.no_grad():
        ref, _ = m(x, x, x, need_weights=False,
                   key_padding_mask=None if kpm is None else torch.from_numpy(kpm.astype(bool)),
                   attn_mask=torch.triu(torch.ones(T, T, dtype=torch.bool), 1) if causal else None)
    p = params("dense", causal=causal)
    y = mha_kernel(p, dtype, x.numpy(), m.in_proj_weight.detach().numpy(),
                   m.in_proj_bias.detach().numpy(), m.out_proj.weight.detach().numpy(),
                   m.out_proj.bias.detach().numpy(), H, kpm)
    check("dense vs nn.MultiheadAttention T%d causal%d kpm%d" % (T, causal, use_kpm),
          y, ref.numpy(), dtype)


# --- dilated + global vs masked dense --------------------------------------
def dilated_case(dtype, B, T, E, H, w, d, glob, causal, use_kpm):
    inw, inb, ow, ob = rand_weights(E, 3, dtype)
    x = torch.randn(B, T, E, dtype=torch.float64)
    if dtype == np.float32:  # same rounded inputs for both sides
        inw, inb, ow, ob, x = [t.float().double() for t in (inw, inb, ow, ob, x)]
    kpm = None
    if use_kpm:
        kpm = np.zeros((B, T), np.uint8)
        kpm[-1, T - 5:] = 1
    proj = x @ inw.T + inb
    q, k, v = [heads(t, H) for t in proj.split(E, -1)]
    allowed = dilated_allowed(T, w, d, glob)[None, None] & admissible(B, T, causal, kpm)
    o, _ = safe_attend(q @ k.transpose(-1, -2) / np.sqrt(E // H), allowed, v)
    ref = o.transpose(1, 2).reshape(B, T, E) @ ow.T + ob
    p = params("dilated", causal=causal, window=w, dilation=d, globals_=glob)
    y = mha_kernel(p, dtype, x.numpy(), inw.numpy(), inb.numpy(), ow.numpy(), ob.numpy(),
                   H, kpm)
    check("dilated w%d d%d G%s causal%d kpm%d" % (w, d, glob, causal, use_kpm), y,
          ref.numpy(), dtype)


# --- LSH vs masked dense built from the same hashes / sort / chunks --------
def lsh_with_buckets(qk, v, R, chunk, causal, kpm, same_bucket, scale):
    """refs.lsh_reference and its buckets [B,H,R,T]."""
    buckets = []
    out = lsh_reference(qk, v, R, chunk, causal, kpm, same_bucket, scale, buckets=buckets)
    return out, torch.stack(buckets, 2)


def lsh_case(dtype, B, T, E, H, n_hashes, n_buckets, chunk, causal, use_kpm,
             same_bucket, need_mixed=False):
    dh = E // H
    inw, inb, ow, ob = rand_weights(E, 2, dtype)
    x = torch.randn(B, T, E, dtype=torch.float64)
    R = torch.randn(n_hashes, dh, n_buckets // 2, dtype=torch.float64)
    if dtype == np.float32:
        inw, inb, ow, ob, x, R = [t.float().double() for t in (inw, inb, ow, ob, x, R)]
    kpm = lsh_kpm(B, T, use_kpm)
    scale = 1.0 / np.sqrt(dh)
    proj = x @ inw.T + inb
    qk, v = [heads(t, H) for t in proj.split(E, -1)]
    if need_mixed:  # the case must exercise Reformer's self mask across rounds
        mixed = lsh_mixed(qk, R, chunk, causal, kpm, same_bucket)
        expect("lsh case has queries with self-only rounds (%d)" % mixed, mixed > 0)
    o, ref_buckets = lsh_with_buckets(qk, v, R, chunk, causal, kpm, same_bucket, scale)
    ref = o.transpose(1, 2).reshape(B, T, E) @ ow.T + ob
    rot = np.ascontiguousarray(R.numpy(), dtype=dtype)
    p = params("lsh", causal=causal, rot=rot, n_hashes=n_hashes, n_buckets=n_buckets,
               chunk=chunk, same_bucket=same_bucket)
    y = mha_kernel(p, dtype, x.numpy(), inw.numpy(), inb.numpy(), ow.numpy(),
                   ob.numpy(), H, kpm)
    tag = "lsh hashes%d buckets%d chunk%d causal%d kpm%d same%d" % (
        n_hashes, n_buckets, chunk, causal, use_kpm, same_bucket)
    # Buckets from the core kernel (projected input computed here).
    pr = np.ascontiguousarray(proj.numpy(), dtype)
    out = np.zeros((B, T, E), dtype)
    bk = np.zeros((B, H, n_hashes, T), np.int32)
    kp = None if kpm is None else np.ascontiguousarray(kpm, np.uint8)
    off = pr.ctypes.data + E * np.dtype(dtype).itemsize
    PT = C.POINTER(C.c_float if dtype == np.float32 else C.c_double)
    rc = getattr(lib, "nncc_attention_" + SUFFIX[dtype])(
        C.byref(p), *i64(B, T, H, dh), ptr(pr), None, C.cast(off, PT),
        C.c_int64(2 * E), ptr(out), C.c_int64(E), ptr(kp), None, ptr(bk), None)
    assert rc == 0, rc
    expect(tag + " buckets identical (%d of %d differ)" % (
        int((bk != ref_buckets.numpy()).sum()), bk.size), np.array_equal(bk, ref_buckets.numpy()))
    check(tag + " core", out, o.transpose(1, 2).reshape(B, T, E).numpy(), dtype)
    check(tag, y, ref.numpy(), dtype)


for dtype in (np.float32, np.float64):
    dense_case(dtype, 2, 100, 16, 2, 0, 1)
    dense_case(dtype, 2, 100, 16, 2, 1, 1)
    dense_case(dtype, 3, 37, 24, 3, 0, 0)
    # several query blocks (64) and key blocks (256) of the tiled kernel
    dense_case(dtype, 2, 600, 32, 2, 1, 1)
    dense_case(dtype, 1, 300, 32, 4, 0, 1)
    dilated_case(dtype, 2, 50, 16, 2, 4, 2, [0], 0, 0)
    dilated_case(dtype, 2, 50, 16, 2, 6, 3, [0, 17, 17, 45, 99], 0, 1)
    dilated_case(dtype, 2, 50, 16, 2, 5, 1, [3], 1, 0)
    dilated_case(dtype, 1, 30, 8, 1, 2, 4, [], 0, 0)
    # several 64-query tiles per residue class (DilatedAttention.cpp), T not
    # a multiple of the dilation, globals at both ends and inside
    dilated_case(dtype, 2, 203, 16, 2, 6, 2, [0, 100, 202], 0, 1)
    dilated_case(dtype, 1, 150, 8, 1, 10, 1, [5], 1, 0)
    # the window covers most of the sequence
    dilated_case(dtype, 2, 30, 16, 2, 8, 2, [0, 17], 0, 1)
    dilated_case(dtype, 2, 24, 16, 2, 6, 1, [3], 1, 0)
    lsh_case(dtype, 2, 23, 16, 2, 3, 4, 5, 0, 1, 0)
    lsh_case(dtype, 2, 40, 16, 2, 2, 8, 8, 1, 0, 0)
    lsh_case(dtype, 1, 33, 8, 1, 4, 6, 4, 0, 0, 1)
    lsh_case(dtype, 2, 16, 16, 2, 1, 2, 16, 0, 1, 0)
    # Rounds that offer a query nothing but itself (causal / padded, chunk 2).
    lsh_case(dtype, 2, 20, 16, 2, 2, 4, 2, 1, 1, 0, need_mixed=True)
    lsh_case(dtype, 2, 20, 16, 2, 3, 4, 2, 0, 2, 0, need_mixed=True)
    lsh_case(dtype, 2, 20, 16, 2, 3, 4, 2, 1, 2, 0, need_mixed=True)
finish()
