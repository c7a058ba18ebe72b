"""Attention dropout (training) in nncc_mha_forward_* / nncc_mha_backward_*:
outputs and gradients vs torch.autograd through attention whose weights are
multiplied by the mask the Kernels.h counters define, computed here from an
independent numpy Philox (attention_common.dropout_multipliers). Dense
(several query and key tiles, causal, padding), dilated + global, and LSH
(per-round masks). Plus: p = 0 is bitwise the path without dropout, another
step offset draws another mask, the kept fraction is binomial."""
import sys

import numpy as np
import torch

from nncc_testing.ckernels import check, expect, finish, load, mha_backward, mha_forward, params
from nncc_testing.refs import (admissible, dense_dropout, dilated_allowed, dropout_multipliers,
                               heads, lsh_dropout, lsh_reference, safe_attend)

torch.manual_seed(4)
np.random.seed(4)
load(sys.argv[1])

SEED, OFFSET = 1234567, 3 << 40
NAMES = ("y", "dx", "d in_proj_weight", "d in_proj_bias", "d out_proj.weight",
         "d out_proj.bias")


def rand_weights(E, P, dtype):
    ts = [torch.randn(P * E, E, dtype=torch.float64) / np.sqrt(E),
          torch.randn(P * E, dtype=torch.float64) * 0.1,
          torch.randn(E, E, dtype=torch.float64) / np.sqrt(E),
          torch.randn(E, dtype=torch.float64) * 0.1]
    if dtype == np.float32:  # the same rounded values on both sides
        ts = [t.float().double() for t in ts]
    return [t.requires_grad_() for t in ts]


def run_case(tag, dtype, p, core, B, T, E, H, P, kpm):
    """core(q, k, v) -> [B, H, T, dh] (k is None for LSH)."""
    x = torch.randn(B, T, E, dtype=torch.float64)
    gy = torch.randn(B, T, E, dtype=torch.float64)
    if dtype == np.float32:
        x, gy = x.float().double(), gy.float().double()
    x.requires_grad_()
    inw, inb, ow, ob = rand_weights(E, P, dtype)
    proj = x @ inw.T + inb
    parts = [heads(t, H) for t in proj.split(E, -1)]
    o = core(*parts) if P == 3 else core(parts[0], None, parts[1])
    y = o.transpose(1, 2).reshape(B, T, E) @ ow.T + ob
    ref = [y.detach()] + list(torch.autograd.grad((y * gy).sum(), [x, inw, inb, ow, ob]))
    d = lambda t: t.detach().numpy()
    args = (dtype, d(x), d(inw), d(inb), d(ow), d(ob), H, kpm)
    got = [mha_forward(p, *args)] + mha_backward(p, *args, gy.numpy())
    for n, g, r in zip(NAMES, got, ref):
        check("dropout %s %s" % (tag, n), g, r.numpy(), dtype)
    return got[0]


