"""Backward parity of layer norm (+residual, +sum_out adjoint), softmax,
embedding (scatter-add, padding_idx, determinism), linear with fused
activation (pre- and post-activation forms), activations, losses (mse,
cross-entropy with ignore_index, BCE-with-logits with pos_weight) and dropout
(same Philox mask) vs torch.autograd."""
import ctypes as C
import sys

import numpy as np
import torch

from nncc_testing.ckernels import ACT, SUFFIX, check, expect, finish, i64, load, ptr

torch.manual_seed(3)
np.random.seed(3)
lib = load(sys.argv[1])


def c(a, dtype):
    return None if a is None else np.ascontiguousarray(a, dtype)


def fn(name, dtype):
    return getattr(lib, name + "_" + SUFFIX[dtype])


def tdt(dtype):
    return torch.float32 if dtype == np.float32 else torch.float64


def layer_norm_case(dtype, rows, N, residual, affine, given_stats, dsum):
    t = tdt(dtype)
    x = torch.randn(rows, N, dtype=t, requires_grad=True) * 1.0
    r = torch.randn(rows, N, dtype=t, requires_grad=True) if residual else None
    g = (torch.randn(N, dtype=t) * 0.5 + 1).requires_grad_() if affine else None
    b = (torch.randn(N, dtype=t) * 0.1).requires_grad_() if affine else None
    s = x + r if residual else x
    y = torch.nn.functional.layer_norm(s, (N,), g, b, 1e-5)
    gy = torch.randn(rows, N, dtype=t)
    gs = torch.randn(rows, N, dtype=t) if dsum else None
    loss = (y * gy).sum() + ((s * gs).sum() if dsum else 0)
    wrt = [x] + ([r] if residual else []) + ([g, b] if affine else [])
    ref = torch.autograd.grad(loss, wrt)
    n = lambda v: None if v is None else c(v.detach().numpy(), dtype)
    mean = rstd = None
    if given_stats:
        mean = np.zeros(rows, dtype)
        rstd = np.zeros(rows, dtype)
        yy = np.zeros((rows, N), dtype)
        assert fn("nncc_layer_norm", dtype)(*i64(rows, N), ptr(n(x)), ptr(n(r)), ptr(n(g)),
                                            ptr(n(b)), C.c_double(1e-5), ptr(yy), None,
                                            ptr(mean), ptr(rstd)) == 0
    dx = np.zeros((rows, N), dtype)
    dg = np.zeros(N, dtype)
    db = np.zeros(N, dtype)
    rc = fn("nncc_layer_norm_backward", dtype)(
        *i64(rows, N), ptr(n(x)), ptr(n(r)), ptr(n(g)), ptr(mean), ptr(rstd),
        C.c_double(1e-5), ptr(c(gy.numpy(), dtype)), ptr(n(gs)), ptr(dx),
        ptr(dg) if affine else None, ptr(db) if affine else None)
    assert rc == 0, rc
    tag = "layer_norm bwd res%d affine%d stats%d dsum%d" % (residual, affine, given_stats, dsum)
    check(tag + " dx", dx, ref[0].numpy(), dtype)
    k = 1
    if residual:
        check(tag + " dresidual", dx, ref[1].numpy(), dtype)
        k = 2
    if affine:
        check(tag + " dgamma", dg, ref[k].numpy(), dtype)
        check(tag + " dbeta", db, ref[k + 1].numpy(), dtype)


def softmax_case(dtype, shape, axis):
    t = tdt(dtype)
    x = torch.randn(*shape, dtype=t, requires_grad=True)
    y = torch.softmax(x, axis)
    gy = torch.randn(*shape, dtype=t)
    ref, = torch.autograd.grad((y * gy).sum(), [x])
    outer = int(np.prod(shape[:axis]))
    inner = int(np.prod(shape[axis + 1:]))
    dx = np.zeros(shape, dtype)
    assert fn("nncc_softmax_backward", dtype)(*i64(outer, shape[axis], inner),
                                              ptr(c(y.detach().numpy(), dtype)),
                                              ptr(c(gy.numpy(), dtype)), ptr(dx)) == 0
    check("softmax bwd axis%d" % axis, dx, ref.numpy(), dtype)


