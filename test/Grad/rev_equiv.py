"""A reversible encoder's gradients equal those of the same network run
without reversibility (issue 4, item 4).

Inputs/models/rev_encoder.nn (3 `reversible(F, G)` blocks, F = LN +
attention, G = LN + FFN) and Inputs/models/plain_encoder.nn (the same blocks
written out: split, y1 = x1 + F(x2), y2 = x2 + G(y1), concat; identical
parameter names) on the same weights and inputs, `nncc run --grad
--precision f64` on both. Every output, the loss and every grad.<param>:
err = max|rev - plain| / max(1, max|plain|) <= 1e-10.
Then `nncc compile --emit nn-grad`: the reversible model must save fewer
values (nn.save ops) than the plain one.
Also prints, for information, each model's worst error against a torch
float64 autograd reference on the same weights (which side is off when the
two disagree).
Usage: rev_equiv.py NNCC WORKDIR [gelu|relu]   (the FFN's activation; gelu
runs Inputs/models/{rev,plain}_encoder.nn, relu the *_relu.nn copies)
"""
import os
import re
import subprocess
import sys

import torch
import torch.nn.functional as F

import nncc_testing as nt

HERE = os.path.dirname(os.path.abspath(__file__))

TOL = 1e-10
M = os.path.join(HERE, "Inputs", "models")


def torch_ref(blocks, x, ty, act):
    """float64 autograd: {y, loss, grad.<param>}."""
    params = {}
    for k, mods in enumerate(blocks):
        for p, m in zip(("f.norm", "f.attn", "g.norm", "g.up", "g.down"), mods):
            m.double()
            for n, q in m.named_parameters():
                params["blocks.%d.%s.%s" % (k, p, n)] = q
    D = x.shape[-1] // 2
    x1, x2 = x.double().split(D, -1)
    for fn, fa, gn, gu, gd in blocks:
        h = fn(x2)
        y1 = x1 + fa(h, h, h, need_weights=False)[0]
        y2 = x2 + gd(act(gu(gn(y1))))
        x1, x2 = y1, y2
    y = torch.cat([x1, x2], -1)
    loss = F.mse_loss(y, ty.double())
    loss.backward()
    ref = {"y": y.detach(), "loss": loss.detach()}
    ref.update({"grad." + n: q.grad for n, q in params.items()})
    return ref


def main(work, act="gelu"):
    os.makedirs(work, exist_ok=True)
    sfx = "" if act == "gelu" else "_" + act
    B, T, D, FF = 2, 9, 8, 16
    w, blocks = {}, []
    for k in range(3):
        mods = (torch.nn.LayerNorm(D), torch.nn.MultiheadAttention(D, 2, batch_first=True),
                torch.nn.LayerNorm(D), torch.nn.Linear(D, FF), torch.nn.Linear(FF, D))
        for p, m in zip(("f.norm", "f.attn", "g.norm", "g.up", "g.down"), mods):
            w.update(nt.state_dict(nt.randomize_(m), "blocks.%d.%s." % (k, p)))
        blocks.append(mods)
    x, ty = torch.randn(B, T, 2 * D), torch.randn(B, T, 2 * D)
    inputs = {"x": x, "ty": ty}
    rev = nt.grad_run(os.path.join(M, "rev_encoder%s.nn" % sfx), w, inputs, precision="f64")
    plain = nt.grad_run(os.path.join(M, "plain_encoder%s.nn" % sfx), w, inputs, precision="f64")
    ref = torch_ref(blocks, x, ty, {"gelu": F.gelu, "relu": F.relu}[act])
    for name, got in (("reversible", rev), ("plain", plain)):
        e, k = max((nt.err(got[k], ref[k]), k) for k in ref)
        print("info: %s vs torch float64 autograd: worst err=%.3e (%s)" % (name, e, k))
    if sorted(rev) != sorted(plain):
        print("FAIL different results: %s vs %s" % (sorted(rev), sorted(plain)))
        return 1
    ngrad = sum(1 for k in rev if k.startswith("grad."))
    if ngrad != len(w):
        print("FAIL %d gradients for %d parameters" % (ngrad, len(w)))
        return 1
    worst, wname, fails = -1.0, "", 0
    for k in sorted(rev):
        a, b = rev[k], plain[k]
        if a.dtype != b.dtype or str(a.dtype) != "float64":
            print("FAIL %s dtypes %s / %s (want float64)" % (k, a.dtype, b.dtype))
            fails += 1
            continue
        e = nt.err(a, b)
        if not e <= TOL:
            print("FAIL %s err=%.3e tol=%.0e" % (k, e, TOL))
            fails += 1
        if e > worst:
            worst, wname = e, k
    print("%s reversible vs plain: %d tensors (outputs, loss, %d grads), worst err=%.3e (%s) "
          "tol=%.0e" % ("FAIL" if fails else "PASS", len(rev), ngrad, worst, wname, TOL))
    saves = {}
    for name in ("rev_encoder", "plain_encoder"):
        out = os.path.join(work, name + ".mlir")
        p = subprocess.run([nt.NNCC, "compile", os.path.join(M, name + sfx + ".nn"), "--emit",
                            "nn-grad", "-o", out], capture_output=True, text=True)
        if p.returncode != 0:
            print("FAIL nncc compile --emit nn-grad %s: %s%s" % (name, p.stdout, p.stderr))
            return 1
        with open(out) as f:
            saves[name] = len(re.findall(r"\bnn\.save\b", f.read()))
    ok = saves["rev_encoder"] < saves["plain_encoder"]
    print("%s nn.save ops: reversible %d < plain %d" % ("PASS" if ok else "FAIL",
                                                        saves["rev_encoder"], saves["plain_encoder"]))
    return 0 if (ok and not fails) else 1


if __name__ == "__main__":
    nt.NNCC = sys.argv[1]
    sys.exit(main(*sys.argv[2:4]))
