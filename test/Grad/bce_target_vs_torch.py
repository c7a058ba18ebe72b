"""The VJP of binary cross-entropy with logits w.r.t. its target and
pos_weight against torch.autograd (F.binary_cross_entropy_with_logits with
requires_grad targets and pos_weight), on Inputs/vjp_bce.nn: f32 and f64
libraries, ordinary and extreme logits (|x| up to 60, where a naive
log(sigmoid) overflows), soft and hard targets. torch runs in float64 on the
library's values. Metric: max|nncc - torch| / max(1, max|torch|), tolerance
1e-5 (f32) and 1e-12 (f64)."""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

import nncc_train as NT
from nncc_testing import library as nt

MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs", "vjp_bce.nn")
B, T, FE, C = 3, 4, 4, 3


def reference(weights, inputs):
    """loss and its gradients w.r.t. x and labels (F.binary_cross_entropy_with_logits)
    and pw (torch does not differentiate its pos_weight argument: the same loss
    written out with F.logsigmoid, checked equal), in float64."""
    t = {k: torch.tensor(np.asarray(v, dtype=np.float64), requires_grad=True)
         for k, v in inputs.items()}
    w = {k: torch.tensor(np.asarray(v, dtype=np.float64)) for k, v in weights.items()}
    logits = F.linear(t["x"], w["head.weight"], w["head.bias"])
    other = F.linear(t["x"], w["other.weight"], w["other.bias"]) * 3.0
    second = 0.5 * F.binary_cross_entropy_with_logits(other, t["labels"])
    loss = F.binary_cross_entropy_with_logits(logits, t["labels"],
                                              pos_weight=t["pw"].detach()) + second
    loss.backward()
    grads = {k: t[k].grad.numpy() for k in ("x", "labels")}
    y = t["labels"].detach()
    written = -(t["pw"] * y * F.logsigmoid(logits.detach()) +
                (1 - y) * F.logsigmoid(-logits.detach())).mean()
    written.backward()
    nt.check("the written-out loss = F.binary_cross_entropy_with_logits",
             (written + second).detach().numpy(), loss.detach().numpy(), 1e-14)
    grads["pw"] = t["pw"].grad.numpy()
    return loss.detach().numpy(), grads


def case(name, f64, x_scale, hard):
    rng = np.random.default_rng(1 if hard else 0)
    dt = np.float64 if f64 else np.float32
    lib = NT.TrainLib.compile(MODEL, f64=f64, vjp=True)
    ctx = lib.context(seed=0)
    weights = {k: np.asarray(v, dtype=dt) for k, v in ctx.params().items()}
    labels = rng.random((B, T, C))
    if hard:
        labels = (labels < 0.5).astype(np.float64)
    inputs = {"x": (rng.standard_normal((B, T, FE)) * x_scale).astype(dt),
              "labels": labels.astype(dt),
              "pw": (rng.random(C) * 3 + 0.2).astype(dt)}
    ctx.set_inputs(inputs)
    ctx.forward_backward()
    loss, grads = reference(weights, inputs)
    tol = 1e-12 if f64 else 1e-5
    nt.check("%s loss" % name, ctx.output("loss"), loss, tol)
    for k in ("x", "labels", "pw"):
        nt.check("%s grad.%s" % (name, k), ctx.output("grad." + k), grads[k], tol)


def main():
    for f64 in (False, True):
        p = "f64" if f64 else "f32"
        case("%s soft targets" % p, f64, 1.0, False)
        case("%s hard targets, |x| to 60" % p, f64, 20.0, True)
    nt.finish()


if __name__ == "__main__":
    sys.exit(main())
