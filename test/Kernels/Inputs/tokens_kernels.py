"""Token masking, Gumbel-max sampling and axial positions (Token.cpp)
against independent references: the mask positions and the Gumbel noise
recomputed from a numpy Philox-4x32-10 (nncc_testing.refs), the samples'
distribution against softmax, the axial embedding and its adjoints against
torch.autograd (fp32 1e-4, fp64 1e-10)."""
import ctypes as C
import math
import sys

import numpy as np
import torch

from nncc_testing.ckernels import SUFFIX, check, expect, finish, i64, load, ptr
from nncc_testing.refs import gumbel_sample, mask_positions

lib = load(sys.argv[1])
rng = np.random.default_rng(4)
U64 = C.c_uint64


ref_mask = mask_positions


def ref_sample(logits, seed, offset, rows_mask=None):
    return gumbel_sample(logits, seed, offset, rows_mask)


# --- mask_tokens -------------------------------------------------------------
for itype, name in ((np.int32, "i32"), (np.int64, "i64")):
    for rows, n, p, seed, offset in ((4, 12, 0.15, 7, 0), (3, 128, 0.15, 11, 5 << 40),
                                     (2, 20, 0.15, 3, 0), (5, 7, 0.0, 1, 0),
                                     (2, 1000, 0.5, 9, 123), (3, 6, 0.15, 2, 0)):
        tokens = rng.integers(1000, 30000, (rows, n)).astype(itype)
        masked = np.zeros_like(tokens)
        mask = np.zeros((rows, n), np.uint8)
        rc = getattr(lib, "nncc_mask_tokens_" + name)(
            *i64(rows, n), C.c_double(p), C.c_int64(103), U64(seed), U64(offset),
            ptr(tokens), ptr(masked), ptr(mask))
        want = ref_mask(rows, n, p, seed, offset)
        k = int(math.floor(p * n + 1e-9))
        k = max(1, k) if p > 0 else k  # at least one masked position (n = 6: 0.9)
        expect("mask_tokens %s rows=%d n=%d p=%g offset=%d: the reference's %d "
               "positions per row" % (name, rows, n, p, offset, k),
               rc == 0 and np.array_equal(mask.astype(bool), want)
               and (mask.sum(1) == k).all())
        expect("mask_tokens %s rows=%d n=%d: masked = mask_id there, tokens elsewhere"
               % (name, rows, n), np.array_equal(masked, np.where(want, 103, tokens)))
tokens = np.zeros((1, 8), np.int32)
out, m = np.zeros_like(tokens), np.zeros((1, 8), np.uint8)
expect("mask_tokens rejects p = 1", lib.nncc_mask_tokens_i32(
    *i64(1, 8), C.c_double(1.0), C.c_int64(103), U64(1), U64(0), ptr(tokens), ptr(out),
    ptr(m)) == -1)
# A new training step (offset) masks other positions.
a, b = ref_mask(4, 64, 0.15, 5, 0), ref_mask(4, 64, 0.15, 5, 1 << 40)
expect("mask_tokens: the step offset changes the positions", not np.array_equal(a, b))

# --- sample --------------------------------------------------------------------
for dtype in (np.float32, np.float64):
    fn = getattr(lib, "nncc_sample_" + SUFFIX[dtype])
    for rows, V, seed, offset in ((6, 37, 2, 0), (3, 30522, 8, 3 << 40), (5, 3, 1, 77)):
        logits = (rng.standard_normal((rows, V)) * 3).astype(dtype)
        out = np.full(rows, -1, np.int32)
        rc = fn(*i64(rows, V), U64(seed), U64(offset), ptr(logits), None, ptr(out))
        expect("sample %s rows=%d V=%d: argmax of logits + the reference's Gumbel noise"
               % (SUFFIX[dtype], rows, V),
               rc == 0 and np.array_equal(out, ref_sample(logits, seed, offset)))
        rows_mask = rng.random(rows) < 0.5
        out2 = np.full(rows, -1, np.int32)
        fn(*i64(rows, V), U64(seed), U64(offset), ptr(logits),
           ptr(rows_mask.astype(np.uint8)), ptr(out2))
        expect("sample %s rows=%d V=%d with a row mask: same draws, 0 elsewhere"
               % (SUFFIX[dtype], rows, V),
               np.array_equal(out2, ref_sample(logits, seed, offset, rows_mask)))
