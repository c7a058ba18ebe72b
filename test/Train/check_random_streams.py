"""Random streams (docs/training.md, "Random streams"), in f64 on the CPU
through the C ABI:

    check_random_streams.py NNCC MODEL.nn WORKDIR --dim B=N --dim T=N [--electra V]

- Micro-batch invariance: two SGD steps of train_step on the whole batch
  against accumulate_gradients / apply_gradients on micro-batches (even
  ones, which accumulate_gradients' own advancing offset places; uneven
  ones; and the batch's halves out of order, placed by set_sample_offset):
  every micro-batch draws its rows' masks and samples of the whole batch,
  so the losses, the gradient norms and the weights agree to rounding
  (relative 1e-12). A negative control (every micro-batch set to row 0:
  the streams before ABI 9) must differ, so the comparison would see a
  broken invariance.
- The run seed (set_seed): seeds 1 and 2 draw other masks (other losses;
  ELECTRA: other masked positions), the same seed reproduces bit for bit,
  and seed 0 is the library's default (the op seeds' own streams).

- `nncc train` (--train): 2B samples in batches of B in data order, whole
  against --micro-batch 2 with --seed 7: the same log (loss, grad_norm and
  the model's other scalars, relative 1e-12) and, with --train-weights,
  the same weights (relative 1e-12; for a model whose train clause is SGD);
  --seed 1 and 2 log other step-1 losses, --seed 1 twice the same log.

--electra V: the model is an ELECTRA (tokens, segments, masks and samples):
tokens drawn from [0, V), segments 0; otherwise `nncc run --random-inputs`.
"""
import argparse
import os

import numpy as np

import nncc_train as NT
from nncc_testing import library as nt
from nncc_testing.train_runs import random_data
from nncc_testing.safetensors import load_safetensors, save_safetensors
from nncc_testing.train_runs import train

ap = argparse.ArgumentParser()
ap.add_argument("nncc")
ap.add_argument("model")
ap.add_argument("work")
ap.add_argument("--dim", action="append", default=[])
ap.add_argument("--electra", type=int, default=0)
ap.add_argument("--train", action="store_true")
ap.add_argument("--train-weights", action="store_true")
a = ap.parse_args()
os.makedirs(a.work, exist_ok=True)
dims = dict(d.split("=") for d in a.dim)
B, T = int(dims["B"]), int(dims["T"])
name = os.path.basename(a.model)

path = os.path.join(a.work, "inputs.safetensors")
if a.electra:
    rng = np.random.default_rng(5)
    data = {"tokens": rng.integers(0, a.electra, (2 * B, T)).astype(np.int32),
            "segments": np.zeros((2 * B, T), np.int32)}
    save_safetensors(path, data)
else:
    random_data(a.nncc, a.model, path, ["B=%d" % (2 * B), "T=%d" % T], seed=3)
data = {k: (np.asarray(v, np.float64) if np.asarray(v).dtype == np.float32 else np.asarray(v))
        for k, v in load_safetensors(path).items()}
x = {k: np.ascontiguousarray(v[:B]) for k, v in data.items()}

lib = NT.TrainLib.compile(a.model, f64=True)
start = lib.context(seed=0).params()
STEPS = 2
# SGD with momentum: the weights are linear in the gradients, so they agree
# to rounding (Adam divides by sqrt(v): a gradient that is rounding noise,
# e.g. of an attention's key bias, would move its weight by up to lr).
cfg = lib.config()
cfg.optimizer, cfg.lr, cfg.momentum, cfg.weight_decay = 0, 0.05, 0.9, 0.0


def rows(lo, hi):
    return {k: np.ascontiguousarray(v[lo:hi]) for k, v in x.items()}


def rel(p, q):
    return float(np.max(np.abs(p - q)) / max(1e-300, float(np.max(np.abs(q)))))


def run(seed, parts=None, explicit=False, at_zero=False):
    """STEPS steps from `start` with run seed `seed` (None: set_seed not
    called): train_step on the whole batch (parts None) or micro-batches
    `parts` [(lo, hi), ...]; explicit: set_sample_offset(lo) before each;
    at_zero: set_sample_offset(0) before each (the negative control).
    Returns (losses, grad norms, weights)."""
    ctx = lib.context(weights=start)
    if seed is not None:
        ctx.set_seed(seed)
    losses, norms = [], []
    for _ in range(STEPS):
        if parts is None:
            ctx.set_inputs(x)
            ctx.train_step(cfg)
            loss = float(ctx.output("loss"))
        else:
            loss = 0.0
            for lo, hi in parts:
                ctx.set_inputs(rows(lo, hi))
                if explicit or at_zero:
                    ctx.set_sample_offset(0 if at_zero else lo)
                ctx.accumulate_gradients(hi - lo)
                loss += float(ctx.output("loss")) * (hi - lo) / B
            ctx.apply_gradients(cfg)
        losses.append(loss)
        norms.append(ctx.stats().grad_norm)
    return losses, norms, ctx.params()


