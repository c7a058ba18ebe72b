"""MLPs (LeakyReLU, GELU erf/tanh, tanh, sigmoid, ReLU), residual MLP, MSE."""
import torch
import torch.nn.functional as F
from common import model, nt, rand, sd
from nncc_testing.refs import MLP

N = 7


def mlp_act():
    D, H, O = 6, 12, 5
    leaky = nt.randomize_(MLP(D, H, O, 3, lambda x: F.leaky_relu(x, 0.3)))
    gel = nt.randomize_(MLP(D, H, O, 2, F.gelu))
    tan = nt.randomize_(MLP(D, H, O, 2, torch.tanh))
    fc1 = nt.randomize_(torch.nn.Linear(D, H))
    fc2 = nt.randomize_(torch.nn.Linear(H, O, bias=False))
    w = {}
    for p, m in (("leaky", leaky), ("gel", gel), ("tan", tan)):
        w.update(m.named(p))
    w.update(sd(fc1, "fc1"))
    w.update(sd(fc2, "fc2"))
    x, y = rand(N, D, scale=2.0), rand(N, O)
    out = model("mlp_act").run(w, {"x": x, "y": y})
    with torch.no_grad():
        a = leaky(x)
        ref = {"a": a, "b": gel(x), "c": tan(x), "d": fc2(torch.sigmoid(fc1(x))),
               "e": fc2(F.gelu(fc1(x), approximate="tanh") + F.relu(fc1(x)) * 0.5),
               "loss": F.mse_loss(a, y)}
    for k, v in ref.items():
        nt.check("mlp_act %s" % k, out[k], v)


def residual_mlp():
    D, W, L = 5, 16, 4
    stem = nt.randomize_(torch.nn.Linear(D, W))
    hidden = [nt.randomize_(torch.nn.Linear(W, W)) for _ in range(L)]
    head = nt.randomize_(torch.nn.Linear(W, D))
    w = dict(sd(stem, "stem.fc"), **sd(head, "head"))
    for k, l in enumerate(hidden):
        w.update(sd(l, "hidden.%d.fc" % k))
    x, y = rand(N, D), rand(N, D)
    with torch.no_grad():
        h = F.leaky_relu(stem(x), 0.3)
        for l in hidden:
            h = h + F.leaky_relu(l(h), 0.3)
        pred = head(h)
    out = model("residual_mlp").run(w, {"x": x, "y": y})
    nt.check("residual_mlp pred", out["pred"], pred)
    nt.check("residual_mlp loss", out["loss"], F.mse_loss(pred, y))


if __name__ == "__main__":
    nt.run_cases({"mlp_act": mlp_act, "residual_mlp": residual_mlp})
