"""nncc.torch.Module against PyTorch (run by the venv's python, with the
package installed by pip).

module_vs_torch.py MODEL.nn WORKDIR

The module (Inputs/seq_head.nn: 2-layer LSTM + linear head + cross-entropy)
sits between torch layers: a torch Linear before it (so its input gradient
flows on) and a loss on both of its outputs after it. The reference is
torch.nn.LSTM + Linear with the module's state_dict loaded unchanged."""
import copy
import os
import sys

import torch

import nncc
import nncc.torch

FAILED = []


def check(name, ok, detail=""):
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, (" " + detail) if detail else ""))
    if not ok:
        FAILED.append(name)


def close(name, a, b, tol=1e-5):
    e = float((a - b).abs().max() / max(1.0, float(b.abs().max())))
    check(name, e <= tol, "err=%.1e" % e)


class Reference(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(6, 8, 2, batch_first=True)
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x, target):
        logits = self.head(self.rnn(x)[0])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 3), target.reshape(-1).long())
        return logits, loss


def main():
    model_path, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    print("package: " + os.path.dirname(nncc.__file__))
    lib = nncc.compile(model_path, output_dir=os.path.join(work, "lib"))
    check("nncc.compile: %s, inputs %s, outputs %s" % (
        lib.name, [s.name for s in lib.inputs], [s.name for s in lib.outputs]), lib.has_vjp)
    torch.manual_seed(0)
    m = nncc.torch.Module(lib, seed=7)
    ref = Reference()
    missing = ref.load_state_dict(m.state_dict())
    check("state_dict names are PyTorch's (load_state_dict into torch.nn.LSTM + Linear)",
          not missing.missing_keys and not missing.unexpected_keys)

    B, T = 3, 5
    x0 = torch.randn(B, T, 4)
    target = torch.randint(0, 3, (B, T), dtype=torch.int32)
    pre = torch.nn.Linear(4, 6)
    pre_ref = copy.deepcopy(pre)

    def step(model, prelayer):
        logits, loss = model(prelayer(x0), target)
        total = loss + 0.1 * (logits ** 2).mean()
        total.backward()
        return logits, loss

    logits, loss = step(m, pre)
    rlogits, rloss = step(ref, pre_ref)
    close("logits", logits.detach(), rlogits.detach())
    close("loss", loss.detach(), rloss.detach())
    rgrads = dict(ref.named_parameters())
    worst = max(float((p.grad - rgrads[n].grad).abs().max()) for n, p in m.named_parameters())
    check("parameter gradients (loss and logits cotangents)", worst <= 1e-5, "err=%.1e" % worst)
    close("gradient through the module's input into a torch layer", pre.weight.grad,
          pre_ref.weight.grad)

    # Training with a torch optimizer: the same parameters after 3 steps.
    m2, ref2 = nncc.torch.Module(lib, seed=3), Reference()
    ref2.load_state_dict(m2.state_dict())
    for model in (m2, ref2):
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(3):
            opt.zero_grad()
            _, l = model(x0[..., :1].expand(B, T, 6).contiguous(), target)
            l.backward()
            opt.step()
    r2 = dict(ref2.named_parameters())
    worst = max(float((p - r2[n]).detach().abs().max()) for n, p in m2.named_parameters())
    check("3 Adam steps (torch.optim) give torch's parameters", worst <= 1e-5,
          "err=%.1e" % worst)

    # Eval mode, state_dict and torch.save round trips.
    m.eval()
    with torch.no_grad():
        a = m(x0[..., :1].expand(B, T, 6).contiguous(), target)[0]
        m3 = nncc.torch.Module(lib, seed=11)
        m3.load_state_dict(m.state_dict())
        m3.eval()
        close("load_state_dict into a new module", m3(x0[..., :1].expand(B, T, 6).contiguous(),
                                                      target)[0], a, 0)
        path = os.path.join(work, "module.pt")
        torch.save(m, path)
        try:  # a whole module: not torch >= 2.6's default (weights_only=True)
            m4 = torch.load(path, weights_only=False)
        except TypeError:  # a torch without weights_only
            m4 = torch.load(path)
        close("torch.save / torch.load of the module", m4(x0[..., :1].expand(B, T, 6).contiguous(),
                                                          target)[0], a, 0)
    xin = torch.randn(B, T, 6, requires_grad=True)
    try:
        m(xin, target)[1].backward()
        check("backward through an eval-mode forward: an nncc.Error", False)
    except nncc.Error as e:
        check("backward through an eval-mode forward: an nncc.Error", e.status == "UNSUPPORTED",
              str(e))
    m.train()

    # Typed errors.
    try:
        m(torch.randn(B, T, 7), target)
        check("a wrong input shape: nncc.Error", False)
    except nncc.Error as e:
        check("a wrong input shape: nncc.Error", e.status == "SHAPE_MISMATCH", str(e))
    try:
        m(torch.randn(B, T, 6))
        check("a missing input: nncc.Error", False)
    except nncc.Error as e:
        check("a missing input: nncc.Error", e.status == "INVALID_ARGUMENT", str(e))
    bad = os.path.join(work, "bad.nn")
    with open(bad, "w") as f:
        f.write("model bad {\n  dims B\n  input x: f32[B, 4]\n  forward {\n    output y = tanh(z)\n  }\n}\n")
    try:
        nncc.compile(bad, output_dir=os.path.join(work, "bad"))
        check("a malformed model: nncc.Error with its location", False)
    except nncc.Error as e:
        check("a malformed model: nncc.Error with its location",
              e.status == "COMPILE" and e.location is not None and e.location[1:] == (5, 21),
              str(e))
    print("FAILED: " + ", ".join(FAILED) if FAILED else "ALL PASSED")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
