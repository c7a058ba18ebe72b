"""Optimizer updates vs torch.optim.

1. Kernels (libnncc_kernels via ctypes): nncc_sgd_step (momentum, nesterov,
   weight decay), nncc_adam_step (Adam with L2, AdamW) with a clipping scale,
   fed the same random gradients as torch.optim.SGD/Adam/AdamW for 5 steps;
   f64 to 1e-12, f32 to 1e-5 (relative to max |p|).
2. The schedule (schedule_lr of a compiled model) vs a Python transcription
   of the MSc thesis eq. 3.2 (and constant/cosine/linear/step).
3. train_step of Inputs/groups.nn (f64 and f32) vs torch: each step nncc's
   gradients (grad.<param>, of the weights before the update) go into a
   torch AdamW with one param group per parameter (lr = schedule * layer
   scale, weight decay 0 on biases and norms), clip_grad_norm_ first.

    optim_vs_torch.py LIBDIR GROUPS.nn
"""
import ctypes as C
import math
import os
import sys

import numpy as np
import torch

import nncc_train as NT  # utils/, on PYTHONPATH

torch.set_default_dtype(torch.float64)
FAILS = []


def check(name, got, ref, tol):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    e = float(np.max(np.abs(got - ref)) / max(1e-30, np.max(np.abs(ref))))
    ok = e <= tol
    print("%s %-52s rel err %.2e (tol %.0e)" % ("ok  " if ok else "FAIL", name, e, tol))
    if not ok:
        FAILS.append(name)


libdir, groups_nn = sys.argv[1], sys.argv[2]
K = C.CDLL(os.path.join(libdir, "libnncc_kernels.so"))
for S in ("f32", "f64"):
    ct = C.c_float if S == "f32" else C.c_double
    P = C.POINTER(ct)
    getattr(K, "nncc_sgd_step_" + S).argtypes = [C.c_int64, P, P, P, C.c_double, C.c_double,
                                                 C.c_double, C.c_double, C.c_int, C.c_int]
    getattr(K, "nncc_adam_step_" + S).argtypes = [C.c_int64, P, P, P, P, C.c_double, C.c_double,
                                                  C.c_double, C.c_double, C.c_double, C.c_double,
                                                  C.c_int, C.c_int64]
    getattr(K, "nncc_sum_squares_" + S).argtypes = [C.c_int64, P]
    getattr(K, "nncc_sum_squares_" + S).restype = C.c_double


def ptr(a):
    return a.ctypes.data_as(C.POINTER(C.c_float if a.dtype == np.float32 else C.c_double))


rng = np.random.default_rng(0)
n = 1000
for S, dt, tol in (("f64", np.float64, 1e-12), ("f32", np.float32, 1e-5)):
    tdt = torch.float64 if S == "f64" else torch.float32
    for name, kw in (("sgd", dict(lr=0.1, momentum=0.9)),
                     ("sgd nesterov wd", dict(lr=0.05, momentum=0.8, nesterov=True,
                                              weight_decay=0.01)),
                     ("sgd plain", dict(lr=0.1)),
                     ("adam", dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8)),
                     ("adam L2", dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
                     ("adamw", dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-4, weight_decay=0.02))):
        p0 = rng.standard_normal(n).astype(dt)
        tp = torch.nn.Parameter(torch.tensor(p0, dtype=tdt))
        kind = name.split()[0]
        opt = (torch.optim.SGD if kind == "sgd" else
               torch.optim.AdamW if kind == "adamw" else torch.optim.Adam)([tp], **kw)
        p = p0.copy()
        m = np.zeros(n, dt)
        v = np.zeros(n, dt)
        for step in range(1, 6):
            g = (rng.standard_normal(n) * 3).astype(dt)
            scale = 0.7 if step % 2 else 1.0  # a clipping factor on odd steps
            tp.grad = torch.tensor(g, dtype=tdt) * scale
            opt.step()
            if kind == "sgd":
                rc = getattr(K, "nncc_sgd_step_" + S)(
                    n, ptr(p), ptr(g), ptr(m) if kw.get("momentum") else None, scale, kw["lr"],
                    kw.get("momentum", 0.0), kw.get("weight_decay", 0.0),
                    int(kw.get("nesterov", False)), int(step == 1))
            else:
                rc = getattr(K, "nncc_adam_step_" + S)(
                    n, ptr(p), ptr(g), ptr(m), ptr(v), scale, kw["lr"], kw["betas"][0],
                    kw["betas"][1], kw["eps"], kw.get("weight_decay", 0.0),
                    int(kind == "adamw"), step)
            assert rc == 0
        check("%s %s, 5 steps" % (S, name), p, tp.detach().numpy(), tol)
    g = rng.standard_normal(n).astype(dt)
    check("%s sum of squares" % S, getattr(K, "nncc_sum_squares_" + S)(n, ptr(g)),
          float(np.sum(g.astype(np.float64) ** 2)), 1e-12)


# ---- 2. schedules ----
def eq32(t, lr, W, O, f):
    if t < W:
        return lr * t / max(1, W)
    C_ = math.acos(2 * f - 1) / (2 * math.pi)
    return lr * max(0.0, 0.5 * (1 + math.cos(2 * math.pi * C_ * (t - W) / max(1, O - W))))


