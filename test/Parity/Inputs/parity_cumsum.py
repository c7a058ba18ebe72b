"""cumsum along one axis (Inputs/models/cumsum.nn) against PyTorch: float
running sums forward and reverse (torch.cumsum, and torch.flip around it),
integer ones exactly (i32 and i64; RoBERTa's position ids, transformers'
create_position_ids_from_input_ids), and the loss and every grad.<param> of
`nncc run --grad` against torch.autograd in float64.
Metric: max|nncc - torch| / max(1, max|torch|) <= 1e-4."""
import torch
from common import model, nt

B, T, D, PAD = 3, 7, 4, 1


def reference(p, x, ids):
    h = x @ p["head.weight"].t() + p["head.bias"]
    out = {"run": torch.cumsum(h, 1), "back": torch.flip(torch.cumsum(torch.flip(h, [-1]), -1), [-1])}
    keep = (ids != PAD).to(torch.int32)
    # transformers.models.roberta: create_position_ids_from_input_ids
    out["position_ids"] = (torch.cumsum(keep, dim=1).type_as(keep) * keep + PAD).to(torch.int32)
    out["wide"] = torch.flip(torch.cumsum(torch.flip(ids.long(), [-1]), -1), [-1])
    out["loss"] = (out["run"] * out["run"]).mean() + (out["back"] * h).mean()
    return out


def cumsum():
    torch.manual_seed(3)
    head = torch.nn.Linear(D, D)
    nt.randomize_(head, scale=1.0)
    weights = nt.state_dict(head, "head.")
    x = torch.randn(B, T, D)
    ids = torch.randint(0, 6, (B, T), dtype=torch.int32)
    ids[1, 4:] = PAD          # right padding
    ids[2, 0] = PAD           # and a pad token before real ones
    inputs = {"x": x, "input_ids": ids}
    m = model("cumsum")
    out = m.run(weights, inputs)
    params = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in weights.items()}
    ref = reference(params, x.double(), ids)
    for k in ("run", "back", "position_ids", "wide", "loss"):
        nt.check_exact_or_close("cumsum %s" % k, out[k], ref[k].detach())
    nt.check_grads("cumsum", m.nn, weights, inputs, ref["loss"], params)


if __name__ == "__main__":
    nt.run_cases({"cumsum": cumsum})