def dense(dtype, B, T, E, H, causal, use_kpm, rate):
    kpm = None
    if use_kpm:
        kpm = np.zeros((B, T), np.uint8)
        kpm[-1, T - 7:] = 1
    mult = dense_dropout(SEED, OFFSET, rate, B, H, T)
    allowed = admissible(B, T, causal, kpm)

    def core(q, k, v):
        return safe_attend(q @ k.transpose(-1, -2) / np.sqrt(E // H), allowed, v, mult)[0]
    p = params("dense", causal=causal, dropout=rate, dropout_seed=SEED, dropout_offset=OFFSET)
    return run_case("dense T%d causal%d kpm%d p%g" % (T, causal, use_kpm, rate), dtype, p,
                    core, B, T, E, H, 3, kpm)


def dilated(dtype, B, T, E, H, w, dl, glob, rate):
    mult = dense_dropout(SEED, OFFSET, rate, B, H, T)
    allowed = dilated_allowed(T, w, dl, glob)[None, None] & admissible(B, T, 0, None)

    def core(q, k, v):
        return safe_attend(q @ k.transpose(-1, -2) / np.sqrt(E // H), allowed, v, mult)[0]
    p = params("dilated", window=w, dilation=dl, globals_=glob, dropout=rate,
               dropout_seed=SEED, dropout_offset=OFFSET)
    run_case("dilated w%d d%d G%s p%g" % (w, dl, glob, rate), dtype, p, core, B, T, E, H, 3,
             None)


def lsh(dtype, B, T, E, H, n_hashes, n_buckets, chunk, causal, rate):
    dh = E // H
    R = torch.randn(n_hashes, dh, n_buckets // 2, dtype=torch.float64)
    if dtype == np.float32:
        R = R.float().double()
    mults = lsh_dropout(SEED, OFFSET, rate, B, H, n_hashes, T)

    def core(qk, _, v):
        return lsh_reference(qk, v, R, chunk, causal, None, 0, 1.0 / np.sqrt(dh), mults)
    rot = np.ascontiguousarray(R.numpy(), dtype=dtype)
    p = params("lsh", causal=causal, rot=rot, n_hashes=n_hashes, n_buckets=n_buckets,
               chunk=chunk, dropout=rate, dropout_seed=SEED, dropout_offset=OFFSET)
    run_case("lsh hashes%d chunk%d causal%d p%g" % (n_hashes, chunk, causal, rate), dtype, p,
             core, B, T, E, H, 2, None)


for dtype in (np.float64, np.float32):
    dense(dtype, 2, 300, 16, 2, 1, 1, 0.3)  # 5 query x 2 key tiles
    dense(dtype, 2, 20, 16, 2, 0, 0, 0.5)
    dilated(dtype, 2, 30, 16, 2, 6, 2, [0, 17], 0.25)
    dilated(dtype, 1, 150, 8, 1, 6, 2, [0, 77], 0.25)  # several tiles per class
    dilated(dtype, 2, 30, 16, 2, 8, 2, [0, 17], 0.25)  # the window covers most of T
    lsh(dtype, 2, 24, 16, 2, 3, 4, 6, 0, 0.3)
    lsh(dtype, 1, 20, 8, 1, 2, 4, 5, 1, 0.6)
    lsh(dtype, 2, 20, 8, 1, 3, 4, 2, 1, 0.4)  # causal chunk 2: self-only rounds

# p = 0 is the path without dropout, bit for bit; another offset, another mask.
B, T, E, H = 2, 70, 16, 2
x = np.random.randn(B, T, E)
ws = [np.random.randn(3 * E, E) / 4, np.random.randn(3 * E) * 0.1,
      np.random.randn(E, E) / 4, np.random.randn(E) * 0.1]
plain = mha_forward(params("dense"), np.float64, x, *ws, H, None)
zero = mha_forward(params("dense", dropout=0.0, dropout_seed=SEED, dropout_offset=OFFSET),
                   np.float64, x, *ws, H, None)
expect("dropout p=0 bitwise equal to no dropout", np.array_equal(plain, zero))
a = mha_forward(params("dense", dropout=0.3, dropout_seed=SEED, dropout_offset=OFFSET),
                np.float64, x, *ws, H, None)
b = mha_forward(params("dense", dropout=0.3, dropout_seed=SEED, dropout_offset=OFFSET + (1 << 40)),
                np.float64, x, *ws, H, None)
expect("dropout next step offset draws another mask", not np.allclose(a, b))
expect("dropout active changes the output", not np.allclose(a, plain))

# Kept fraction of a large mask (the one the kernels matched above): within
# 5 standard deviations of 1 - p.
n = 1 << 20
for rate in (0.1, 0.5):
    kept = int(dropout_multipliers(SEED, OFFSET, np.arange(n), rate).astype(bool).sum())
    sd = np.sqrt(n * rate * (1 - rate))
    expect("dropout kept fraction p=%g: %d of %d" % (rate, kept, n),
           abs(kept - n * (1 - rate)) < 5 * sd)
finish()