lib64 = NT.TrainLib.compile(groups_nn, f64=True)
cfg = lib64.config()
checks = []
for (W, frac, O, f) in ((2, 0, 6, 0.2), (-1, 0.05, 1000, 0.2), (-1, 0.3, 37, 0.5), (0, 0, 10, 0.0),
                        (10, 0, 10, 0.2)):
    c = cfg.copy()
    c.schedule, c.warmup, c.warmup_fraction, c.total, c.cycles = NT.WARMUP_COSINE, W, frac, O, f
    Wv = W if W >= 0 else O * frac
    got = [lib64.schedule_lr(c, t) for t in range(O + 3)]
    ref = [eq32(t, c.lr, Wv, O, f) for t in range(O + 3)]
    check("eq. 3.2 W=%s f_p=%s O=%d f_peta=%s" % (W, frac, O, f), got, ref, 1e-14)
# eta_O = f_{p,eta} * eta: the cycle parameter is the final fraction of the lr.
c = cfg.copy()
c.schedule, c.warmup, c.total, c.cycles = NT.WARMUP_COSINE, 5, 100, 0.2
check("eq. 3.2 final lr = f_{p,eta} * lr", lib64.schedule_lr(c, 100), 0.2 * c.lr, 1e-12)
c.schedule = NT.CONSTANT
check("constant", [lib64.schedule_lr(c, t) for t in range(5)], [c.lr] * 5, 0)
c.schedule, c.total = NT.COSINE, 10
check("cosine", [lib64.schedule_lr(c, t) for t in range(12)],
      [c.lr * max(0, 0.5 * (1 + math.cos(math.pi * t / 10))) for t in range(12)], 1e-14)
c.schedule, c.warmup, c.total = NT.LINEAR, 3, 10
check("linear", [lib64.schedule_lr(c, t) for t in range(12)],
      [c.lr * (t / 3 if t < 3 else max(0, (10 - t) / 7)) for t in range(12)], 1e-14)
c.schedule, c.step_size, c.gamma = NT.STEP, 3, 0.5
check("step", [lib64.schedule_lr(c, t) for t in range(10)],
      [c.lr * 0.5 ** (t // 3) for t in range(10)], 1e-14)

# ---- 3. train_step vs torch (param groups, clipping, schedule) ----
for f64, tol in ((True, 1e-10), (False, 1e-5)):
    lib = lib64 if f64 else NT.TrainLib.compile(groups_nn, f64=False)
    dt = np.float64 if f64 else np.float32
    tdt = torch.float64 if f64 else torch.float32
    ctx = lib.context(seed=3)
    cfg = lib.config()
    x = rng.standard_normal((10, 4)).astype(dt)
    y = rng.standard_normal((10, 2)).astype(dt)
    ctx.set_inputs({"x": x, "y": y})
    w0 = ctx.params()
    names = [p[0] for p in lib.params]
    tparams = {k: torch.nn.Parameter(torch.tensor(w0[k], dtype=tdt)) for k in names}
    groups, expect_decay = [], {}
    L = 3
    for i, k in enumerate(names):
        decay, scale = ctx.param_group(i)
        want_decay = not (k.endswith("bias") or k.startswith("norm."))
        want_scale = 0.8 ** (L - 1 - int(k.split(".")[1])) if k.startswith("encoder.") else 1.0
        if decay != want_decay or abs(scale - want_scale) > 1e-15:
            FAILS.append("group %s" % k)
            print("FAIL group of %s: decay %s scale %g, want %s %g" % (k, decay, scale,
                                                                    want_decay, want_scale))
        groups.append(dict(params=[tparams[k]], weight_decay=cfg.weight_decay if decay else 0.0,
                           scale=scale))
    opt = torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)
    for t in range(6):
        ctx.train_step()
        st = ctx.stats()
        grads = {k: torch.tensor(ctx.output("grad." + k), dtype=tdt) for k in names}
        for k in names:
            tparams[k].grad = grads[k].clone()
        norm = torch.nn.utils.clip_grad_norm_([tparams[k] for k in names], cfg.clip)
        lr_t = eq32(t, cfg.lr, 2, 6, 0.2)
        for g in opt.param_groups:
            g["lr"] = lr_t * g["scale"]
        opt.step()
        if abs(st.lr - lr_t) > 1e-12 * cfg.lr or abs(st.grad_norm - float(norm)) > 1e-6 * float(norm):
            FAILS.append("stats step %d" % (t + 1))
            print("FAIL stats step %d: lr %g vs %g, norm %g vs %g" % (t + 1, st.lr, lr_t,
                                                                      st.grad_norm, float(norm)))
    got = ctx.params()
    check("train_step %s, 6 AdamW steps, groups+clip+eq.3.2" % ("f64" if f64 else "f32"),
          np.concatenate([got[k].ravel() for k in names]),
          np.concatenate([tparams[k].detach().numpy().ravel() for k in names]), tol)
    ctx.close()

print("FAILED: " + ", ".join(FAILS) if FAILS else "ALL PASSED")
sys.exit(1 if FAILS else 0)
