"""Parity of GEMM / linear epilogues, layer norm, softmax, embedding,
sinusoidal positions, losses; Philox known-answer vectors and dropout
determinism."""
import ctypes as C
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F

from nncc_testing.ckernels import ACT, SUFFIX, check, expect, finish, i64, load, ptr

torch.manual_seed(2)
np.random.seed(2)
lib = load(sys.argv[1])


def fn(name, dtype):
    return getattr(lib, "nncc_%s_%s" % (name, SUFFIX[dtype]))


def T(a, dtype):
    return np.ascontiguousarray(a, dtype=dtype)


def ref_act(name, x):
    return {"none": lambda t: t, "relu": F.relu,
            "leaky_relu": lambda t: F.leaky_relu(t, 0.1),
            "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
            "tanh": torch.tanh, "sigmoid": torch.sigmoid}[name](x)


for dtype in (np.float32, np.float64):
    tdt = torch.float32 if dtype == np.float32 else torch.float64
    dt = lambda a: T(a, dtype)
    CT = C.c_float if dtype == np.float32 else C.c_double

    # GEMM with transposes, alpha, beta.
    M, N, K = 13, 9, 11
    A = np.random.randn(K, M)
    Bm = np.random.randn(N, K)
    Cm = np.random.randn(M, N)
    out = dt(Cm).copy()  # dt() may alias Cm for f64
    rc = fn("gemm", dtype)(1, 1, *i64(M, N, K), CT(0.5), ptr(dt(A)), C.c_int64(M),
                           ptr(dt(Bm)), C.c_int64(K), CT(2.0), ptr(out), C.c_int64(N))
    assert rc == 0
    check("gemm TT alpha beta", out, 0.5 * (torch.tensor(A).T @ torch.tensor(Bm).T)
          .numpy() + 2.0 * Cm, dtype)

    # Linear with every epilogue.
    x = torch.randn(17, 12, dtype=tdt)
    w = torch.randn(10, 12, dtype=tdt) / 3
    b = torch.randn(10, dtype=tdt)
    r = torch.randn(17, 10, dtype=tdt)
    for act in ACT:
        for use_b, use_r in ((1, 1), (0, 0)):
            y = np.zeros((17, 10), dtype)
            rc = fn("linear", dtype)(*i64(17, 10, 12), ptr(dt(x)), ptr(dt(w)),
                                     ptr(dt(b)) if use_b else None,
                                     ptr(dt(r)) if use_r else None, C.c_int(ACT[act]),
                                     C.c_double(0.1), ptr(y))
            assert rc == 0
            ref = ref_act(act, F.linear(x, w, b if use_b else None)) + (r if use_r else 0)
            check("linear act=%s bias%d residual%d" % (act, use_b, use_r), y,
                  ref.numpy(), dtype)

    # Layer norm (+ fused residual), with and without affine.
    x = torch.randn(6, 5, 33, dtype=tdt) * 3 + 1
    res = torch.randn(6, 5, 33, dtype=tdt)
    g = torch.randn(33, dtype=tdt)
    bb = torch.randn(33, dtype=tdt)
    y = np.zeros((6, 5, 33), dtype)
    s = np.zeros((6, 5, 33), dtype)
    mean = np.zeros(30, dtype)
    rstd = np.zeros(30, dtype)
    rc = fn("layer_norm", dtype)(*i64(30, 33), ptr(dt(x)), ptr(dt(res)), ptr(dt(g)),
                                 ptr(dt(bb)), C.c_double(1e-5), ptr(y), ptr(s),
                                 ptr(mean), ptr(rstd))
    assert rc == 0
    check("layer_norm residual affine", y,
          F.layer_norm(x + res, (33,), g, bb, 1e-5).numpy(), dtype)
    check("layer_norm residual sum", s, (x + res).numpy(), dtype)
    check("layer_norm mean", mean, (x + res).reshape(30, 33).mean(-1).numpy(), dtype)
    rc = fn("layer_norm", dtype)(*i64(30, 33), ptr(dt(x)), None, None, None,
                                 C.c_double(1e-5), ptr(y), None, None, None)
    check("layer_norm plain", y, F.layer_norm(x, (33,)).numpy(), dtype)

    # Softmax along a middle axis.
    x = torch.randn(4, 7, 5, dtype=tdt) * 5
    y = np.zeros((4, 7, 5), dtype)
    fn("softmax", dtype)(*i64(4, 7, 5), ptr(dt(x)), ptr(y))
    check("softmax axis=1", y, torch.softmax(x, 1).numpy(), dtype)

    # Embedding (int64 and int32 indices), out of range rejected.
    tab = torch.randn(11, 6, dtype=tdt)
    idx = np.random.randint(0, 11, size=(3, 4)).astype(np.int64)
    y = np.zeros((3, 4, 6), dtype)
    fn("embedding", dtype)(*i64(12, 11, 6), ptr(idx), ptr(dt(tab)), ptr(y))
    check("embedding i64", y, F.embedding(torch.from_numpy(idx), tab).numpy(), dtype)
    y2 = np.zeros((3, 4, 6), dtype)
    fn("embedding_i32", dtype)(*i64(12, 11, 6), ptr(idx.astype(np.int32)),
                               ptr(dt(tab)), ptr(y2))
    check("embedding i32", y2, y, dtype)
    bad = idx.copy()
    bad[1, 1] = 11
    expect("embedding out of range -> ERANGE",
           fn("embedding", dtype)(*i64(12, 11, 6), ptr(bad), ptr(dt(tab)), ptr(y)) == -2)

    # Sinusoidal positions (Vaswani).
    Bn, Tn, E = 2, 50, 16
    x = torch.randn(Bn, Tn, E, dtype=tdt)
    pos = torch.arange(Tn, dtype=torch.float64)[:, None]
    i2 = torch.arange(0, E, 2, dtype=torch.float64)
    div = torch.exp(-i2 / E * math.log(10000.0))
    pe = torch.zeros(Tn, E, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    y = np.zeros((Bn, Tn, E), dtype)
    fn("sinusoidal_position", dtype)(*i64(Bn, Tn, E), ptr(dt(x)), ptr(y))
    check("sinusoidal_position", y, (x.double() + pe).numpy(), dtype)

    # Losses (mean reduction).
    a = torch.randn(7, 9, dtype=tdt)
    bt = torch.randn(7, 9, dtype=tdt)
    o = np.zeros(1, dtype)
    fn("mse_loss", dtype)(C.c_int64(63), ptr(dt(a)), ptr(dt(bt)), ptr(o))
    check("mse_loss", o[0], F.mse_loss(a, bt).item(), dtype)
    logits = torch.randn(10, 6, dtype=tdt) * 4
    tg = torch.randint(0, 6, (10,))
    tg[[2, 7]] = -100
    fn("cross_entropy", dtype)(*i64(10, 6), ptr(dt(logits)), ptr(tg.numpy().astype(np.int64)),
                               C.c_int64(-100), ptr(o))
    check("cross_entropy ignore_index", o[0], F.cross_entropy(logits, tg).item(), dtype)
    tg2 = tg.clone()
    tg2[tg2 == -100] = 3
    fn("cross_entropy", dtype)(*i64(10, 6), ptr(dt(logits)), ptr(tg2.numpy().astype(np.int64)),
                               C.c_int64(3), ptr(o))
    check("cross_entropy ignore_index=3", o[0],
          F.cross_entropy(logits, tg2, ignore_index=3).item(), dtype)
    xl = torch.randn(8, 5, dtype=tdt) * 6
    yl = torch.rand(8, 5, dtype=tdt)
    pw = torch.rand(5, dtype=tdt) * 3
    fn("bce_with_logits", dtype)(*i64(8, 5), ptr(dt(xl)), ptr(dt(yl)), ptr(dt(pw)), ptr(o))
    check("bce_with_logits pos_weight", o[0],
          F.binary_cross_entropy_with_logits(xl, yl, pos_weight=pw).item(), dtype)
    fn("bce_with_logits", dtype)(*i64(8, 5), ptr(dt(xl)), ptr(dt(yl)), None, ptr(o))
    check("bce_with_logits", o[0], F.binary_cross_entropy_with_logits(xl, yl).item(), dtype)

    # Dropout: deterministic in (seed, offset), scale 1/(1-p), keep rate.
    n = 10007
    x = np.random.randn(n)
    y1, y2, y3 = (np.zeros(n, dtype) for _ in range(3))
    m1 = np.zeros(n, np.uint8)
    d = fn("dropout", dtype)
    d(C.c_int64(n), C.c_double(0.3), C.c_uint64(42), C.c_uint64(0), ptr(dt(x)), ptr(y1), ptr(m1))
    d(C.c_int64(n), C.c_double(0.3), C.c_uint64(42), C.c_uint64(0), ptr(dt(x)), ptr(y2), None)
    d(C.c_int64(n), C.c_double(0.3), C.c_uint64(43), C.c_uint64(0), ptr(dt(x)), ptr(y3), None)
    expect("dropout same seed -> identical", np.array_equal(y1, y2))
    expect("dropout other seed -> different", not np.array_equal(y1, y3))
    check("dropout values = mask * x / (1-p)", y1, m1 * dt(x) / dt(0.7), dtype)
    rate = m1.mean()
    expect("dropout keep rate %.4f ~ 0.7" % rate, abs(rate - 0.7) < 0.02)
    # Offset k shifts the stream by k draws (draw = offset + i; Philox.h):
    # a multiple of 4 takes the blocked path, another the per-draw one.
    for k in (8, 5):
        yk = np.zeros(n - k, dtype)
        d(C.c_int64(n - k), C.c_double(0.3), C.c_uint64(42), C.c_uint64(k), ptr(dt(x[k:])),
          ptr(yk), None)
        expect("dropout offset %d shifts the stream by %d draws" % (k, k),
               np.array_equal(yk, y1[k:]))

# Philox-4x32-10 known-answer vectors (Random123 kat_vectors).
KAT = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
       ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
       ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
        (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]
for ctr, key, want in KAT:
    o = np.zeros(4, np.uint32)
    lib.nncc_philox4x32_10(ptr(np.array(ctr, np.uint32)), ptr(np.array(key, np.uint32)), ptr(o))
    expect("philox4x32-10 KAT %08x -> %08x" % (ctr[0], want[0]), tuple(int(v) for v in o) == want)
finish()
