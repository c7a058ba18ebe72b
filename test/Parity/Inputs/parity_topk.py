"""topk (Inputs/models/topk.nn) against PyTorch: the values of torch.topk
and the i32 indices exactly (on tied rows those of torch.sort(descending,
stable=True)[:k], ascending index: torch.topk's CPU kernel orders ties
otherwise), and the loss and every grad.<param> of `nncc run --grad` (the
values' gradient scattered to the indices, as torch.topk's backward)
against torch.autograd in float64.
Metric: max|nncc - torch| / max(1, max|torch|) <= 1e-4."""
import torch
from common import model, nt

B, T, C, D = 3, 5, 6, 4


def stable_topk(x, k, dim):
    s = torch.sort(x, dim=dim, descending=True, stable=True)
    return s.values.narrow(dim, 0, k), s.indices.narrow(dim, 0, k).to(torch.int32)


def reference(p, x, q):
    w, b = p["head.weight"], p["head.bias"]
    out = {}
    logits = x @ w.t() + b
    r = torch.topk(logits, 3)
    out["v"], out["i"] = r.values, r.indices.to(torch.int32)
    out["tv"], out["ti"] = stable_topk(q.to(x.dtype), 4, -1)
    r = torch.topk(logits, 2, dim=-2)
    out["cv"], out["ci"] = r.values, r.indices.to(torch.int32)
    r = torch.topk(logits, k=6)
    out["av"], out["ai"] = r.values, r.indices.to(torch.int32)
    out["loss"] = (out["v"].mean() + 0.5 * (out["cv"] * out["cv"]).sum()
                   + (out["av"] * out["ai"].to(x.dtype)).mean())
    return out


def topk():
    torch.manual_seed(5)
    head = torch.nn.Linear(D, C)
    nt.randomize_(head, scale=1.0)
    weights = nt.state_dict(head, "head.")
    x = torch.randn(B, T, D)
    q = torch.randint(0, 3, (B, T, C), dtype=torch.int32)  # many ties
    inputs = {"x": x, "q": q}
    m = model("topk")
    out = m.run(weights, inputs)
    params = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in weights.items()}
    ref = reference(params, x.double(), q)
    # ties really occur, and torch.topk orders them otherwise somewhere
    qf = q.double()
    assert int(((qf == qf.max(-1, keepdim=True).values).sum(-1) > 1).sum()) > 0
    # the logits have no ties: the f64 reference's order is the f32 one's
    for k in ("v", "i", "tv", "ti", "cv", "ci", "av", "ai", "loss"):
        nt.check_exact_or_close("topk %s" % k, out[k], ref[k].detach())
    nt.check_grads("topk", m.nn, weights, inputs, ref["loss"], params)


if __name__ == "__main__":
    nt.run_cases({"topk": topk})
