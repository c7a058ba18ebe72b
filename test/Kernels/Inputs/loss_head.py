"""The fused loss head nncc_linear_cross_entropy_{f32,f64} (LossHead.cpp) vs
torch: loss, dx, dw, db (unit loss adjoint) and the logits, with and without
bias, with ignored targets, over one chunk and over several (V large enough
that nncc_linear_ce_chunk_rows(N, V) < N); then central finite differences of
the loss in f64 for dx, dw and db."""
import ctypes as C
import sys

import numpy as np
import torch

from nncc_testing.ckernels import SUFFIX, check, expect, finish, i64, load, ptr

torch.manual_seed(5)
rng = np.random.default_rng(5)
lib = load(sys.argv[1])
lib.nncc_linear_ce_chunk_rows.restype = C.c_int64
lib.nncc_linear_ce_chunk_rows.argtypes = [C.c_int64] * 2
lib.nncc_linear_ce_workspace_size.restype = C.c_int64
lib.nncc_linear_ce_workspace_size.argtypes = [C.c_int64] * 3


def run(x, w, b, t, ignore, with_logits):
    dtype = x.dtype.type
    N, K = x.shape
    V = w.shape[0]
    loss = np.zeros((), dtype)
    dx, dw, db = np.zeros_like(x), np.zeros_like(w), np.zeros(V, dtype)
    logits = np.zeros((N, V), dtype) if with_logits else None
    ws = np.zeros(lib.nncc_linear_ce_workspace_size(N, V, np.dtype(dtype).itemsize), np.uint8)
    rc = getattr(lib, "nncc_linear_cross_entropy_" + SUFFIX[dtype])(
        *i64(N, K, V), ptr(x), ptr(w), ptr(b), ptr(t), C.c_int64(ignore), ptr(loss),
        ptr(dx), ptr(dw), ptr(db), ptr(logits), ws.ctypes.data_as(C.c_void_p))
    assert rc == 0, rc
    return loss, dx, dw, db, logits


def case(tag, dtype, N, K, V, bias, n_ignored, ignore=-100):
    x = rng.standard_normal((N, K)).astype(dtype)
    w = (rng.standard_normal((V, K)) * 0.3).astype(dtype)
    b = rng.standard_normal(V).astype(dtype) if bias else None
    t = rng.integers(0, V, N).astype(np.int64)
    t[rng.choice(N, n_ignored, replace=False)] = ignore
    loss, dx, dw, db, logits = run(x, w, b, t, ignore, True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True) if bias else None
    z = torch.nn.functional.linear(tx, tw, tb)
    l = torch.nn.functional.cross_entropy(z, torch.tensor(t), ignore_index=ignore)
    l.backward()
    name = "%s N%d K%d V%d chunks%d" % (tag, N, K, V, -(-N // lib.nncc_linear_ce_chunk_rows(N, V)))
    check(name + " loss", loss.reshape(1), l.detach().numpy().reshape(1), dtype)
    check(name + " logits", logits, z.detach().numpy(), dtype)
    check(name + " dx", dx, tx.grad.numpy(), dtype)
    check(name + " dw", dw, tw.grad.numpy(), dtype)
    db_ref = tb.grad.numpy() if bias else (torch.softmax(z, -1) - torch.nn.functional.one_hot(
        torch.tensor(np.where(t == ignore, 0, t)), V)).mul(
            torch.tensor(t != ignore).unsqueeze(1)).sum(0).detach().numpy() / max(1, (t != ignore).sum())
    check(name + " db", db, db_ref, dtype)
    # Without the logits output the results are the same.
    again = run(x, w, b, t, ignore, False)
    expect(name + " same without logits",
           all(np.array_equal(a, c) for a, c in zip(again[:4], (loss, dx, dw, db))))


def fd(N, K, V):
    x = rng.standard_normal((N, K))
    w = rng.standard_normal((V, K)) * 0.3
    b = rng.standard_normal(V)
    t = rng.integers(0, V, N).astype(np.int64)
    t[0] = 7  # an ignored row
    _, dx, dw, db, _ = run(x, w, b, t, 7, False)
    h = 1e-6
    worst = 0.0
    for arr, grad in ((x, dx), (w, dw), (b, db)):
        flat, g = arr.reshape(-1), grad.reshape(-1)
        for i in rng.choice(flat.size, min(flat.size, 12), replace=False):
            old = flat[i]
            flat[i] = old + h
            lp = run(x, w, b, t, 7, False)[0]
            flat[i] = old - h
            lm = run(x, w, b, t, 7, False)[0]
            flat[i] = old
            worst = max(worst, abs((lp - lm) / (2 * h) - g[i]) / max(1.0, abs(g[i])))
    ok = worst <= 1e-7
    print("%s finite differences f64 N%d K%d V%d err=%.3e tol=1e-07" %
          ("PASS" if ok else "FAIL", N, K, V, worst))
    expect("finite differences", ok)


for dtype in (np.float32, np.float64):
    case("bias", dtype, 37, 16, 50, True, 5)
    case("nobias", dtype, 20, 8, 13, False, 0)
    case("chunked", dtype, 300, 24, 30000, True, 17)  # 69 rows per chunk
    case("ignore0", dtype, 40, 8, 11, True, 6, ignore=0)
expect("chunk rows bounded", lib.nncc_linear_ce_chunk_rows(16384, 10000) == 209)
fd(9, 5, 7)
fd(150, 4, 30000)
finish()
