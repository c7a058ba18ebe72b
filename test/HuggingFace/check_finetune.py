"""Fine-tuning an imported checkpoint: nncc train against transformers + torch.

A BertForSequenceClassification (3 classes, random weights, dropout 0) is
imported and fine-tuned for 50 steps by `nncc train` (AdamW with decoupled
weight decay on all but biases and LayerNorms, linear warm-up and decay,
gradient clipping at 1.0 — transformers.Trainer's recipe — batches in data
order), and by the same loop written with torch and the transformers model
from the same checkpoint (torch.optim.AdamW, get_linear_schedule_with_warmup,
clip_grad_norm_). Compared per step: the loss, the gradient norm and the
learning rate; then the validation accuracy and macro F1 of both.

usage: check_finetune.py NNCC OUT_DIR [float64]
"""
import csv
import json
import os
import re
import subprocess
import sys

import numpy as np
import torch
import transformers
from safetensors.numpy import save_file

from hf_common import config, make

NNCC, OUT = sys.argv[1], sys.argv[2]
F64 = len(sys.argv) > 3 and sys.argv[3] == "float64"
dtype = torch.float64 if F64 else torch.float32
N, NV, T, B, C, STEPS, WARMUP, LR, WD = 40, 24, 12, 8, 3, 50, 5, 1e-3, 0.01

model = make(transformers.BertForSequenceClassification, config("bert", num_labels=C), 11)
src = os.path.join(OUT, "hf")
model.save_pretrained(src, safe_serialization=True)
subprocess.run([NNCC, "import-hf", src, "-o", os.path.join(OUT, "nncc")], check=True,
               stdout=subprocess.DEVNULL)


def dataset(n, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 61, (n, T), generator=g)
    mask = torch.ones(n, T, dtype=torch.long)
    lengths = torch.randint(4, T + 1, (n,), generator=g)
    for i, l in enumerate(lengths):
        mask[i, l:] = 0
    types = (torch.arange(T)[None, :] >= lengths[:, None] // 2).long() * mask
    # Labels that depend on the tokens, so there is something to learn.
    labels = (ids[:, 0] + ids[:, 1]) % C
    return dict(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=labels)


train, val = dataset(N, 1), dataset(NV, 2)
for name, d in (("train", train), ("val", val)):
    save_file({k: v.numpy().astype(np.int32) for k, v in d.items()},
              os.path.join(OUT, name + ".safetensors"))

# The recipe in the model's train clause.
path = os.path.join(OUT, "nncc", "model.nn")
source = open(path).read()
clause = ("  train {\n    optimizer adamw(lr: %g, betas: [0.9, 0.999], eps: 1e-8, weight_decay: %g)\n"
          "    schedule linear(warmup: %d, total: %d)\n    clip 1.0\n    epochs %d\n    batch %d\n  }\n"
          % (LR, WD, WARMUP, STEPS, STEPS * B // N, B))
source, n = re.subn(r"  train \{.*?\n  \}\n", clause, source, flags=re.S)
assert n == 1, "no train clause in the imported model"
open(path, "w").write(source)

log = os.path.join(OUT, "log.csv")
subprocess.run([NNCC, "train", path, "--weights", os.path.join(OUT, "nncc", "model.safetensors"),
                "--data", os.path.join(OUT, "train.safetensors"),
                "--validation", os.path.join(OUT, "val.safetensors"), "--no-shuffle",
                "--metrics", "accuracy,macro_f1", "--metrics-json", os.path.join(OUT, "metrics.json"),
                "--log", log, "-o", os.path.join(OUT, "tuned.safetensors"), "--quiet"]
               + (["--precision", "f64"] if F64 else []), check=True)
rows = list(csv.DictReader(open(log)))
ours = [(float(r["lr"]), float(r["loss"]), float(r["grad_norm"])) for r in rows]
metrics = json.load(open(os.path.join(OUT, "metrics.json")))["epochs"][-1]  # after the last step

# The same with torch. Decay: every weight but biases and LayerNorms, as
# Trainer's get_decay_parameter_names (and nncc's param groups).
ref = transformers.BertForSequenceClassification.from_pretrained(src, attn_implementation="eager").to(dtype)
ref.train()
decay = [p for n, p in ref.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n)]
rest = [p for n, p in ref.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": WD}, {"params": rest, "weight_decay": 0.0}],
                        lr=LR, betas=(0.9, 0.999), eps=1e-8)
sched = transformers.get_linear_schedule_with_warmup(opt, WARMUP, STEPS)
theirs = []
for step in range(STEPS):
    i = (step * B) % N
    batch = {k: v[i:i + B] for k, v in train.items()}
    lr = opt.param_groups[0]["lr"]
    loss = ref(**batch).loss
    opt.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(ref.parameters(), 1.0)
    opt.step()
    sched.step()
    theirs.append((lr, loss.item(), norm.item()))

ref.eval()
with torch.no_grad():
    val_out = ref(**val)
    pred = val_out.logits.argmax(-1)
y = val["labels"]
accuracy = (pred == y).double().mean().item()
f1 = []
for c in range(C):
    tp = ((pred == c) & (y == c)).sum().item()
    fp = ((pred == c) & (y != c)).sum().item()
    fn = ((pred != c) & (y == c)).sum().item()
    f1.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)

tol = 1e-10 if F64 else 1e-4
if os.environ.get("NNCC_DEBUG"):
    for x, y in zip(ours, theirs):
        print(x, y)
a, b = np.array(ours), np.array(theirs)
assert a.shape == b.shape, (a.shape, b.shape)
rel = np.abs(a - b) / np.maximum(np.abs(b), 1e-12)
worst = rel.max(axis=0)
print("%s: %d steps, lr %s, loss %s, grad_norm %s; loss %.4f -> %.4f" % (
    "f64" if F64 else "f32", len(a), *("ok" if w < tol else "%.3g" % w for w in worst), a[0, 1], a[-1, 1]))
acc_ok = abs(metrics["accuracy"] - accuracy) < 1e-12 and abs(metrics["macro_f1"] - np.mean(f1)) < 1e-9
val_loss = val_out.loss.item()
val_rel = abs(metrics["loss"] - val_loss) / abs(val_loss)
print("validation after step %d: accuracy %s, macro F1 %s, loss %s" % (
    metrics["step"],
    "equal" if abs(metrics["accuracy"] - accuracy) < 1e-12 else (metrics["accuracy"], accuracy),
    "equal" if abs(metrics["macro_f1"] - np.mean(f1)) < 1e-9 else (metrics["macro_f1"], np.mean(f1)),
    "ok" if val_rel < tol else "%.3g" % val_rel))
ok = (worst < tol).all() and acc_ok and val_rel < tol and metrics["step"] == STEPS and a[-1, 1] < a[0, 1]
print("OK" if ok else "FAILED")
sys.exit(0 if ok else 1)
