"""PyTorch references for the ops test/Run/ops.test runs through `nncc run`.

  ref_ops.py MODEL WEIGHTS INPUTS OUTPUTS
MODEL: recurrent | cells | ode | odernn. Prints the max error per output.
"""
import sys

import torch

from nncc_testing.refs import cho_cell, cho_gru, fixed
from nncc_testing.safetensors import load_safetensors

torch.set_default_dtype(torch.float64)


def load(path):
    """{name: f64 or i64 tensor} of a safetensors file."""
    return {name: torch.from_numpy(a).to(torch.float64 if a.dtype.kind == "f" else torch.int64)
            for name, a in load_safetensors(path).items()}


def sub(w, prefix):
    return {k[len(prefix) + 1:]: v for k, v in w.items() if k.startswith(prefix + ".")}


def packed(mod, x, lengths):
    T = x.shape[1]
    p = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    y, state = mod(p)
    y, _ = torch.nn.utils.rnn.pad_packed_sequence(y, batch_first=True, total_length=T)
    return y, state


def check(results, got, tol):
    worst = 0.0
    for name, ref in results.items():
        err = (got[name] - ref).abs().max().item()
        print("%-8s max abs err %.3g" % (name, err))
        worst = max(worst, err)
        assert err <= tol, "%s differs from PyTorch by %g (> %g)" % (name, err, tol)
    print("OK")


def main():
    model, wpath, ipath, opath = sys.argv[1:5]
    w, inp, got = load(wpath), load(ipath), load(opath)
    res = {}
    if model == "recurrent":
        x, L = inp["x"], inp["lengths"]
        lstm = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)
        lstm.load_state_dict(sub(w, "lstm_enc"))
        res["ly"], (res["lh"], res["lc"]) = packed(lstm, x, L)
        gru = torch.nn.GRU(3, 4, bidirectional=True, batch_first=True)
        gru.load_state_dict(sub(w, "gru_enc"))
        res["gy"], res["gh"] = packed(gru, x, L)
        rnn = torch.nn.RNN(3, 4, bidirectional=True, batch_first=True, nonlinearity="relu")
        rnn.load_state_dict(sub(w, "rnn_enc"))
        res["ry"], res["rh"] = packed(rnn, x, L)
        # Cho et al. GRU, 2 layers, state frozen past each length.
        res["cy"], res["ch"] = cho_gru(sub(w, "cho_enc"), x, L, None, 2, 1)
        check(res, got, 2e-5)
    elif model == "cells":
        x, h, c = inp["x"], inp["h"], inp["c"]
        l = torch.nn.LSTMCell(3, 5)
        l.load_state_dict(sub(w, "l"))
        res["lh"], res["lc"] = l(x, (h, c))
        g = torch.nn.GRUCell(3, 5)
        g.load_state_dict(sub(w, "g"))
        res["gh"] = g(x, h)
        r = torch.nn.RNNCell(3, 5)
        r.load_state_dict(sub(w, "r"))
        res["rh"] = r(x, h)
        gc = sub(w, "gc")
        res["ch"] = cho_cell(x, h, gc["weight_ih"], gc["weight_hh"], gc["bias_ih"], gc["bias_hh"])
        check(res, got, 1e-5)
    elif model in ("ode", "odernn"):
        f = sub(w, "f")

        def dyn(t, z, with_t):
            y = torch.tanh(z @ f["fc1.weight"].T + f["fc1.bias"]) @ f["fc2.weight"].T + f["fc2.bias"]
            return y + t if with_t else y

        def rk4(fn, h, t0, t1, steps):  # t0, t1: scalars or [B, 1]
            return fixed(fn, h, t0, t1, steps, "rk4")

        if model == "ode":
            fn = lambda t, z: dyn(t, z, True)  # noqa: E731
            h = inp["h0"]
            he = h.clone()
            dt = 1.5 / 30
            for s in range(30):
                he = he + dt * fn(s * dt, he)
            res["euler"] = he
            res["rk4"] = rk4(fn, h, 0.0, 1.5, 8)
            check(res, got, 2e-5)
            # Adaptive dopri5 (rtol 1e-6) against a converged solution.
            check({"dopri5": rk4(fn, h, 0.0, 1.5, 2000)}, got, 2e-5)
        else:
            cell = torch.nn.GRUCell(2, 4)
            cell.load_state_dict(sub(w, "cell"))
            x, times = inp["x"], inp["times"]
            B, T, _ = x.shape
            fn = lambda t, z: dyn(t, z, False)  # noqa: E731

            def odernn(steps):
                h = torch.zeros(B, 4)
                hs = []
                for i in range(T):
                    if i > 0:  # Rubanova: the first observation is read at t_0
                        h = rk4(fn, h, times[:, i - 1:i], times[:, i:i + 1], steps)
                    h = cell(x[:, i], h)
                    hs.append(h)
                return torch.stack(hs, 1)

            res["hs"] = odernn(3)
            check(res, got, 2e-5)
            check({"hd": odernn(400)}, got, 5e-5)
    else:
        raise SystemExit("unknown model " + model)


if __name__ == "__main__":
    with torch.no_grad():
        main()
