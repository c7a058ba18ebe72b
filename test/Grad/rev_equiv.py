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
Usage: rev_equiv.py NNCC WORKDIR
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "Parity", "Inputs"))
sys.path.insert(0, os.path.join(HERE))

import torch  # noqa: E402

import common  # noqa: E402,F401
import nncc_testing as nt  # noqa: E402
from autograd_families import grad_run  # noqa: E402

TOL = 1e-10
M = os.path.join(HERE, "Inputs", "models")


def main(work):
    os.makedirs(work, exist_ok=True)
    B, T, D, FF = 2, 9, 8, 16
    w = {}
    for k in range(3):
        for p, m in (("f.norm", torch.nn.LayerNorm(D)),
                     ("f.attn", torch.nn.MultiheadAttention(D, 2, batch_first=True)),
                     ("g.norm", torch.nn.LayerNorm(D)), ("g.up", torch.nn.Linear(D, FF)),
                     ("g.down", torch.nn.Linear(FF, D))):
            w.update(nt.state_dict(nt.randomize_(m), "blocks.%d.%s." % (k, p)))
    x, ty = torch.randn(B, T, 2 * D), torch.randn(B, T, 2 * D)
    inputs = {"x": x, "ty": ty}
    rev = grad_run(os.path.join(M, "rev_encoder.nn"), w, inputs, precision="f64")
    plain = grad_run(os.path.join(M, "plain_encoder.nn"), w, inputs, precision="f64")
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
        p = subprocess.run([nt.NNCC, "compile", os.path.join(M, name + ".nn"), "--emit",
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
    sys.exit(main(sys.argv[2]))