def embedding_case(dtype, n, V, E, pad, i32):
    t = tdt(dtype)
    idx = np.random.randint(0, V, size=n).astype(np.int64)
    idx[:3] = 2  # repeated rows
    table = torch.randn(V, E, dtype=t, requires_grad=True)
    y = torch.nn.functional.embedding(torch.from_numpy(idx), table,
                                      padding_idx=pad if pad >= 0 else None)
    gy = torch.randn(n, E, dtype=t)
    ref, = torch.autograd.grad((y * gy).sum(), [table])
    dt = np.full((V, E), 5.0, dtype)
    name = "nncc_embedding_backward_i32" if i32 else "nncc_embedding_backward"
    ii = idx.astype(np.int32) if i32 else idx
    assert fn(name, dtype)(*i64(n, V, E), ptr(ii), ptr(c(gy.numpy(), dtype)),
                           C.c_int64(pad), ptr(dt)) == 0
    check("embedding bwd pad%d i32%d" % (pad, i32), dt, ref.numpy(), dtype)
    dt2 = np.zeros((V, E), dtype)
    fn(name, dtype)(*i64(n, V, E), ptr(ii), ptr(c(gy.numpy(), dtype)), C.c_int64(pad),
                    ptr(dt2))
    expect("embedding bwd deterministic %s" % SUFFIX[dtype], np.array_equal(dt, dt2))
    bad = ii.copy()
    bad[1] = V
    expect("embedding bwd range error",
           fn(name, dtype)(*i64(n, V, E), ptr(bad), ptr(c(gy.numpy(), dtype)),
                           C.c_int64(pad), ptr(dt2)) == -2)


TORCH_ACT = {
    "none": lambda z: z, "relu": torch.relu,
    "leaky_relu": lambda z: torch.nn.functional.leaky_relu(z, 0.1),
    "gelu": lambda z: torch.nn.functional.gelu(z),
    "gelu_tanh": lambda z: torch.nn.functional.gelu(z, approximate="tanh"),
    "tanh": torch.tanh, "sigmoid": torch.sigmoid}


def linear_case(dtype, M, N, K, act, post):
    t = tdt(dtype)
    x = torch.randn(M, K, dtype=t, requires_grad=True)
    w = torch.randn(N, K, dtype=t, requires_grad=True)
    b = torch.randn(N, dtype=t, requires_grad=True)
    z = x @ w.T + b
    y = TORCH_ACT[act](z)
    gy = torch.randn(M, N, dtype=t)
    ref = torch.autograd.grad((y * gy).sum(), [x, w, b])
    zy = (y if post else z).detach().numpy()
    dx = np.zeros((M, K), dtype)
    dw = np.zeros((N, K), dtype)
    db = np.zeros(N, dtype)
    ws = np.zeros(M * N * np.dtype(dtype).itemsize, np.uint8)
    rc = fn("nncc_linear_backward", dtype)(
        *i64(M, N, K), ptr(c(x.detach().numpy(), dtype)), ptr(c(w.detach().numpy(), dtype)),
        ptr(c(zy, dtype)), C.c_int(post), C.c_int(ACT[act]), C.c_double(0.1),
        ptr(c(gy.numpy(), dtype)), ptr(dx), ptr(dw), ptr(db), C.c_int(0), None,
        ws.ctypes.data_as(C.c_void_p))
    assert rc == 0, rc
    tag = "linear bwd %s %s" % (act, "post" if post else "pre")
    check(tag + " dx", dx, ref[0].numpy(), dtype)
    check(tag + " dw", dw, ref[1].numpy(), dtype)
    check(tag + " db", db, ref[2].numpy(), dtype)
    # accumulate = 1 adds
    fn("nncc_linear_backward", dtype)(
        *i64(M, N, K), ptr(c(x.detach().numpy(), dtype)), ptr(c(w.detach().numpy(), dtype)),
        ptr(c(zy, dtype)), C.c_int(post), C.c_int(ACT[act]), C.c_double(0.1),
        ptr(c(gy.numpy(), dtype)), ptr(dx), ptr(dw), ptr(db), C.c_int(1), None,
        ws.ctypes.data_as(C.c_void_p))
    check(tag + " dw accumulate", dw, 2 * ref[1].numpy(), dtype)


def activation_case(dtype, act):
    t = tdt(dtype)
    x = (torch.randn(300, dtype=t) * 3).requires_grad_()
    y = TORCH_ACT[act](x)
    gy = torch.randn(300, dtype=t)
    ref, = torch.autograd.grad((y * gy).sum(), [x])
    for post in ((0, 1) if act not in ("gelu", "gelu_tanh") else (0,)):
        dx = np.zeros(300, dtype)
        src = (y if post else x).detach().numpy()
        assert fn("nncc_activation_backward", dtype)(
            C.c_int64(300), ptr(c(src, dtype)), C.c_int(post), C.c_int(ACT[act]),
            C.c_double(0.1), ptr(c(gy.numpy(), dtype)), ptr(dx)) == 0
        check("activation bwd %s %s" % (act, "post" if post else "pre"), dx, ref.numpy(),
              dtype)
    if act == "gelu":
        dx = np.zeros(300, dtype)
        expect("activation bwd gelu from output rejected",
               fn("nncc_activation_backward", dtype)(
                   C.c_int64(300), ptr(c(x.detach().numpy(), dtype)), C.c_int(1),
                   C.c_int(ACT[act]), C.c_double(0.1), ptr(c(gy.numpy(), dtype)),
                   ptr(dx)) == -1)


