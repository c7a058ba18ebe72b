"""PyTorch side of cmake-package.test: `weights OUT` writes gru_forecaster's
weights (PyTorch names) as safetensors; `check WEIGHTS OUTPUT` recomputes the
prediction and loss of forecast.cpp's inputs with a PyTorch Cho-2014 GRU and
compares them with the C++ program's output."""
import math
import sys

import torch
import torch.nn.functional as F
from nncc_testing import library as nt
from nncc_testing.refs import cho_gru
from nncc_testing.safetensors import load_safetensors, save_safetensors

B, T, Fd, H = 3, 5, 6, 64
LENGTHS = [5, 3, 1]


def weights(path):
    torch.manual_seed(3)
    rnn, head = torch.nn.GRU(Fd, H, batch_first=True), torch.nn.Linear(H, 1)
    nt.randomize_(rnn)
    nt.randomize_(head, scale=0.5)
    save_safetensors(path, dict(nt.state_dict(rnn, "encoder."), **nt.state_dict(head, "head.")))


def check(path, output):
    w = {k: torch.as_tensor(v) for k, v in load_safetensors(path).items()}
    x = torch.tensor([math.sin(0.37 * i) for i in range(B * T * Fd)], dtype=torch.float32)
    x = x.reshape(B, T, Fd)
    nxt = torch.tensor([[0.1 * b - 0.05] for b in range(B)], dtype=torch.float32)
    enc = {k[len("encoder."):]: v for k, v in w.items() if k.startswith("encoder.")}
    with torch.no_grad():
        _, hn = cho_gru(enc, x, LENGTHS, None, 1, 1)
        pred = F.linear(hn[-1], w["head.weight"], w["head.bias"])
    got = {"pred": [], "loss": []}
    for line in open(output):
        name, value = line.split()
        got[name].append(float(value))
    nt.check("pred (installed nncc vs PyTorch)", torch.tensor(got["pred"]).reshape(B, 1), pred)
    nt.check("loss (installed nncc vs PyTorch)", torch.tensor(got["loss"][0]), F.mse_loss(pred, nxt))
    nt.finish()


if __name__ == "__main__":
    {"weights": lambda: weights(sys.argv[2]), "check": lambda: check(sys.argv[2], sys.argv[3])}[sys.argv[1]]()
