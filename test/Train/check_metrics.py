#!/usr/bin/env python3
"""`nncc train --metrics` and `nncc eval`: the classification metrics of the
validation set, accumulated over all of it, equal a reference computed here
(numpy) from the logits `nncc run` gives on the validation file with the
saved weights: the confusion matrix exactly, the metrics to 1e-12 (the
CSV's to its 9 digits). `nncc eval` on the same weights and file gives the
last epoch's figures. --best-by val_accuracy keeps the epoch with the
highest accuracy (the first of equal ones). Multi-label (binary targets):
label c is predicted when its logit is > 0; accuracy is the share of
samples with every label right, the per-label 2 x 2 confusion
[[tn, fp], [fn, tp]], macro means over every label, micro F1 over all
(sklearn's multilabel definitions).

    check_metrics.py NNCC MODEL.nn WORKDIR classifier|tagger|multilabel
"""
import csv
import json
import os
import sys

import numpy as np

from nncc_testing.safetensors import load_safetensors, save_safetensors
from nncc_testing.train_runs import nncc_checked, random_data

nncc, model, work, kind = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
tr, va = os.path.join(work, "train.safetensors"), os.path.join(work, "val.safetensors")
if kind == "classifier":
    random_data(nncc, model, tr, ["N=40"], seed=1)
    random_data(nncc, model, va, ["N=23"], seed=2)
    target, C, batch = "y", 3, "8"
elif kind == "multilabel":
    rng = np.random.default_rng(4)
    for path, B in ((tr, 40), (va, 23)):
        x = rng.standard_normal((B, 4)).astype(np.float32)
        y = np.stack([x[:, 0] > 0, x[:, 1] + x[:, 2] > 0.3, rng.random(B) < 0.2], 1)
        save_safetensors(path, {"x": x, "y": y.astype(np.float32)})
    target, C, batch = "y", 3, "8"
else:  # tokens [B, T], tags with -100 on padding (after each sequence's length)
    rng = np.random.default_rng(3)
    for path, B in ((tr, 12), (va, 9)):
        T = 6
        tokens = rng.integers(0, 12, (B, T)).astype(np.int32)
        tags = ((tokens % 4 + (rng.random((B, T)) < 0.3)) % 4).astype(np.int32)
        lengths = rng.integers(2, T + 1, B)
        tags[np.arange(T)[None, :] >= lengths[:, None]] = -100
        save_safetensors(path, {"tokens": tokens, "tags": tags})
    target, C, batch = "tags", 4, "4"


def reference(weights):
    out = os.path.join(work, "run_out.safetensors")
    nncc_checked(nncc, ["run", model, "--inputs", va, "--weights", weights, "--quiet", "-o", out])
    logits = np.asarray(load_safetensors(out)["logits"], dtype=np.float64).reshape(-1, C)
    if kind == "multilabel":
        return multilabel_reference(logits, np.asarray(load_safetensors(va)[target]) >= 0.5), \
            float(load_safetensors(out)["loss"])
    t = np.asarray(load_safetensors(va)[target]).reshape(-1).astype(np.int64)
    keep = t != -100
    pred = logits.argmax(axis=1)[keep]  # the first of equal maxima
    t = t[keep]
    cm = np.zeros((C, C), dtype=np.int64)
    np.add.at(cm, (t, pred), 1)
    tp, sup, prd = np.diag(cm), cm.sum(1), cm.sum(0)
    div = lambda a, b: np.where(b > 0, a / np.maximum(b, 1), 0.0)
    present = (sup > 0) | (prd > 0)
    prec, rec, f1 = div(tp, prd), div(tp, sup), div(2.0 * tp, prd + sup)
    return {"confusion": cm.tolist(), "samples": int(keep.sum()), "ignored": int((~keep).sum()),
            "accuracy": tp.sum() / len(t), "micro_f1": 2.0 * tp.sum() / (2.0 * len(t)),
            "macro_f1": f1[present].mean(), "macro_precision": prec[present].mean(),
            "macro_recall": rec[present].mean(), "precision": prec, "recall": rec, "f1": f1,
            "support": sup.tolist()}, float(load_safetensors(out)["loss"])


def multilabel_reference(logits, y):
    said = logits > 0
    tp, fp = (said & y).sum(0), (said & ~y).sum(0)
    fn, tn = (~said & y).sum(0), (~said & ~y).sum(0)
    div = lambda a, b: np.where(b > 0, a / np.maximum(b, 1), 0.0)
    prec, rec, f1 = div(tp, tp + fp), div(tp, tp + fn), div(2.0 * tp, 2 * tp + fp + fn)
    return {"confusion": [[[int(tn[c]), int(fp[c])], [int(fn[c]), int(tp[c])]] for c in range(C)],
            "samples": len(y), "ignored": 0, "accuracy": (said == y).all(1).mean(),
            "micro_f1": 2.0 * tp.sum() / (2.0 * tp.sum() + fp.sum() + fn.sum()),
            "macro_f1": f1.mean(), "macro_precision": prec.mean(), "macro_recall": rec.mean(),
            "precision": prec, "recall": rec, "f1": f1, "support": (tp + fn).tolist()}