def loss_cases(dtype):
    t = tdt(dtype)
    g = np.array([0.7], dtype)  # upstream adjoint of the scalar loss
    # mse
    a = torch.randn(5, 7, dtype=t, requires_grad=True)
    b = torch.randn(5, 7, dtype=t, requires_grad=True)
    ref = torch.autograd.grad(torch.nn.functional.mse_loss(a, b) * 0.7, [a, b])
    da = np.zeros((5, 7), dtype)
    dbb = np.zeros((5, 7), dtype)
    assert fn("nncc_mse_loss_backward", dtype)(C.c_int64(35), ptr(c(a.detach().numpy(), dtype)),
                                               ptr(c(b.detach().numpy(), dtype)), ptr(g),
                                               ptr(da), ptr(dbb)) == 0
    check("mse bwd dpred", da, ref[0].numpy(), dtype)
    check("mse bwd dtarget", dbb, ref[1].numpy(), dtype)
    # cross-entropy with ignore_index
    N, Cc = 9, 6
    logits = (torch.randn(N, Cc, dtype=t) * 3).requires_grad_()
    tgt = torch.randint(0, Cc, (N,))
    tgt[2] = -100
    tgt[5] = -100
    ref, = torch.autograd.grad(torch.nn.functional.cross_entropy(logits, tgt, ignore_index=-100)
                               * 0.7, [logits])
    dl = np.full((N, Cc), 3.0, dtype)
    assert fn("nncc_cross_entropy_backward", dtype)(
        *i64(N, Cc), ptr(c(logits.detach().numpy(), dtype)),
        ptr(np.ascontiguousarray(tgt.numpy(), np.int64)), C.c_int64(-100), ptr(g),
        ptr(dl)) == 0
    check("cross_entropy bwd ignore_index", dl, ref.numpy(), dtype)
    # BCE with logits, pos_weight
    x = (torch.randn(N, Cc, dtype=t) * 4).requires_grad_()
    y = torch.rand(N, Cc, dtype=t)
    pw = torch.rand(Cc, dtype=t) * 3
    for use_pw in (0, 1):
        ref, = torch.autograd.grad(torch.nn.functional.binary_cross_entropy_with_logits(
            x, y, pos_weight=pw if use_pw else None) * 0.7, [x])
        dx = np.zeros((N, Cc), dtype)
        assert fn("nncc_bce_with_logits_backward", dtype)(
            *i64(N, Cc), ptr(c(x.detach().numpy(), dtype)), ptr(c(y.numpy(), dtype)),
            ptr(c(pw.numpy(), dtype) if use_pw else None), ptr(g), ptr(dx)) == 0
        check("bce_with_logits bwd pos_weight%d" % use_pw, dx, ref.numpy(), dtype)


def dropout_case(dtype):
    n, p, seed, off = 1001, 0.3, 1234, 7
    x = np.random.randn(n).astype(dtype)
    y = np.zeros(n, dtype)
    mask = np.zeros(n, np.uint8)
    assert fn("nncc_dropout", dtype)(C.c_int64(n), C.c_double(p), C.c_uint64(seed),
                                     C.c_uint64(off), ptr(x), ptr(y), ptr(mask)) == 0
    dy = np.random.randn(n).astype(dtype)
    dx = np.zeros(n, dtype)
    assert fn("nncc_dropout_backward", dtype)(C.c_int64(n), C.c_double(p), C.c_uint64(seed),
                                              C.c_uint64(off), ptr(dy), ptr(dx)) == 0
    check("dropout bwd same mask", dx, dy * mask / (1 - p), dtype)


for dtype in (np.float64, np.float32):
    for res, aff, st, ds in ((0, 1, 0, 0), (1, 1, 0, 1), (1, 0, 1, 0), (0, 1, 1, 1)):
        layer_norm_case(dtype, 7, 33, res, aff, st, ds)
    layer_norm_case(dtype, 150, 70, 1, 1, 0, 1)  # several row chunks of dgamma
    softmax_case(dtype, (3, 5, 4), 1)
    softmax_case(dtype, (4, 9), 1)
    embedding_case(dtype, 40, 11, 70, -1, 0)
    embedding_case(dtype, 40, 11, 70, 2, 1)
    for act in ("none", "relu", "leaky_relu", "gelu", "gelu_tanh", "tanh", "sigmoid"):
        activation_case(dtype, act)
        linear_case(dtype, 6, 5, 4, act, 0)
        if act not in ("gelu", "gelu_tanh"):
            linear_case(dtype, 6, 5, 4, act, 1)
    loss_cases(dtype)
    dropout_case(dtype)
finish()
