"""Neural ODE (euler, rk4, dopri5) and ODE-RNN vs torch solver loops."""
import torch
from common import model, nt, rand, sd
from nncc_testing.refs import fixed

B = 5


def mlp_dyn(fc1, fc2):
    return lambda t, z: fc2(torch.tanh(fc1(z)))


def neural_ode():
    F, H, W = 4, 6, 10
    enc = nt.randomize_(torch.nn.Linear(F, H))
    f1, f2 = nt.randomize_(torch.nn.Linear(H, W)), nt.randomize_(torch.nn.Linear(W, H))
    g1, g2 = nt.randomize_(torch.nn.Linear(H, W)), nt.randomize_(torch.nn.Linear(W, H))
    w = dict(sd(enc, "encode"), **sd(f1, "f.fc1"), **sd(f2, "f.fc2"), **sd(g1, "g.fc1"),
             **sd(g2, "g.fc2"))
    x = rand(B, F)
    out = model("neural_ode").run(w, {"x": x})
    f = mlp_dyn(f1, f2)
    g = lambda t, z: g2(torch.tanh(g1(z))) - t * z
    with torch.no_grad():
        h0 = torch.tanh(enc(x))
        nt.check("neural_ode euler steps 7", out["he"], fixed(f, h0, 0.0, 1.0, 7, "euler"))
        nt.check("neural_ode rk4 steps 5", out["hr"], fixed(f, h0, 0.0, 1.0, 5, "rk4"))
        nt.check("neural_ode rk4 f(t, z) steps 6", out["ht"], fixed(g, h0, 0.5, 2.0, 6, "rk4"))
        # dopri5 (rtol 1e-7, atol 1e-9) against a converged fp64 solution
        gd = lambda t, z: torch.nn.functional.linear(
            torch.tanh(torch.nn.functional.linear(z, g1.weight.double(), g1.bias.double())),
            g2.weight.double(), g2.bias.double()) - t * z
        exact = fixed(gd, h0.double(), 0.5, 2.0, 2000, "rk4")
        nt.check("neural_ode dopri5 f(t, z) vs converged fp64 rk4", out["hd"], exact)


def ode_rnn():
    F, H, W = 3, 5, 8
    T = 6
    cell = nt.randomize_(torch.nn.GRUCell(F, H))
    f1, f2 = nt.randomize_(torch.nn.Linear(H, W)), nt.randomize_(torch.nn.Linear(W, H))
    head = nt.randomize_(torch.nn.Linear(H, 1))
    w = dict(sd(cell, "cell"), **sd(f1, "dynamics.fc1"), **sd(f2, "dynamics.fc2"),
             **sd(head, "head"))
    x = rand(B, T, F)
    times = torch.cumsum(torch.rand(B, T) * 0.8 + 0.05, 1)  # irregular, per row
    out = model("ode_rnn").run(w, {"x": x, "times": times})
    f = mlp_dyn(f1, f2)
    with torch.no_grad():
        h = torch.zeros(B, H)
        hs = []
        for i in range(T):
            if i > 0:  # h'_i = ODESolve(f, h_{i-1}, t_{i-1}, t_i), per-row interval
                h = fixed(f, h, times[:, i - 1:i], times[:, i:i + 1], 3, "rk4")
            h = cell(x[:, i], h)  # h_i = GRUCell(x_i, h'_i)
            hs.append(h)
        hs = torch.stack(hs, 1)
        pred = head(hs[:, -1])
    nt.check("ode_rnn hs", out["hs"], hs)
    nt.check("ode_rnn pred", out["pred"], pred)


def ode_rnn_t():
    """Dynamics that read t: per row, t runs over that row's own interval
    [t_{i-1,b}, t_{i,b}] ([B, 1], broadcast against z); euler and rk4."""
    F, H, W = 3, 8, 16
    T = 6
    cell = nt.randomize_(torch.nn.GRUCell(F, H))
    f1, f2 = nt.randomize_(torch.nn.Linear(H, W)), nt.randomize_(torch.nn.Linear(W, H))
    w = dict(sd(cell, "cell"), **sd(f1, "dynamics.fc1"), **sd(f2, "dynamics.fc2"))
    x = rand(B, T, F)
    times = torch.cumsum(torch.rand(B, T) * 0.8 + 0.05, 1) + torch.arange(B)[:, None]
    out = model("ode_rnn_t").run(w, {"x": x, "times": times})
    f = lambda t, z: f2(torch.tanh(f1(z))) - t * z
    with torch.no_grad():
        for name, method, steps in (("he", "euler", 4), ("hr", "rk4", 3)):
            h = torch.zeros(B, H)
            hs = []
            for i in range(T):
                if i > 0:
                    h = fixed(f, h, times[:, i - 1:i], times[:, i:i + 1], steps, method)
                h = cell(x[:, i], h)
                hs.append(h)
            nt.check("ode_rnn f(t, z) = mlp(z) - t z, %s %d steps, per-row times" % (method, steps),
                     out[name], torch.stack(hs, 1))


if __name__ == "__main__":
    nt.run_cases({"neural_ode": neural_ode, "ode_rnn": ode_rnn, "ode_rnn_t": ode_rnn_t})
