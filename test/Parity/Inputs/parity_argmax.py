"""argmax and max along one axis (Inputs/models/argmax_max.nn) against
PyTorch: the i32 indices exactly (ties: the first index, as torch.argmax),
the values, an accuracy, and the loss and every grad.<param> of
`nncc run --grad` (max's gradient goes to the selected element, as
torch.max(x, dim)) against torch.autograd in float64.
Metric: max|nncc - torch| / max(1, max|torch|) <= 1e-4."""
import torch
import torch.nn.functional as F
from common import model, nt

B, T, C, D = 3, 6, 5, 4


def reference(p, x, q, target):
    w, b = p["head.weight"], p["head.bias"]
    out = {}
    logits = x @ w.t() + b
    out["pred"] = torch.argmax(logits, -1).to(torch.int32)
    out["acc"] = (out["pred"] == target).to(x.dtype).mean()
    qf = q.to(x.dtype)
    out["tie"] = torch.argmax(qf, dim=-1).to(torch.int32)
    out["tie_t"] = torch.argmax(qf, dim=1, keepdim=True).to(torch.int32)
    out["tie_max"] = torch.max(qf, dim=-2).values
    out["top"] = torch.max(logits, dim=-1).values
    out["col"] = torch.max(logits, dim=0, keepdim=True).values
    out["loss"] = (F.cross_entropy(logits.reshape(-1, C), target.reshape(-1).long())
                   + out["top"].mean() + 0.5 * (out["col"] * out["col"]).sum())
    return out


def argmax_max():
    torch.manual_seed(5)
    head = torch.nn.Linear(D, C)
    nt.randomize_(head, scale=1.0)
    weights = nt.state_dict(head, "head.")
    x = torch.randn(B, T, D)
    q = torch.randint(0, 3, (B, T, C), dtype=torch.int32)  # many ties
    target = torch.randint(0, C, (B, T), dtype=torch.int32)
    inputs = {"x": x, "q": q, "target": target}
    m = model("argmax_max")
    out = m.run(weights, inputs)
    params = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in weights.items()}
    ref = reference(params, x.double(), q, target)
    # ties really occur (else the tie checks prove nothing)
    qf = q.double()
    assert int(((qf == qf.max(-1, keepdim=True).values).sum(-1) > 1).sum()) > 0
    for k in ("pred", "acc", "tie", "tie_t", "tie_max", "top", "col", "loss"):
        nt.check_exact_or_close("argmax_max %s" % k, out[k], ref[k].detach())
    nt.check_grads("argmax_max", m.nn, weights, inputs, ref["loss"], params)


if __name__ == "__main__":
    nt.run_cases({"argmax_max": argmax_max})
