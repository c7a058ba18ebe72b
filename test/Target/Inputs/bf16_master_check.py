"""The fp32 master weights of bf16 training, seen from the weights file:
`nncc train --precision bf16` with a learning rate whose every step is
below half a bf16 ulp of the larger weights, against the f32 run from the
same start.

Adam moves a weight by at most lr * (1 - beta1) / sqrt(1 - beta2) per step
(3.2 lr at the default betas; about lr in practice). With LR below
2^-4 * 2^-8 / 3.2 (7.6e-5), a step changes no weight of magnitude >= 2^-4 by half
its bf16 ulp, so bf16 parameters updated in place would never change;
updated through fp32 copies, the steps add up and the parameters move
where the f32 run's do. Checked over the large weights: at least 10% of
them changed (17.7% after 8 steps of the deep MLP at lr 5e-5), the bf16
result is the f32 result rounded for at least 90% (98.7%) and within one
bf16 ulp of it for 99.5% (100%): the runs' gradients differ by bf16's
error, so some weights land on the other side of a rounding boundary.

    bf16_master_check.py START_F32 F32_RESULT BF16_RESULT LR
"""
import sys

import numpy as np

from bf16_training import read_safetensors, widen
from nncc.library import _bf16_bits


def main(start, f32_result, bf16_result, lr):
    # bf16 keeps 8 significant bits: half an ulp of 2^-4 is 2^-4 * 2^-8.
    assert lr * (1 - 0.9) / (1 - 0.999) ** 0.5 < 2.0 ** -4 * 2.0 ** -8, "lr too large"
    w0, wf, wb = read_safetensors(start), read_safetensors(f32_result), read_safetensors(bf16_result)
    large = changed = agree = near = 0
    for name, (_, a0) in w0.items():
        dt, b = wb[name]
        assert dt == "BF16" and wf[name][0] == "F32"
        big = np.abs(a0) >= 2.0 ** -4
        large += int(big.sum())
        changed += int((big & (widen(b) != a0)).sum())
        r = _bf16_bits(wf[name][1])
        agree += int((big & (b == r)).sum())
        # Same sign here (the weights hardly moved): bit patterns 1 apart = 1 ulp.
        near += int((big & (np.abs(b.astype(np.int32) - r.astype(np.int32)) <= 1)).sum())
    moved, same, close = changed / max(large, 1), agree / max(large, 1), near / max(large, 1)
    ok = moved >= 0.1 and same >= 0.9 and close >= 0.995
    print("weights >= 2^-4 changed: %.1f%% of %d (bf16 in place: none could)" % (100 * moved, large))
    print("bf16 result == f32 result rounded: %.2f%% of them, within 1 ulp: %.2f%%" % (
        100 * same, 100 * close))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(main(a[0], a[1], a[2], float(a[3])))
