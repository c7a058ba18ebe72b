#!/usr/bin/env python3
"""Time nncc CPU kernels against PyTorch on the same machine, same threads.

Usage: /usr/bin/python3 bench/kernels_vs_torch.py [build/lib] [--threads N] [--reps R]

Prints min / median / max wall time over R repetitions for each side and the
ratio of medians (torch / nncc: > 1 means nncc is faster), plus the achieved
GFLOP/s of each side. Not part of the test suite (no timings in tests).
Install libopenblas0-pthread first, otherwise Debian's torch uses the
reference BLAS and the comparison is meaningless.
"""
import argparse
import ctypes as C
import os
import statistics
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("libdir", nargs="?", default=os.path.join(os.path.dirname(__file__), "..", "build", "lib"))
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--attn-T", type=int, default=4096)
args = ap.parse_args()

# Same thread count on both sides (OpenMP + OpenBLAS of nncc, torch intra-op).
os.environ["OMP_NUM_THREADS"] = str(args.threads)
os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "utils"))
from nncc_testing.ckernels import CELL, AttnParams, i64, load, ptr, rnn_params  # noqa: E402

torch.set_num_threads(args.threads)
torch.manual_seed(0)
lib = load(args.libdir)


def timeit(f, reps):
    f()  # warm-up
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return min(ts), statistics.median(ts), max(ts)


def report(name, flops, nn, th):
    fmt = lambda t: "%.2f/%.2f/%.2f ms" % tuple(x * 1e3 for x in t)
    print("%-34s nncc %s  torch %s  torch/nncc %.2fx  (%.1f vs %.1f GFLOP/s)" % (
        name, fmt(nn), fmt(th), th[1] / nn[1], flops / nn[1] / 1e9, flops / th[1] / 1e9))
    sys.stdout.flush()


def bench_rnn(cell, B=32, T=128, I=256, H=256):
    m = (torch.nn.LSTM if cell == "lstm" else torch.nn.GRU)(I, H, batch_first=True)
    x = torch.randn(B, T, I)
    flat = [np.ascontiguousarray(w.detach().numpy()) for w in m._flat_weights]
    PT = C.POINTER(C.c_float)
    wp = (PT * len(flat))(*[ptr(w) for w in flat])
    ws = np.zeros(lib.nncc_rnn_workspace_size(CELL[cell], B, T, I, H, 1, 1, 4), np.uint8)
    y = np.zeros((B, T, H), np.float32)
    hn = np.zeros((1, B, H), np.float32)
    cn = np.zeros((1, B, H), np.float32)
    xn = np.ascontiguousarray(x.numpy())

    def nn():
        rc = lib.nncc_rnn_forward_f32(rnn_params(cell, B, T, I, H, 1, 1, 1), ptr(xn), wp, None,
                                      None, ptr(y), ptr(hn), ptr(cn),
                                      ws.ctypes.data_as(C.c_void_p), None)
        assert rc == 0

    def th():
        with torch.no_grad():
            m(x)
    G = 4 if cell == "lstm" else 3
    flops = 2.0 * B * T * G * H * (I + H)
    th_t = timeit(th, args.reps)  # torch first: no nncc worker threads around yet
    report("%s fwd B%d T%d H%d" % (cell, B, T, H), flops, timeit(nn, args.reps), th_t)


def bench_attn(T, E=256, Hh=4, B=1, w=64, d=2):
    m = torch.nn.MultiheadAttention(E, Hh, batch_first=True)
    x = torch.randn(B, T, E)
    xn = np.ascontiguousarray(x.numpy())
    inw = np.ascontiguousarray(m.in_proj_weight.detach().numpy())
    inb = np.ascontiguousarray(m.in_proj_bias.detach().numpy())
    ow = np.ascontiguousarray(m.out_proj.weight.detach().numpy())
    ob = np.ascontiguousarray(m.out_proj.bias.detach().numpy())
    y = np.zeros((B, T, E), np.float32)
    g = np.array([0], np.int32)

    def run(kind):
        p = AttnParams()
        p.kind = kind
        p.window, p.dilation = w, d
        p.global_pos, p.n_global = ptr(g), 1
        ws = np.zeros(lib.nncc_mha_workspace_size(C.byref(p), B, T, E, Hh, 4), np.uint8)

        def f():
            rc = lib.nncc_mha_forward_f32(C.byref(p), *i64(B, T, E, Hh), ptr(xn), ptr(inw),
                                          ptr(inb), ptr(ow), ptr(ob), None,
                                          ws.ctypes.data_as(C.c_void_p), ptr(y))
            assert rc == 0
        return f

    def th():
        with torch.no_grad():
            m(x, x, x, need_weights=False)
    proj = 2.0 * B * T * E * 4 * E
    dense = proj + 4.0 * B * T * T * E
    th_t = timeit(th, args.reps)
    report("attention dense T%d E%d H%d" % (T, E, Hh), dense, timeit(run(0), args.reps), th_t)
    band = proj + 4.0 * B * T * (w + 1 + 1) * E
    report("attention dilated w%d d%d vs torch dense" % (w, d), band,
           timeit(run(1), args.reps), th_t)


print("threads=%d reps=%d torch %s" % (args.threads, args.reps, torch.__version__))
bench_rnn("lstm")
bench_rnn("gru")
bench_attn(args.attn_T)
