"""Training on the CUDA target against the CPU target of the same library
(compiled with --grad --target all), as `nncc train` drives it: train_step
after train_step on one batch, from the same seeded weights.

- STEPS train_step calls on each target: the CUDA losses must track the
  CPU's (relative difference <= TOL over the first TRACK steps; fp32 runs
  part slowly after that, so later steps are reported, not bounded), and on
  both the mean of the last five losses must be below the first loss.
- Resume on CUDA: the training state saved after STEPS/2 steps, loaded into
  a fresh CUDA context, must give the same remaining losses as the run that
  went on (relative difference <= 1e-5: the CUDA kernels that add with
  atomics need not repeat bit for bit).

    device_train_check.py LIB INPUTS TMPDIR [STEPS] [TRACK] [TOL]

Exit status 1 if a check fails. utils/device_prep.sh ships it to the GPU
machine with each trainable model's library and inputs.
"""
import os
import sys

import nncc
from nncc_testing.safetensors import load_safetensors


def losses(ctx, steps):
    out = []
    for _ in range(steps):
        ctx.train_step()
        out.append(float(ctx.output("loss")))
    return out


def rel(a, b):
    return abs(b - a) / max(abs(a), 1e-30)


def main(lib_path, inputs, tmp, steps=50, track=10, tol=1e-3):
    lib = nncc.Library(lib_path)
    batch = load_safetensors(inputs)
    ctxs = {}
    for target in ("cpu", "cuda"):
        ctx = lib.context(target)
        ctx.init_weights(1)
        for name, a in batch.items():
            ctx.set_input(name, a)
        ctxs[target] = ctx
    cpu = losses(ctxs["cpu"], steps)
    half = steps // 2
    cuda = losses(ctxs["cuda"], half)
    state = os.path.join(tmp, "state.safetensors")
    ctxs["cuda"].save_train_state(state)
    cuda += losses(ctxs["cuda"], steps - half)
    ok = True
    errs = [rel(a, b) for a, b in zip(cpu, cuda)]
    tracked = max(errs[:track]) <= tol
    ok &= tracked
    print("losses, cpu:  %s" % " ".join("%.5g" % x for x in cpu))
    print("losses, cuda: %s" % " ".join("%.5g" % x for x in cuda))
    print("cuda vs cpu: worst rel %.2e over the first %d steps (bound %g) %s; worst over all %d "
          "steps %.2e" % (max(errs[:track]), track, tol, "ok" if tracked else "FAIL", steps,
                          max(errs)))
    for name, run in (("cpu", cpu), ("cuda", cuda)):
        falls = sum(run[-5:]) / 5 < run[0]
        ok &= falls
        print("%s: loss %.5g -> %.5g (mean of the last five) %s" % (
            name, run[0], sum(run[-5:]) / 5, "falls" if falls else "FAIL: does not fall"))
    resumed = lib.context("cuda")
    resumed.init_weights(2)  # overwritten by the state: a different draw proves it
    for name, a in batch.items():
        resumed.set_input(name, a)
    resumed.load_train_state(state)
    again = losses(resumed, steps - half)
    worst = max(rel(a, b) for a, b in zip(cuda[half:], again))
    good = worst <= 1e-5
    ok &= good
    print("resume on cuda after %d steps: %d more steps, worst rel %.2e against the run that "
          "went on %s" % (half, steps - half, worst, "ok" if good else "FAIL"))
    print("TRAIN OK" if ok else "TRAIN FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    a = sys.argv
    sys.exit(main(a[1], a[2], a[3], *(int(x) for x in a[4:6]), *(float(x) for x in a[6:7])))