NAMES = ["accuracy", "macro_f1", "micro_f1", "macro_precision", "macro_recall"]


def compare(what, got, ref, tol=1e-12):
    for k in ("confusion", "samples", "ignored", "support"):
        if got[k] != ref[k]:
            sys.exit("FAIL: %s: %s %s, expected %s" % (what, k, got[k], ref[k]))
    for k in NAMES:
        if abs(got[k] - ref[k]) > tol:
            sys.exit("FAIL: %s: %s %r, expected %r" % (what, k, got[k], ref[k]))
    for k in ("precision", "recall", "f1"):
        if np.abs(np.asarray(got[k]) - ref[k]).max() > tol:
            sys.exit("FAIL: %s: %s %s, expected %s" % (what, k, got[k], ref[k]))


# Two epochs with validation: the last epoch's figures against the reference.
log, js, w = (os.path.join(work, n) for n in ("log.csv", "metrics.json", "w.safetensors"))
out = nncc_checked(nncc, ["train", model, "--data", tr, "--validation", va, "--epochs", "2",
                          "--batch", batch, "--metrics", "classification", "--metrics-json", js,
                          "--log", log, "-o", w])
if len([l for l in out.splitlines() if l.startswith("epoch ") and "val_macro_f1 " in l]) != 2:
    sys.exit("FAIL: the epoch lines have no val_macro_f1:\n" + out)
doc = json.load(open(js))
if [e["epoch"] for e in doc["epochs"]] != [1, 2] or doc["labels" if kind == "multilabel" else "classes"] != C:
    sys.exit("FAIL: the JSON's epochs: %s" % doc)
ref, loss = reference(w)
last = doc["epochs"][-1]
compare("train --metrics-json", last, ref)
# (The tagger's val_loss is a mean of batch means over unequal token counts.)
if kind != "tagger" and abs(last["loss"] - loss) > 1e-6 * abs(loss):
    sys.exit("FAIL: val loss %r, nncc run %r" % (last["loss"], loss))
rows = [r for r in csv.DictReader(open(log)) if r["val_loss"]]
for k in NAMES:
    if abs(float(rows[-1]["val_" + k]) - ref[k]) > 1e-8:
        sys.exit("FAIL: CSV val_%s %s, expected %r" % (k, rows[-1]["val_" + k], ref[k]))

# nncc eval with the same weights and batch: the last epoch's figures.
ej = os.path.join(work, "eval.json")
eout = nncc_checked(nncc, ["eval", model, "--weights", w, "--data", va, "--batch", batch,
                           "--metrics", "classification", "--metrics-json", ej])
ev = json.load(open(ej))["metrics"]
compare("eval", ev, {k: (np.asarray(v) if k in ("precision", "recall", "f1") else v)
                     for k, v in last.items()}, tol=0)
if ev["loss"] != last["loss"]:
    sys.exit("FAIL: eval loss %r, the last epoch's %r" % (ev["loss"], last["loss"]))

# --best-by val_accuracy --keep-best: the saved weights are the epoch with the
# highest accuracy (the first of equal ones).
bw, blog = os.path.join(work, "best.safetensors"), os.path.join(work, "best.csv")
bout = nncc_checked(nncc, ["train", model, "--data", tr, "--validation", va, "--epochs", "5",
                           "--batch", batch, "--metrics", "accuracy", "--best-by",
                           "val_accuracy", "--keep-best", "--log", blog, "-o", bw])
accs = [float(r["val_accuracy"]) for r in csv.DictReader(open(blog)) if r["val_loss"]]
best = accs.index(max(accs)) + 1
if "saved the weights of epoch %d (val_accuracy" % best not in bout:
    sys.exit("FAIL: expected epoch %d (accuracies %s) kept:\n%s" % (best, accs, bout))
bref, _ = reference(bw)
if abs(bref["accuracy"] - max(accs)) > 1e-8:
    sys.exit("FAIL: the kept weights give accuracy %r, the best epoch %r" % (bref["accuracy"],
                                                                            max(accs)))
print("%s: confusion %s (%d counted, %d ignored), accuracy %.6f macro_f1 %.6f as the reference; "
      "eval equal; best-by val_accuracy kept epoch %d of %s" % (
          kind, ref["confusion"], ref["samples"], ref["ignored"], ref["accuracy"],
          ref["macro_f1"], best, ["%.4f" % a for a in accs]))
