"""PyTorch references of datamove.mlir: ref_datamove.py INPUTS OUTPUTS."""
import math
import sys

import torch

from ref_ops import check, load  # test/Run/Inputs, the script's directory

inp, got = load(sys.argv[1]), load(sys.argv[2])
a, b, c = inp["a"], inp["b"], inp["c"]
B, T, E = a.shape
pos = torch.arange(T).unsqueeze(1)
div = torch.exp(torch.arange(0, E, 2) * (-math.log(10000.0) / E))
pe = torch.zeros(T, E)
pe[:, 0::2] = torch.sin(pos * div)
pe[:, 1::2] = torch.cos(pos * div)
cc = torch.cat([a, a], 2)
res = {"mm1": a @ b, "mm2": a @ c, "tr": a.permute(2, 0, 1), "sl": a[:, -1, 1::2], "cc": cc,
       "sp1": cc[..., :3], "sp2": cc[..., 3:], "sm": torch.softmax(a, 1), "rs": a.sum(1),
       "rm": a.mean(), "cp": a, "fl": torch.full((B, 3), 2.5), "pe": a + pe}
with torch.no_grad():
    check(res, got, 1e-5)
