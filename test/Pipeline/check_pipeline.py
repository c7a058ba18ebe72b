"""Structural checks of a `python -m nncc.pipeline run` folder (pipeline.test):
the files, the PNG's signature, curves.csv's columns and stages, metrics in
[0, 1], and the pretraining loss falling from the first epoch to the last.
Prints one line per check and OK; an assertion names what failed."""
import csv
import json
import os
import sys

COLUMNS = ["stage", "model", "epoch", "step", "lr", "loss", "gen_loss", "disc_loss",
           "val_loss", "val_gen_loss", "val_disc_loss", "val_accuracy", "val_macro_f1",
           "val_micro_f1"]
ENCODERS = ["electra_bert", "electra_reformer", "electra_reversible_dilated_bert"]


def main(run):
    for f in ["summary.json", "curves.csv", "curves.png", "tokenizer.json", "train.csv",
              "validation.csv", "test.csv", "pretrain.txt", "labels.json"] + \
             ["models/%s.nn" % m for m in ENCODERS] + ["%s.safetensors" % m for m in ENCODERS]:
        assert os.path.isfile(os.path.join(run, f)), "missing " + f
    with open(os.path.join(run, "curves.png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", "curves.png is not a PNG"
    print("files: PNG %d bytes" % os.path.getsize(os.path.join(run, "curves.png")))

    with open(os.path.join(run, "curves.csv"), newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == COLUMNS, reader.fieldnames
        rows = list(reader)
    stages = {}
    for r in rows:
        stages.setdefault((r["stage"], r["model"]), []).append(r)
    pre = sorted(m for s, m in stages if s == "pretrain")
    fine = sorted(m for s, m in stages if s == "finetune")
    assert pre == ENCODERS, pre
    assert len(fine) == 1, fine
    print("curves: %s" % ", ".join("%s %s %d rows" % (s, m, len(v)) for (s, m), v in sorted(stages.items())))
    for m in ENCODERS:
        rs = stages[("pretrain", m)]
        first = [float(r["loss"]) for r in rs if r["epoch"] == rs[0]["epoch"]]
        last = [float(r["loss"]) for r in rs if r["epoch"] == rs[-1]["epoch"]]
        assert rs[0]["epoch"] != rs[-1]["epoch"], m + ": one epoch"
        assert sum(last) / len(last) < sum(first) / len(first), m + ": the loss did not fall"
        vals = [float(r["val_disc_loss"]) for r in rs if r["val_disc_loss"]]
        assert len(vals) == int(rs[-1]["epoch"]), (m, vals)
    print("pretraining: the loss falls for all three encoders")
    rs = stages[("finetune", fine[0])]
    ep = [r for r in rs if r["val_accuracy"]]
    assert len(ep) == int(rs[-1]["epoch"]), len(ep)
    for r in ep:
        for k in ("val_accuracy", "val_macro_f1", "val_micro_f1"):
            assert 0.0 <= float(r[k]) <= 1.0, (k, r[k])
    print("fine-tuning: %d epochs, accuracy and F1 in [0, 1]" % len(ep))

    with open(os.path.join(run, "summary.json")) as f:
        s = json.load(f)
    assert [r["model"] for r in s["table2"]] == ENCODERS
    for r in s["table2"]:
        for k in ("train_loss", "val_loss", "val_gen_loss", "val_disc_loss"):
            assert isinstance(r[k], float) and r[k] > 0, (r["model"], k, r[k])
        assert r["discriminator_parameters"] > 0
    best = min(s["table2"], key=lambda r: r["val_disc_loss"])["model"]
    assert s["best"] == best, (s["best"], best)
    ft = s["finetune"]["pretrained"]
    for k in ("val_accuracy", "val_macro_f1", "val_micro_f1"):
        assert 0.0 <= ft["best"][k] <= 1.0, (k, ft["best"][k])
    t = ft["test"]
    for k in ("accuracy", "macro_f1", "micro_f1", "macro_precision", "macro_recall"):
        assert 0.0 <= t[k] <= 1.0, (k, t[k])
    n = len(s["corpus"]["classes"])
    assert len(t["confusion"]) == n and sum(map(sum, t["confusion"])) == s["corpus"]["test"]
    print("summary: best %s, %d classes, test accuracy and F1 in [0, 1]" % (s["best"], n))
    print("OK")


if __name__ == "__main__":
    main(sys.argv[1])