# The fused head: linear_sample(x, w, b, rows) = sample(x w^T + b, rows), the
# same draws without the [N, V] logits (workspace of the drawn rows' chunk).
for dtype in (np.float32, np.float64):
    for N, K, V, use_b, use_rows in ((300, 16, 5000, True, True), (7, 8, 13, False, False),
                                     (300, 32, 30522, True, False)):  # 5 chunks of 68 rows
        x = rng.standard_normal((N, K)).astype(dtype)
        w = rng.standard_normal((V, K)).astype(dtype)
        b = rng.standard_normal(V).astype(dtype)
        rows_mask = rng.random(N) < 0.3
        logits = x.astype(np.float64) @ w.astype(np.float64).T + (b if use_b else 0)
        want = ref_sample(logits.astype(dtype), 5, 1 << 40, rows_mask if use_rows else None)
        ws = np.zeros(lib.nncc_linear_sample_workspace_size(*i64(N, K, V, np.dtype(dtype).itemsize)),
                      np.uint8)
        out = np.full(N, -1, np.int32)
        rc = getattr(lib, "nncc_linear_sample_" + SUFFIX[dtype])(
            *i64(N, K, V), U64(5), U64(1 << 40), ptr(x), ptr(w), ptr(b) if use_b else None,
            ptr(rows_mask.astype(np.uint8)) if use_rows else None, ptr(ws), ptr(out))
        # The GEMM's rounding may differ from numpy's in the last bits: allow a
        # flip only where the two best scores are that close.
        same = out == want
        expect("linear_sample %s N=%d K=%d V=%d bias=%d rows=%d: the draws of sample(x w^T + b) "
               "(%d of %d rows equal)" % (SUFFIX[dtype], N, K, V, use_b, use_rows, same.sum(), N),
               rc == 0 and same.mean() >= (1.0 if dtype == np.float64 else 0.99))
# Gumbel-max draws from softmax: 40000 rows of the same logits.
probs = torch.softmax(torch.tensor([1.0, 0.0, -1.0, 2.0, 0.5]), 0).numpy()
logits = np.tile(np.log(probs).astype(np.float32), (40000, 1))
out = np.zeros(40000, np.int32)
lib.nncc_sample_f32(*i64(40000, 5), U64(21), U64(0), ptr(logits), None, ptr(out))
freq = np.bincount(out, minlength=5) / 40000.0
# Standard error <= sqrt(0.25 / 40000) = 0.0025; 5 sigma.
expect("sample: frequencies %s within 0.0125 of softmax %s"
       % (np.round(freq, 4).tolist(), np.round(probs, 4).tolist()),
       np.abs(freq - probs).max() < 0.0125)

# --- axial positions -----------------------------------------------------------
for dtype in (np.float32, np.float64):
    tdt = torch.float32 if dtype == np.float32 else torch.float64
    for B, T, n1, n2, d1, d2 in ((2, 16, 4, 4, 3, 5), (3, 13, 4, 4, 2, 6), (1, 128, 8, 16, 16, 48)):
        x = torch.randn(B, T, d1 + d2, dtype=tdt)
        w0 = torch.randn(n1, 1, d1, dtype=tdt, requires_grad=True)
        w1 = torch.randn(1, n2, d2, dtype=tdt, requires_grad=True)
        grid = torch.cat([w0.expand(n1, n2, d1), w1.expand(n1, n2, d2)], -1)
        want = x + grid.reshape(n1 * n2, -1)[:T][None]
        y = np.zeros((B, T, d1 + d2), dtype)
        rc = getattr(lib, "nncc_axial_position_" + SUFFIX[dtype])(
            *i64(B, T, n1, n2, d1, d2), ptr(x.numpy()), ptr(w0.detach().numpy()),
            ptr(w1.detach().numpy()), ptr(y))
        expect("axial_position rc", rc == 0)
        check("axial_position B=%d T=%d grid %dx%d" % (B, T, n1, n2), y, want.detach().numpy(), dtype)
        dy = torch.randn(B, T, d1 + d2, dtype=tdt)
        want.backward(dy)
        g0 = np.full((n1, 1, d1), np.nan, dtype)
        g1 = np.full((1, n2, d2), np.nan, dtype)
        rc = getattr(lib, "nncc_axial_position_backward_" + SUFFIX[dtype])(
            *i64(B, T, n1, n2, d1, d2), ptr(dy.numpy()), ptr(g0), ptr(g1))
        expect("axial_position_backward rc", rc == 0)
        check("axial_position_backward rows T=%d" % T, g0, w0.grad.numpy(), dtype)
        check("axial_position_backward cols T=%d" % T, g1, w1.grad.numpy(), dtype)
    y = np.zeros((1, 17, 8), dtype)
    x = np.zeros((1, 17, 8), dtype)
    expect("axial_position rejects T > n1 * n2", getattr(lib, "nncc_axial_position_" + SUFFIX[dtype])(
        *i64(1, 17, 4, 4, 3, 5), ptr(x), ptr(np.zeros((4, 1, 3), dtype)),
        ptr(np.zeros((1, 4, 5), dtype)), ptr(y)) == -1)
finish()
