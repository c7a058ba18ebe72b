"""The vector-Jacobian product of `nncc compile --grad --vjp --f64` libraries
against central finite differences.

vjp_check.py MODEL.nn WORKDIR NAME=SIZE... [--eps E] [--tol T] [--dirs N]

Inputs are drawn by `nncc run --random-inputs` (valid token ids, lengths,
targets), the weights by init_weights(0) scaled to O(1) values. After
forward_train, every float output (and the loss) gets a random cotangent c_r;
backward gives g = grad of s = sum_r <c_r, r> w.r.t. every parameter and
float input. For N random directions v (over all parameters and float inputs
together) the check compares <g, v> with (s(x + eps v) - s(x - eps v)) / 2eps,
both s from forward_train (dropout masks fixed within a step). It also checks
that with the default cotangents (loss 1, outputs 0) backward equals the
loss gradient of the plain --grad library."""
import argparse
import os
import subprocess

import numpy as np

import nncc_train as NT
from nncc_testing import library as nt
from nncc_testing.safetensors import load_safetensors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("work")
    ap.add_argument("dims", nargs="*")
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--dirs", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)

    vjp = NT.TrainLib.compile(a.model, f64=True, vjp=True)
    has_loss = any(n == "cotangent.loss" for n, _, _ in vjp.cotangents)
    print("model %s: cotangents %s; input gradients %s" % (
        vjp.name, " ".join(n for n, _, _ in vjp.cotangents),
        " ".join(n for n, _, _ in vjp.input_grads) or "none"))

    inputs_path = os.path.join(a.work, "inputs.safetensors")
    names = {vjp.abi.dim_names[i].decode() for i in range(vjp.abi.num_dims)}
    dims = [x for d in a.dims if d.split("=")[0] in names for x in ("--dim", d)]
    subprocess.run([nt.NNCC, "run", a.model, "--random-inputs", "--seed", "0", "--quiet",
                    "--save-inputs", inputs_path, "-o", os.path.join(a.work, "out.st")] + dims,
                   check=True)
    inputs = {k: np.asarray(v) for k, v in load_safetensors(inputs_path).items()}
    for k, v in inputs.items():
        if v.dtype == np.float32:
            inputs[k] = v.astype(np.float64)

    ctx = vjp.context(seed=0)
    rng = np.random.default_rng(0)
    weights = {k: np.asarray(v, dtype=np.float64) for k, v in ctx.params().items()}
    ctx.load_weights(weights)
    ctx.set_inputs(inputs)

    ctx.forward_backward()
    if has_loss:
        # Default cotangents: the loss gradient of the plain --grad library.
        ref = NT.TrainLib.compile(a.model, f64=True).context(weights=weights)
        ref.set_inputs(inputs)
        ref.forward_backward()
        worst = max(nt.err(ctx.output("grad." + p), ref.output("grad." + p))
                    for p, _, _ in vjp.params)
        nt.expect("default cotangents = loss gradient", worst <= 1e-12, "err=%.2e" % worst)
    else:
        # No loss: the default cotangents are all 0, and so is the gradient;
        # a plain --grad build is an error that says why.
        worst = max(float(np.max(np.abs(ctx.output("grad." + p)))) for p, _, _ in vjp.params)
        nt.expect("no loss: default cotangents give zero gradients", worst == 0.0,
                  "max|g|=%.2e" % worst)
        try:
            NT.TrainLib.compile(a.model, f64=True)
            nt.expect("no loss: --grad without --vjp is an error", False)
        except nt.NNCCError as e:
            line = [l for l in str(e).splitlines() if "error:" in l][0]
            print("  " + line.strip())
            nt.expect("no loss: --grad without --vjp is an error", "no result named 'loss'" in line)

    ctx.forward_train()
    outputs = {n[len("cotangent."):]: ctx.output(n[len("cotangent."):])
               for n, _, _ in vjp.cotangents}
    cot = {n: rng.standard_normal(v.shape) for n, v in outputs.items()}

    def s_value():
        ctx.forward_train()
        return sum(float(np.sum(cot[n] * ctx.output(n))) for n in cot)

    ctx.forward_train()
    for n, c in cot.items():
        ctx.set_cotangent(n, c)
    ctx.backward()
    float_inputs = [n[len("grad."):] for n, _, _ in vjp.input_grads]
    grads = {("param", p): ctx.output("grad." + p) for p, _, _ in vjp.params}
    grads.update({("input", n): ctx.output("grad." + n) for n in float_inputs})

    for d in range(a.dirs):
        v = {key: rng.standard_normal(g.shape) for key, g in grads.items()}
        analytic = sum(float(np.sum(grads[k] * v[k])) for k in grads)

        def at(sign):
            ctx.load_weights({p: weights[p] + sign * a.eps * v[("param", p)] for p in weights})
            ctx.set_inputs(dict(inputs, **{n: inputs[n] + sign * a.eps * v[("input", n)]
                                           for n in float_inputs}))
            return s_value()
        fd = (at(1) - at(-1)) / (2 * a.eps)
        rel = abs(fd - analytic) / max(1.0, abs(fd))
        nt.expect("direction %d: <vjp, v> vs finite differences" % d, rel <= a.tol,
                  "rel=%.2e analytic=%.6g fd=%.6g" % (rel, analytic, fd))

    # Input gradients alone (parameters fixed): a direction over the inputs only.
    if float_inputs:
        ctx.load_weights(weights)
        v = {n: rng.standard_normal(inputs[n].shape) for n in float_inputs}
        analytic = sum(float(np.sum(grads[("input", n)] * v[n])) for n in float_inputs)

        def at_inputs(sign):
            ctx.set_inputs(dict(inputs, **{n: inputs[n] + sign * a.eps * v[n]
                                           for n in float_inputs}))
            return s_value()
        fd = (at_inputs(1) - at_inputs(-1)) / (2 * a.eps)
        rel = abs(fd - analytic) / max(1.0, abs(fd))
        nt.expect("input gradients vs finite differences", rel <= a.tol,
                  "rel=%.2e analytic=%.6g fd=%.6g" % (rel, analytic, fd))
    errors(ctx, vjp, cot)
    nt.finish()


def errors(ctx, lib, cot):
    """set_cotangent's errors: unknown name, wrong shape, wrong dtype, before
    forward_train."""
    name, value = next(iter(cot.items()))
    ctx.forward_train()
    cases = [("unknown name", "no_such_output", value),
             ("wrong shape", name, np.zeros(value.shape + (2,))),
             ("wrong dtype", name, value.astype(np.float32))]
    for what, n, v in cases:
        try:
            ctx.set_cotangent(n, v)
            nt.expect("set_cotangent, %s: an error" % what, False)
        except nt.NNCCError as e:
            print("  " + str(e).split(": ", 1)[1])
            nt.expect("set_cotangent, %s: an error" % what, True)
    ctx.forward()
    try:
        ctx.set_cotangent(name, value)
        nt.expect("set_cotangent after forward: an error", False)
    except nt.NNCCError as e:
        print("  " + str(e).split(": ", 1)[1])
        nt.expect("set_cotangent after forward: an error", True)


if __name__ == "__main__":
    main()
