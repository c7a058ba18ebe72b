"""The qualitative result of the gradient-flow experiment (seed notes annex
5.3) from utils/gradient_flow.py's CSV: with gradient norms averaged over
the epochs, the residual MLP's per-layer norms stay within 10x across depth
and the plain deep MLP's decay with depth (from the output side towards the
input: the norm of layer 1 is more than 10x below that of layer 15, and the
log-norm falls on average going backwards through the layers)."""
import csv
import sys

import numpy as np

rows = list(csv.DictReader(open(sys.argv[1])))
mean = {}
for m in ("deep_mlp", "residual_mlp"):
    mean[m] = np.array([np.mean([float(r["grad_norm"]) for r in rows
                                 if r["model"] == m and int(r["layer"]) == l])
                        for l in range(1, 16)])
    print(m, " ".join("%.3g" % v for v in mean[m]))
res, deep = mean["residual_mlp"], mean["deep_mlp"]
slope = np.polyfit(np.arange(1, 16), np.log10(deep), 1)[0]
ok_res = res.max() / res.min() <= 10
ok_deep = deep[-1] / deep[0] > 10 and slope > 0
print("residual max/min %.3g (<= 10: %s); deep layer15/layer1 %.3g, log10 slope %.3f/layer (%s)"
      % (res.max() / res.min(), ok_res, deep[-1] / deep[0], slope, ok_deep))
print("PASS" if ok_res and ok_deep else "FAIL")
sys.exit(0 if ok_res and ok_deep else 1)
