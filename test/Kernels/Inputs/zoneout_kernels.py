"""Zoneout kernels (numpy only): nncc_zoneout_* and the LSTM zoneout of
nncc_rnn_layer_zoneout_* / nncc_rnn_backward_* (nncc_rnn_params.zoneout).

- p = 0 is bitwise the path without zoneout;
- masks: identical for the same (seed, offset), different across seeds and
  offsets; fraction of zoned-out units ~ p (binomial, 6 sigma);
- the LSTM backward regenerates the forward's masks: central finite
  differences (f64) of a bidirectional layer with lengths, L = sum(y * R).
"""
import ctypes as C
import sys

import numpy as np

from nncc_testing.ckernels import CELL, SUFFIX, i64, load, ptr, rnn_params

lib = load(sys.argv[1])
lib.nncc_rnn_layer_workspace_size.restype = C.c_int64
lib.nncc_rnn_layer_workspace_size.argtypes = [C.c_int] + [C.c_int64] * 3
lib.nncc_rnn_backward_workspace_size.restype = C.c_int64
lib.nncc_rnn_backward_workspace_size.argtypes = [C.c_int] + [C.c_int64] * 7
FAILED = []


def report(name, ok, detail=""):
    print("%s %s %s" % ("PASS" if ok else "FAIL", name, detail))
    if not ok:
        FAILED.append(name)


def zoneout(dtype, n, p, seed, off, new, prev):
    y = np.zeros(n, dtype)
    rc = getattr(lib, "nncc_zoneout_" + SUFFIX[dtype])(
        C.c_int64(n), C.c_double(p), C.c_uint64(seed), C.c_uint64(off),
        ptr(new), ptr(prev), ptr(y))
    assert rc == 0, rc
    return y


def binomial_ok(k, n, p):
    return abs(k - n * p) <= 6 * np.sqrt(n * p * (1 - p)) + 1


for dtype in (np.float32, np.float64):
    n = 200003
    rng = np.random.RandomState(0)
    new = rng.randn(n).astype(dtype)
    prev = rng.randn(n).astype(dtype)
    report("zoneout p=0 is new", np.array_equal(zoneout(dtype, n, 0.0, 5, 0, new, prev), new),
           SUFFIX[dtype])
    for p in (0.1, 0.5):
        a = zoneout(dtype, n, p, 7, 3, new, prev)
        b = zoneout(dtype, n, p, 7, 3, new, prev)
        c = zoneout(dtype, n, p, 8, 3, new, prev)
        d = zoneout(dtype, n, p, 7, 4, new, prev)
        kept = a == prev
        report("zoneout elementwise p=%g" % p, np.all((a == prev) | (a == new)), SUFFIX[dtype])
        report("zoneout same seed same mask p=%g" % p, np.array_equal(a, b), SUFFIX[dtype])
        report("zoneout seed/offset change mask p=%g" % p,
               not np.array_equal(a, c) and not np.array_equal(a, d), SUFFIX[dtype])
        report("zoneout fraction p=%g" % p, binomial_ok(int(kept.sum()), n, p),
               "%s kept-prev %.4f" % (SUFFIX[dtype], kept.mean()))
    rc = getattr(lib, "nncc_zoneout_" + SUFFIX[dtype])(
        C.c_int64(4), C.c_double(1.0), C.c_uint64(0), C.c_uint64(0),
        ptr(new), ptr(prev), ptr(np.zeros(4, dtype)))
    report("zoneout p=1 rejected", rc != 0, SUFFIX[dtype])


def lstm_layers(dtype, x, flat, h0, c0, lens, H, p, seed, off, marker=None):
    """Bidirectional LSTM layer by nncc_rnn_layer(_zoneout) per direction."""
    B, T, I = x.shape
    es = np.dtype(dtype).itemsize
    ws = np.zeros(lib.nncc_rnn_layer_workspace_size(CELL["lstm"], B, H, es), np.uint8)
    y = np.zeros((B, T, 2 * H), dtype)
    hn = np.zeros((2, B, H), dtype)
    cn = np.zeros((2, B, H), dtype)
    for d in range(2):
        wih, whh, bih, bhh = flat[4 * d:4 * d + 4]
        xproj = np.ascontiguousarray((x.reshape(-1, I) @ wih.T + bih).astype(dtype).reshape(B, T, 4 * H))
        args = [C.c_int(CELL["lstm"]), *i64(B, T, H, 2, d), C.c_int(d), ptr(xproj), ptr(whh),
                ptr(bhh), ptr(h0), ptr(c0), ptr(lens), None, ptr(y), ptr(hn), ptr(cn),
                ws.ctypes.data_as(C.c_void_p), None]
        if p is None:
            rc = getattr(lib, "nncc_rnn_layer_" + SUFFIX[dtype])(*args)
        else:
            rc = getattr(lib, "nncc_rnn_layer_zoneout_" + SUFFIX[dtype])(
                *args, C.c_double(p), C.c_uint64(seed), C.c_uint64(off))
        assert rc == 0, rc
    return y, hn, cn


