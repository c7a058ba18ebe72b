"""Gradient accumulation (ABI 8: accumulate_gradients / apply_gradients) on
the CPU, in f64, against train_step on the whole batch.

    check_accumulate.py NNCC MODELS_DIR WORKDIR

- gru_forecaster (no dropout), 5 rows: one micro-batch of all rows is
  train_step's step bit for bit (weights, loss, train_stats); micro-batches
  of 3 + 2 rows weighted by their sizes give train_step's gradient within
  1e-13 (relative to the largest element) and, over 3 Adam steps, its
  weights within 1e-12.
- deep_mlp (dropout): one micro-batch is train_step bit for bit (the first
  micro-batch draws train_step's masks); a second micro-batch of the same
  rows draws other masks (another loss: its rows are the batch's next
  ones).
- Errors: apply_gradients with nothing accumulated; weights 0, -1, nan and
  inf; train_step while micro-batches wait; load_weights drops them; 300
  micro-batches in a step.
"""
import os
import subprocess
import sys

import numpy as np

import nncc_train as NT
from nncc_testing import library as nt
from nncc_testing.safetensors import load_safetensors


def random_inputs(nncc, model, path, dims):
    subprocess.run([nncc, "run", model, "--random-inputs", "--inputs-only", "--seed", "3",
                    "--save-inputs", path] + sum((["--dim", d] for d in dims), []), check=True)
    return {k: (np.asarray(v, np.float64) if np.asarray(v).dtype == np.float32 else np.asarray(v))
            for k, v in load_safetensors(path).items()}


def rows(inputs, lo, hi):
    return {k: np.ascontiguousarray(v[lo:hi]) for k, v in inputs.items()}


def rel(a, b):
    return float(np.max(np.abs(a - b)) / max(1e-300, float(np.max(np.abs(b)))))


def expect_error(what, fn, needle):
    try:
        fn()
        nt.expect("%s: an error" % what, False)
    except nt.NNCCError as e:
        msg = str(e).split(": ", 2)[-1]
        print("  " + msg)
        nt.expect("%s: an error" % what, needle in msg, "(wanted '%s')" % needle)


def gru(nncc, models, work):
    path = os.path.join(models, "gru_forecaster.nn")
    lib = NT.TrainLib.compile(path, f64=True)
    x = random_inputs(nncc, path, os.path.join(work, "gru.safetensors"), ["B=5", "T=4"])
    start = lib.context(seed=0).params()

    ref = lib.context(weights=start)
    ref.set_inputs(x)
    one = lib.context(weights=start)
    one.set_inputs(x)
    ref.train_step()
    one.accumulate_gradients(5.0)
    one.apply_gradients()
    same = sum(np.array_equal(a, one.params()[k]) for k, a in ref.params().items())
    sr, so = ref.stats(), one.stats()
    nt.expect("gru_forecaster: one micro-batch = train_step",
              same == len(start) and float(ref.output("loss")) == float(one.output("loss")) and
              (sr.step, sr.lr, sr.grad_norm) == (so.step, so.lr, so.grad_norm),
              "%d/%d weights bit-identical, step %d" % (same, len(start), so.step))

    # 3 + 2 rows, 3 Adam steps.
    ref = lib.context(weights=start)
    acc = lib.context(weights=start)
    ref.set_inputs(x)
    grad_err = norm_err = 0.0
    for step in range(3):
        ref.train_step()
        for lo, hi in ((0, 3), (3, 5)):
            acc.set_inputs(rows(x, lo, hi))
            acc.accumulate_gradients(hi - lo)
        acc.apply_gradients()
        if step == 0:
            grad_err = max(rel(acc.output("grad." + p), ref.output("grad." + p))
                           for p, _, _ in lib.params)
            norm_err = abs(acc.stats().grad_norm - ref.stats().grad_norm) / ref.stats().grad_norm
    w_err = max(rel(acc.params()[k], a) for k, a in ref.params().items())
    nt.expect("gru_forecaster: micro-batches 3 + 2 = the batch's gradient",
              grad_err <= 1e-13 and norm_err <= 1e-13,
              "worst grad rel %.1e, grad_norm rel %.1e" % (grad_err, norm_err))
    nt.expect("gru_forecaster: 3 Adam steps of micro-batches = of the batch", w_err <= 1e-12,
              "weights rel %.1e, step %d" % (w_err, acc.stats().step))

    # Errors.
    ctx = lib.context(weights=start)
    ctx.set_inputs(x)
    expect_error("apply_gradients with nothing accumulated", ctx.apply_gradients,
                 "no gradients accumulated since the last step")
    for w in (0.0, -1.0, float("nan"), float("inf")):
        expect_error("weight %g" % w, lambda: ctx.accumulate_gradients(w),
                     "the weight must be positive and finite")
    ctx.accumulate_gradients(1.0)
    expect_error("train_step while a micro-batch waits", ctx.train_step,
                 "1 accumulated micro-batch(es) are waiting for apply_gradients")
    ctx.load_weights(start)
    expect_error("apply_gradients after load_weights", ctx.apply_gradients,
                 "no gradients accumulated since the last step")
    # No limit on micro-batches per step (their masks are their rows').
    for _ in range(300):
        ctx.accumulate_gradients(1.0)
    ctx.apply_gradients()
    nt.expect("300 micro-batches then apply_gradients", ctx.stats().step == 1)


def mlp(nncc, models, work):
    path = os.path.join(models, "deep_mlp.nn")
    lib = NT.TrainLib.compile(path, f64=True)
    x = random_inputs(nncc, path, os.path.join(work, "mlp.safetensors"), ["N=3"])
    start = lib.context(seed=0).params()
    ref = lib.context(weights=start)
    ref.set_inputs(x)
    ref.train_step()
    one = lib.context(weights=start)
    one.set_inputs(x)
    one.accumulate_gradients(1.0)
    first = float(one.output("loss"))
    one.apply_gradients()
    same = sum(np.array_equal(a, one.params()[k]) for k, a in ref.params().items())
    nt.expect("deep_mlp (dropout): one micro-batch = train_step",
              same == len(start) and first == float(ref.output("loss")),
              "%d/%d weights bit-identical" % (same, len(start)))
    two = lib.context(weights=start)
    two.set_inputs(x)
    two.accumulate_gradients(1.0)
    two.accumulate_gradients(1.0)
    second = float(two.output("loss"))
    nt.expect("deep_mlp (dropout): the second micro-batch draws its own masks",
              second != first, "losses %.9g, %.9g" % (first, second))


def main():
    nncc, models, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    nt.NNCC = nncc
    gru(nncc, models, work)
    mlp(nncc, models, work)
    nt.finish()


if __name__ == "__main__":
    main()