def mask_of(seed):
    """ELECTRA: the masked positions of the first training forward."""
    ctx = lib.context(weights=start)
    ctx.set_seed(seed)
    ctx.set_inputs(x)
    ctx.forward_train()
    return np.asarray(ctx.output("mask")).astype(bool).copy()


def errs(got, ref):
    le = max(abs(g - r) / max(abs(r), 1e-300) for g, r in zip(got[0], ref[0]))
    ne = max(abs(g - r) / max(abs(r), 1e-300) for g, r in zip(got[1], ref[1]))
    we = max(rel(got[2][k], v) for k, v in ref[2].items())
    return le, ne, we


SEED = 7
whole = run(SEED)
half = B // 2
cases = [
    ("micro-batches of 2", [(lo, min(lo + 2, B)) for lo in range(0, B, 2)], False),
    ("micro-batches %d + %d" % (B - 1, 1), [(0, B - 1), (B - 1, B)], False),
    ("halves out of order (set_sample_offset)", [(half, B), (0, half)], True),
]
for what, parts, explicit in cases:
    le, ne, we = errs(run(SEED, parts, explicit), whole)
    nt.expect("%s: %s = the whole batch" % (name, what), max(le, ne, we) <= 1e-12,
              "(%d steps: loss rel %.1e, grad_norm rel %.1e, weights rel %.1e)" %
              (STEPS, le, ne, we))

le, ne, we = errs(run(SEED, [(lo, min(lo + 2, B)) for lo in range(0, B, 2)], at_zero=True),
                  whole)
nt.expect("%s: negative control: every micro-batch at row 0 differs" % name,
          max(le, we) > 1e-6, "(loss rel %.1e, weights rel %.1e)" % (le, we))

one, two, again = run(1), run(2), run(1)
nt.expect("%s: --seed 1 and 2 draw other streams" % name,
          one[0][0] != two[0][0] and one[0][1] != two[0][1],
          "(step-1 losses %.12g, %.12g)" % (one[0][0], two[0][0]))
nt.expect("%s: the same seed reproduces bit for bit" % name,
          one[0] == again[0] and all(np.array_equal(v, again[2][k]) for k, v in one[2].items()))
default, zero = run(None), run(0)
nt.expect("%s: seed 0 is the default streams" % name,
          default[0] == zero[0] and all(np.array_equal(v, zero[2][k])
                                        for k, v in default[2].items()))
if a.electra:
    m1, m2, m1b = mask_of(1), mask_of(2), mask_of(1)
    nt.expect("%s: seeds 1 and 2 mask other positions" % name,
              not np.array_equal(m1, m2) and np.array_equal(m1, m1b) and
              (m1.sum(axis=1) == m2.sum(axis=1)).all(),
              "(%d of the %d masked positions moved)" % (int((m1 & ~m2).sum()), int(m1.sum())))

if a.train:
    common = ["--batch", str(B), "--epochs", "1", "--no-shuffle", "--precision", "f64"]

    def logged(tag, extra):
        log, w = train(a.nncc, a.model, path, a.work, tag, common + extra)
        return [{k: float(v) for k, v in r.items()} for r in log], w

    lw, ww = logged("whole", ["--seed", "7"])
    lm, wm = logged("micro", ["--seed", "7", "--micro-batch", "2"])
    cols = [k for k in lw[0] if k not in ("epoch", "step", "lr")]
    le = max(abs(m[k] - r[k]) / max(abs(r[k]), 1e-300) for r, m in zip(lw, lm) for k in cols)
    ok = len(lw) == len(lm) == 2 and le <= 1e-12
    detail = "(%d steps, %s: worst rel %.1e" % (len(lm), "/".join(cols), le)
    if a.train_weights:
        we = max(rel(wm[k], v) for k, v in ww.items())
        ok &= we <= 1e-12
        detail += ", weights rel %.1e" % we
    nt.expect("%s: nncc train --micro-batch 2 = whole batches" % name, ok, detail + ")")
    l1, _ = logged("seed1", ["--seed", "1"])
    l2, _ = logged("seed2", ["--seed", "2"])
    l1b, _ = logged("seed1b", ["--seed", "1"])
    nt.expect("%s: nncc train --seed 1 and 2 log other losses, --seed 1 twice the same" % name,
              l1[0]["loss"] != l2[0]["loss"] and l1 == l1b,
              "(step 1: %.12g, %.12g)" % (l1[0]["loss"], l2[0]["loss"]))
nt.finish()
