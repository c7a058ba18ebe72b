#!/usr/bin/env python3
"""`nncc train --freeze` (ABI 10 set_frozen) against PyTorch with those
parameters' requires_grad=False.

The torch side is nncc.torch.Module over the same model (f64, the library's
forward and vector-Jacobian product) driven by torch.optim.AdamW with one
group per trainable parameter (lr = base x layer_decay^depth, weight decay 0
on biases and norms, as `nncc inspect` gives them), clip_grad_norm_ over the
parameters that require gradients and LambdaLR with eq. 3.2 — so the frozen
parameters get no gradient (None), no step, no decay, no state and count in
no norm. Checked, on a model whose clip is active on every step:

 1. every step's loss and pre-clipping gradient norm of `nncc train
    --freeze` equal torch's (1e-8: the CSV's 9 digits); the final weights
    equal torch's (f64, 1e-10 relative); the frozen ones are bit-identical
    to the start in both; the module gave them no gradient;
 2. negative control: without --freeze they move, and the first step's
    gradient norm is larger (the frozen parameters' gradients count there);
 3. --freeze-file with the same patterns is the same run, bit for bit;
 4. resuming: a run stopped after 3 steps with --save-state has zero
    optimizer state for the frozen parameters (nonzero for the others) and
    records them (metadata nncc_frozen); --resume with or without --freeze
    ends bit-identical to the uninterrupted run;
 5. f32: the frozen parameters are bit-identical to the start too.

    check_freeze.py NNCC MODEL.nn WORKDIR
"""
import fnmatch
import json
import math
import os
import struct
import sys

import numpy as np
import torch

import nncc
import nncc.torch
from nncc_testing.safetensors import load_safetensors
from nncc_testing.train_runs import nncc_checked, random_data, train

nncc_exe, model, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
torch.set_default_dtype(torch.float64)
FAILS = []
# An exact name and globs; the trainable rest spans three lr depths
# (embeddings 3, encoder.0 1, the head 0), so layer decay is exercised.
PATTERNS = ["embed.word_embeddings.weight", "embed.LayerNorm.*", "encoder.1.*"]
B, N = 4, 16  # batch, samples: 4 steps an epoch, 2 epochs


def check(name, ok, detail=""):
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, (": " + detail) if detail else ""))
    if not ok:
        FAILS.append(name)


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(1e-300, np.max(np.abs(b))))


def metadata(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n).decode()).get("__metadata__", {})


data = os.path.join(work, "data.safetensors")
random_data(nncc_exe, model, data, ["B=%d" % N, "T=8"], seed=5)
inputs = load_safetensors(data)
sig = json.loads(nncc_checked(nncc_exe, ["inspect", model]))
params = [p["name"] for p in sig["parameters"]]
frozen = [p for p in params if any(fnmatch.fnmatchcase(p, pat) for pat in PATTERNS)]
trainable = [p for p in params if p not in frozen]
print("freeze %d of %d parameters" % (len(frozen), len(params)))

# The starting weights (a checkpoint being fine-tuned), f64.
lib = nncc.compile(model, f64=True, nncc=nncc_exe)
ctx = lib.context()
ctx.init_weights(11)
init_path = os.path.join(work, "init.safetensors")
ctx.save_weights(init_path)
ctx.close()
init = load_safetensors(init_path)

common = ["--precision", "f64", "--no-shuffle", "--batch", str(B), "--weights", init_path]
freeze_args = sum((["--freeze", p] for p in PATTERNS), [])
rows, w = train(nncc_exe, model, data, work, "frozen", common + freeze_args)

# ---- 1. torch with requires_grad=False ----
module = nncc.torch.Module(lib, weights=init_path)
named = dict(module.named_parameters())
check("the module's parameters are the model's", sorted(named) == sorted(params))
for name in frozen:
    named[name].requires_grad_(False)
cfg = lib.abi.train_config.contents
groups = []
for p in sig["parameters"]:
    if p["name"] in frozen:
        continue
    scale = cfg.layer_decay ** p["lr_depth"] if p["lr_depth"] else 1.0
    groups.append({"params": [named[p["name"]]], "lr": cfg.lr * scale,
                   "weight_decay": cfg.weight_decay if p["decay"] else 0.0})
