"""Comparisons, where and cast (Inputs/models/select_ops.nn) against PyTorch:
every output of the forward, then the loss and every grad.<param> of
`nncc run --grad` against torch.autograd (float64 reference on the same fp32
weights and inputs). Metric: max|nncc - torch| / max(1, max|torch|) <= 1e-4."""
import os

import numpy as np
import torch
import torch.nn.functional as F
from common import model, nt

B, T, V, D = 3, 7, 11, 4


def reference(p, tokens, other, keep, x):
    fc_w, fc_b, head_w, head_b = (p[k] for k in ("fc.weight", "fc.bias", "head.weight", "head.bias"))
    out = {}
    out["replaced"] = (tokens != other).to(x.dtype)
    out["same"] = tokens == other
    target = torch.where(keep, tokens, torch.full_like(tokens, -100))
    out["target"] = target
    out["big"] = (tokens >= 6).long() + (tokens < 2).long()
    y = x @ fc_w.t() + fc_b
    a, b = y[:, :, 0], y[:, :, 1]
    z = torch.where(a > b, a, 0.5 * b) + torch.where(keep, torch.full_like(a, 0.25), a * a)
    out["z"] = z
    out["wide"] = z
    out["count"] = keep.to(x.dtype).sum()
    logits = x @ head_w.t() + head_b
    out["gen"] = F.cross_entropy(logits.reshape(-1, V), target.reshape(-1).long(),
                                 ignore_index=-100) * out["count"]
    out["loss"] = out["gen"] + 2.0 * (z * out["replaced"]).mean()
    return out


def select_ops():
    torch.manual_seed(3)
    fc, head = torch.nn.Linear(D, 2), torch.nn.Linear(D, V)
    nt.randomize_(fc, scale=1.0)
    nt.randomize_(head)
    weights = dict(nt.state_dict(fc, "fc."), **nt.state_dict(head, "head."))
    tokens = torch.randint(0, V, (B, T), dtype=torch.int32)
    other = tokens.clone()
    other[torch.rand(B, T) < 0.4] = 3  # some equal, some not
    keep = torch.rand(B, T) < 0.5
    keep[0, 0] = True
    x = torch.randn(B, T, D)
    inputs = {"tokens": tokens, "other": other, "keep": keep, "x": x}
    m = model("select_ops")
    out = m.run(weights, inputs)
    params = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in weights.items()}
    ref = reference(params, tokens, other, keep, x.double())
    for k in ("replaced", "same", "target", "big", "z", "wide", "count", "gen", "loss"):
        nt.check_exact_or_close("select_ops %s" % k, out[k], ref[k].detach())
    nt.check_grads("select_ops", m.nn, weights, inputs, ref["loss"], params)


if __name__ == "__main__":
    nt.run_cases({"select_ops": select_ops})
