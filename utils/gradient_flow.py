#!/usr/bin/env python3
"""The seed notes' gradient-flow experiment (annex 5.3), trained through nncc.

    python3 utils/gradient_flow.py [--out DIR] [--epochs 20] [--seed 0]

Data (annex 5.3.1, n = 1000, d = 10):
    X_base ~ N(0, I_10);  X_corr = X_base C,  C = 0.8 on the diagonal, 0.3 off it
    X_nl = sin(X_corr) + cos(2 X_corr) + 0.5 eps1;  X = X_nl * M,  M_ij ~ Bernoulli(0.7)
    y = X + 0.15 eps2;  eps1, eps2 ~ N(0, 1)
Split: the first 800 samples train, the last 200 are the held-out test set.

Models: models/deep_mlp.nn and models/residual_mlp.nn (15 layers of width 50,
LeakyReLU 0.3, dropout 0.3 — the models' own dropout, fresh masks each step)
compiled with `nncc compile --grad` and driven through the C ABI (ctypes,
utils/nncc_train.py). Training: full batch (one step per epoch), Adam lr 1e-3
(the models' train clause), MSE, 20 epochs. Additive input noise is done
HERE, in the script: each epoch the training inputs are x + N(0, 0.1^2)
(the annex gives no sigma; 0.1 is our choice). Both models start from
PyTorch's default init drawn from the same seed.

Recorded each epoch, for each of the 15 layers (stem.fc = layer 1,
hidden.<i>.fc = layer i + 2): ||grad W_l||_F of the full-batch gradient of
that epoch's step (before the update), the training loss, and the test MSE
(inference mode: no dropout, no noise). Outputs in --out:
    gradient_flow.csv   model,epoch,layer,grad_norm,train_loss,test_mse
    gradient_flow.png   mean gradient norm per layer (log scale), both models,
                        and the per-epoch norms of the first/last layer
and a summary on stdout (final test MSE, ratio of the largest to the
smallest mean layer norm per model).
"""
import argparse
import csv
import os
import sys

import numpy as np

import nncc_train as NT  # utils/, the script's directory

HERE = os.path.dirname(os.path.abspath(__file__))

ROOT = os.path.dirname(HERE)
LAYERS = 15


def make_data(n=1000, d=10, seed=0):
    rng = np.random.default_rng(seed)
    x_base = rng.standard_normal((n, d))
    c = np.full((d, d), 0.3)
    np.fill_diagonal(c, 0.8)
    x_corr = x_base @ c
    x_nl = np.sin(x_corr) + np.cos(2 * x_corr) + 0.5 * rng.standard_normal((n, d))
    mask = rng.random((n, d)) < 0.7
    x = x_nl * mask
    y = x + 0.15 * rng.standard_normal((n, d))
    return x.astype(np.float32), y.astype(np.float32)


def layer_names():
    return ["stem.fc.weight"] + ["hidden.%d.fc.weight" % i for i in range(LAYERS - 1)]


def train(model_path, x_tr, y_tr, x_te, y_te, epochs, seed, noise):
    lib = NT.TrainLib.compile(model_path)
    ctx = lib.context(seed=seed)
    rng = np.random.default_rng(seed + 1)
    rows = []
    for epoch in range(1, epochs + 1):
        xn = (x_tr + noise * rng.standard_normal(x_tr.shape)).astype(np.float32)
        ctx.set_inputs({"x": xn, "y": y_tr})
        ctx.train_step()  # the model's train clause: Adam lr 1e-3
        loss = float(ctx.output("loss"))
        norms = [float(np.linalg.norm(ctx.output("grad." + n))) for n in layer_names()]
        ctx.set_inputs({"x": x_te, "y": y_te})
        ctx.forward()
        test = float(ctx.output("loss"))
        for l, g in enumerate(norms):
            rows.append((lib.name, epoch, l + 1, g, loss, test))
    ctx.close()
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "gradient_flow"))
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--noise", type=float, default=0.1, help="std of the additive input noise")
    ap.add_argument("--no-plot", action="store_true")
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    x, y = make_data(seed=a.seed)
    x_tr, y_tr, x_te, y_te = x[:800], y[:800], x[800:], y[800:]
    rows = []
    for m in ("deep_mlp", "residual_mlp"):
        rows += train(os.path.join(ROOT, "models", m + ".nn"), x_tr, y_tr, x_te, y_te,
                      a.epochs, a.seed, a.noise)
    csv_path = os.path.join(a.out, "gradient_flow.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "epoch", "layer", "grad_norm", "train_loss", "test_mse"])
        for r in rows:
            w.writerow([r[0], r[1], r[2], "%.9g" % r[3], "%.9g" % r[4], "%.9g" % r[5]])
    print("wrote", csv_path)
    summary = {}
    for m in ("deep_mlp", "residual_mlp"):
        mean = np.array([np.mean([r[3] for r in rows if r[0] == m and r[2] == l])
                         for l in range(1, LAYERS + 1)])
        final = [r for r in rows if r[0] == m and r[1] == a.epochs]
        summary[m] = mean
        print("%-13s test MSE %.4f  train loss %.4f  mean |grad W_l|: layer 1 %.3g, "
              "layer 15 %.3g, max/min over layers %.3g, layer15/layer1 %.3g" % (
                  m, final[0][5], final[0][4], mean[0], mean[-1], mean.max() / mean.min(),
                  mean[-1] / mean[0]))
    if not a.no_plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(1, 2, figsize=(11, 4))
        for m, lab in (("deep_mlp", "Deep MLP"), ("residual_mlp", "Residual MLP")):
            ax[0].semilogy(range(1, LAYERS + 1), summary[m], "o-", label=lab)
            for l, ls in ((1, "-"), (LAYERS, "--")):
                ep = [r[1] for r in rows if r[0] == m and r[2] == l]
                g = [r[3] for r in rows if r[0] == m and r[2] == l]
                ax[1].semilogy(ep, g, ls, label="%s, layer %d" % (lab, l))
        ax[0].set_xlabel("layer (1 = input side)")
        ax[0].set_ylabel("mean ||grad W_l|| over epochs")
        ax[0].set_title("Gradient norm across depth")
        ax[0].legend()
        ax[1].set_xlabel("epoch")
        ax[1].set_ylabel("||grad W_l||")
        ax[1].set_title("First and last layer during training")
        ax[1].legend(fontsize=8)
        fig.tight_layout()
        png = os.path.join(a.out, "gradient_flow.png")
        fig.savefig(png, dpi=110)
        print("wrote", png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