opt = torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)
total = 2 * (N // B)
W = total * cfg.warmup_fraction if cfg.warmup < 0 else cfg.warmup


def eq32(t):  # MSc thesis eq. 3.2, as a multiplier of the base lr
    if t < W:
        return t / max(1, W)
    c = math.acos(2 * cfg.cycles - 1) / (2 * math.pi)
    return max(0.0, 0.5 * (1 + math.cos(2 * math.pi * c * (t - W) / max(1, total - W))))


sched = torch.optim.lr_scheduler.LambdaLR(opt, eq32)
losses, norms = [], []
for step in range(total):
    lo = (step * B) % N
    batch = [torch.from_numpy(inputs[s.name][lo:lo + B]) for s in lib.inputs]
    loss = module(*batch)[-1]
    opt.zero_grad()
    loss.backward()
    if step == 0:
        check("torch: the frozen parameters get no gradient",
              all(named[n].grad is None for n in frozen))
    norms.append(float(torch.nn.utils.clip_grad_norm_(
        [named[n] for n in trainable], cfg.clip)))
    losses.append(float(loss.detach()))
    opt.step()
    sched.step()
check("nncc train logged %d steps" % total, [int(r["step"]) for r in rows] == list(range(1, total + 1)))
check("the clip (%g) is active on every step" % cfg.clip, min(norms) > cfg.clip,
      "smallest norm %.3g" % min(norms))
e = rel([float(r["loss"]) for r in rows], losses)
check("loss per step = torch's", e <= 1e-8, "rel err %.2e" % e)
e = rel([float(r["grad_norm"]) for r in rows], norms)
check("gradient norm per step = torch's over the trainable parameters", e <= 1e-8,
      "rel err %.2e" % e)
worst = max(rel(w[n], named[n].detach().numpy()) for n in trainable)
check("trained parameters = torch's (f64)", worst <= 1e-10, "worst rel err %.2e" % worst)
check("trained parameters moved", all(not np.array_equal(w[n], init[n]) for n in trainable))
check("frozen parameters bit-identical to the start (nncc)",
      all(np.array_equal(w[n], init[n]) for n in frozen))
check("frozen parameters bit-identical to the start (torch)",
      all(np.array_equal(named[n].detach().numpy(), init[n]) for n in frozen))

# ---- 2. negative control ----
rows_all, w_all = train(nncc_exe, model, data, work, "all", common)
check("without --freeze the same parameters move",
      all(not np.array_equal(w_all[n], init[n]) for n in frozen))
check("without --freeze the first gradient norm is larger (the frozen ones count)",
      float(rows_all[0]["grad_norm"]) > float(rows[0]["grad_norm"]),
      "%s > %s" % (rows_all[0]["grad_norm"], rows[0]["grad_norm"]))

# ---- 3. --freeze-file ----
listing = os.path.join(work, "freeze.txt")
with open(listing, "w") as f:
    f.write("# the word embeddings, their norm and the last layer\n%s\n\n  %s  # comment\n%s\n"
            % tuple(PATTERNS))
_, w_file = train(nncc_exe, model, data, work, "file", common + ["--freeze-file", listing])
check("--freeze-file = --freeze, bit for bit", all(np.array_equal(w_file[n], w[n]) for n in params))

# ---- 4. resuming ----
state = os.path.join(work, "state.safetensors")
train(nncc_exe, model, data, work, "first", common + freeze_args +
      ["--max-steps", "3", "--save-state", state])
st = load_safetensors(state)
check("the state records the frozen parameters",
      metadata(state).get("nncc_frozen", "").split(",") == frozen, metadata(state).get("nncc_frozen"))
check("the frozen parameters' optimizer state is zero",
      all(not st["optimizer.%s.%s" % (k, n)].any() for n in frozen
          for k in ("exp_avg", "exp_avg_sq")))
check("the trainable parameters' optimizer state is not",
      all(st["optimizer.exp_avg_sq." + n].any() for n in trainable))
resume = [a for a in common if a not in ("--weights", init_path)]
for tag, extra in (("resumed", []), ("resumed-freeze", freeze_args)):
    rows_r, w_r = train(nncc_exe, model, data, work, tag, resume + extra + ["--resume", state])
    check("--resume %s= the uninterrupted run, bit for bit" % (" ".join(extra) + " " if extra else ""),
          all(np.array_equal(w_r[n], w[n]) for n in params) and
          [r["loss"] for r in rows_r] == [r["loss"] for r in rows[3:]])

# ---- 5. f32 ----
lib32 = nncc.compile(model, nncc=nncc_exe)
ctx = lib32.context()
ctx.init_weights(11)
init32_path = os.path.join(work, "init32.safetensors")
ctx.save_weights(init32_path)
ctx.close()
init32 = load_safetensors(init32_path)
_, w32 = train(nncc_exe, model, data, work, "f32", ["--no-shuffle", "--batch", str(B),
                                                     "--weights", init32_path] + freeze_args)
check("f32: frozen parameters bit-identical to the start",
      all(np.array_equal(w32[n], init32[n]) for n in frozen))
check("f32: trained parameters moved", all(not np.array_equal(w32[n], init32[n]) for n in trainable))

print("torch", torch.__version__)
if FAILS:
    sys.exit("FAILED: %s" % ", ".join(FAILS))
print("ALL PASSED")