def lstm_backward(dtype, x, flat, h0, c0, lens, H, p, seed, off, dy):
    B, T, I = x.shape
    es = np.dtype(dtype).itemsize
    ws = np.zeros(lib.nncc_rnn_backward_workspace_size(CELL["lstm"], B, T, I, H, 1, 2, es), np.uint8)
    PT = C.POINTER(C.c_double if dtype == np.float64 else C.c_float)
    warr = (PT * 8)(*[ptr(w) for w in flat])
    dflat = [np.zeros_like(w) for w in flat]
    dwarr = (PT * 8)(*[ptr(w) for w in dflat])
    dx = np.zeros_like(x)
    dh0 = np.zeros_like(h0)
    dc0 = np.zeros_like(c0)
    rc = getattr(lib, "nncc_rnn_backward_" + SUFFIX[dtype])(
        rnn_params("lstm", B, T, I, H, 1, 2, 1, lens, zoneout=p, seed=seed, offset=off),
        ptr(x), warr, ptr(h0), ptr(c0), None, ptr(dy), None, None, ptr(dx), ptr(dh0), ptr(dc0),
        dwarr, ws.ctypes.data_as(C.c_void_p), None)
    assert rc == 0, rc
    return dx, dh0, dc0, dflat


def lstm_params(dtype, B, T, I, H, rng):
    x = rng.randn(B, T, I).astype(dtype)
    flat = []
    for _ in range(2):
        flat += [(rng.randn(4 * H, I) * 0.5).astype(dtype), (rng.randn(4 * H, H) * 0.5).astype(dtype),
                 (rng.randn(4 * H) * 0.1).astype(dtype), (rng.randn(4 * H) * 0.1).astype(dtype)]
    h0 = rng.randn(2, B, H).astype(dtype)
    c0 = rng.randn(2, B, H).astype(dtype)
    return x, flat, h0, c0


for dtype in (np.float32, np.float64):
    rng = np.random.RandomState(1)
    B, T, I, H = 3, 5, 4, 6
    x, flat, h0, c0 = lstm_params(dtype, B, T, I, H, rng)
    lens = np.array([5, 2, 4], np.int32)
    ref = lstm_layers(dtype, x, flat, h0, c0, lens, H, None, 0, 0)
    z0 = lstm_layers(dtype, x, flat, h0, c0, lens, H, 0.0, 9, 0)
    report("lstm zoneout p=0 bitwise", all(np.array_equal(a, b) for a, b in zip(ref, z0)),
           SUFFIX[dtype])
    a = lstm_layers(dtype, x, flat, h0, c0, lens, H, 0.3, 9, 2)
    b = lstm_layers(dtype, x, flat, h0, c0, lens, H, 0.3, 9, 2)
    c = lstm_layers(dtype, x, flat, h0, c0, lens, H, 0.3, 10, 2)
    report("lstm zoneout same seed same output", all(np.array_equal(u, v) for u, v in zip(a, b)),
           SUFFIX[dtype])
    report("lstm zoneout seed changes output", not np.array_equal(a[0], c[0]), SUFFIX[dtype])
    report("lstm zoneout p>0 differs from p=0", not np.array_equal(a[0], ref[0]), SUFFIX[dtype])
    # Zoned-out units keep h exactly: step-to-step equal h (per direction).
    ya = a[0]
    same = (ya[0, 1:, :H] == ya[0, :-1, :H]).mean()
    report("lstm zoneout keeps h", 0.1 < same < 0.6, "%s equal-steps %.2f" % (SUFFIX[dtype], same))
    # Statistics at T = 1: h0 = 7 (outside o*tanh(c)'s range) marks kept units.
    Bs, Hs = 400, 64
    xs = rng.randn(Bs, 1, I).astype(dtype)
    fl = []
    for _ in range(2):
        fl += [(rng.randn(4 * Hs, I) * 0.5).astype(dtype), (rng.randn(4 * Hs, Hs) * 0.5).astype(dtype),
               np.zeros(4 * Hs, dtype), np.zeros(4 * Hs, dtype)]
    hs0 = np.full((2, Bs, Hs), 7.0, dtype)
    cs0 = np.zeros((2, Bs, Hs), dtype)
    for p in (0.1, 0.4):
        ys = lstm_layers(dtype, xs, fl, hs0, cs0, None, Hs, p, 3, 0)[0]
        k = int((ys == 7.0).sum())
        report("lstm zoneout fraction p=%g" % p, binomial_ok(k, ys.size, p),
               "%s kept %.4f" % (SUFFIX[dtype], k / ys.size))

# Finite differences (f64): the backward regenerates the forward's masks.
dtype = np.float64
rng = np.random.RandomState(2)
B, T, I, H = 3, 6, 3, 4
x, flat, h0, c0 = lstm_params(dtype, B, T, I, H, rng)
lens = np.array([6, 3, 5], np.int32)
R = rng.randn(B, T, 2 * H)
p, seed, off = 0.35, 11, 4


def loss():
    y = lstm_layers(dtype, x, flat, h0, c0, lens, H, p, seed, off)[0]
    return float((y * R).sum())


dx, dh0, dc0, dflat = lstm_backward(dtype, x, flat, h0, c0, lens, H, p, seed, off, R)
worst = 0.0
eps = 1e-6
for arr, grad in [(x, dx), (h0, dh0), (c0, dc0)] + list(zip(flat, dflat)):
    for _ in range(6):
        idx = tuple(rng.randint(s) for s in arr.shape)
        old = arr[idx]
        arr[idx] = old + eps
        lp = loss()
        arr[idx] = old - eps
        lm = loss()
        arr[idx] = old
        fd = (lp - lm) / (2 * eps)
        worst = max(worst, abs(fd - grad[idx]) / max(1.0, abs(fd)))
report("lstm zoneout backward vs finite differences", worst < 1e-6, "err %.2e" % worst)
# And the masks matter: the backward with another seed is wrong.
odx = lstm_backward(dtype, x, flat, h0, c0, lens, H, p, seed + 1, off, R)[0]
report("lstm zoneout backward depends on the seed", not np.allclose(odx, dx))

print("ALL PASSED" if not FAILED else "FAILED: " + ", ".join(FAILED))
