"""Caller-owned memory (ABI 5 `bind`) against the copying calls.

zero_copy.py MODEL.nn WORKDIR NAME=SIZE...

One context copies (set_input, load_weights, get_output); a second binds
numpy arrays for every input, parameter, output, gradient and cotangent.
Checks that the bound arrays receive the same outputs, losses, gradients and
input gradients, that train_step updates bound parameters in place
(identically to the copying context), that nothing is copied (the bound
output array is what get_output returns), and the errors: a run whose
shape differs from a bound output's, misaligned memory, unknown names and
wrong dtypes, unbinding."""
import argparse
import ctypes as C
import subprocess
import os

import numpy as np

import nncc_train as NT
from nncc_testing import library as nt
from nncc_testing.safetensors import load_safetensors


def shape_of(sig, dims):
    return tuple(d if isinstance(d, int) else dims[d] for d in sig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("work")
    ap.add_argument("dims", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    lib = NT.TrainLib.compile(a.model, f64=True, vjp=True)
    names = {lib.abi.dim_names[i].decode() for i in range(lib.abi.num_dims)}
    dims = {d.split("=")[0]: int(d.split("=")[1]) for d in a.dims if d.split("=")[0] in names}
    path = os.path.join(a.work, "inputs.safetensors")
    subprocess.run([nt.NNCC, "run", a.model, "--random-inputs", "--seed", "0", "--quiet",
                    "--save-inputs", path, "-o", os.path.join(a.work, "o.st")]
                   + [x for k, v in dims.items() for x in ("--dim", "%s=%d" % (k, v))], check=True)
    inputs = {k: np.ascontiguousarray(v, dtype=np.float64 if v.dtype == np.float32 else v.dtype)
              for k, v in load_safetensors(path).items()}

    copy = lib.context(seed=3)
    weights = {k: np.asarray(v, dtype=np.float64) for k, v in copy.params().items()}
    copy.set_inputs(inputs)

    bound = lib.context()
    params = {n: weights[n].copy() for n, _, _ in lib.params}
    for n, arr in params.items():
        bound.bind(NT.BIND_PARAM, n, arr)
    ins = {n: v.copy() for n, v in inputs.items()}
    for n, arr in ins.items():
        bound.bind(NT.BIND_INPUT, n, arr)
    outs = {n: np.full(shape_of(s, dims), np.nan) for n, _, s in lib.outputs}
    for n, arr in outs.items():
        bound.bind(NT.BIND_OUTPUT, n, arr)
    grads = {"grad." + n: np.full(s, np.nan) for n, _, s in lib.params}
    grads.update({n: np.full(shape_of(s, dims), np.nan) for n, _, s in lib.input_grads})
    for n, arr in grads.items():
        bound.bind(NT.BIND_GRAD, n, arr)

    # Forward: the bound output arrays hold the copying context's outputs.
    copy.forward()
    bound.forward()
    worst = max(nt.err(outs[n], copy.output(n)) for n in outs)
    nt.expect("forward into bound outputs", worst == 0.0, "err=%.1e" % worst)
    first = next(iter(outs))
    e = nt._Error()
    data = C.c_void_p()
    lib._ok(lib.abi.get_output(bound.h, first.encode(), None, None, None, C.byref(data),
                               C.byref(e)), e, "get_output")
    nt.expect("get_output returns the bound array (no copy)",
              data.value == outs[first].ctypes.data)

    # VJP with bound cotangents.
    rng = np.random.default_rng(0)
    cots = {n[len("cotangent."):]: rng.standard_normal(shape_of(s, dims))
            for n, _, s in lib.cotangents}
    for n, c in cots.items():
        bound.bind(NT.BIND_COTANGENT, "cotangent." + n, c)
    copy.forward_train()
    for n, c in cots.items():
        copy.set_cotangent(n, c)
    copy.backward()
    bound.forward_train()
    bound.backward()
    worst = max(nt.err(arr, copy.output(n)) for n, arr in grads.items())
    nt.expect("backward into bound gradients (bound cotangents kept)", worst == 0.0,
              "err=%.1e" % worst)

    # train_step updates the bound parameters in place, as the copying
    # context updates its own (cotangents unbound: the loss gradient).
    for n in cots:
        bound.bind(NT.BIND_COTANGENT, "cotangent." + n, None)
    for _ in range(2):
        copy.train_step()
        bound.train_step()
    after = copy.params()
    worst = max(nt.err(params[n], after[n]) for n in params)
    moved = max(float(np.max(np.abs(params[n] - weights[n]))) for n in params)
    nt.expect("train_step updates bound parameters in place", worst == 0.0 and moved > 0,
              "err=%.1e moved=%.2e" % (worst, moved))

    # Errors.
    def error(what, fn):
        try:
            fn()
            nt.expect(what + ": an error", False)
        except nt.NNCCError as ex:
            print("  " + str(ex).split(": ", 1)[1])
            nt.expect(what + ": an error", True)
    error("unknown parameter", lambda: bound.bind(NT.BIND_PARAM, "nope", params[next(iter(params))]))
    p0 = next(iter(params))
    error("wrong dtype", lambda: bound.bind(NT.BIND_PARAM, p0, params[p0].astype(np.float32)))
    raw = np.zeros(params[p0].nbytes + 8, dtype=np.uint8)
    error("misaligned memory", lambda: bound._call(
        bound.abi.bind, "bind(%s)" % p0, NT.BIND_PARAM, p0.encode(), 1, params[p0].ndim,
        (C.c_int64 * max(1, params[p0].ndim))(*params[p0].shape),
        C.c_void_p(raw.ctypes.data + 1)))
    # A bound output fails the run whose shape disagrees with it: grow the
    # first dim by one sample (inputs copied again), then unbind the outputs.
    if dims:
        first_dim = next(iter(dims))
        grown = dict(dims, **{first_dim: dims[first_dim] + 1})
        big = dict(inputs)
        for n, _, s in lib.inputs:
            if first_dim in s:
                ax = s.index(first_dim)
                big[n] = np.concatenate([inputs[n], inputs[n].take([0], axis=ax)], axis=ax)
        for n in ins:
            bound.bind(NT.BIND_INPUT, n, None)
        bound.set_inputs(big)
        error("a run that disagrees with a bound output's shape", bound.forward)
        for n in outs:
            bound.bind(NT.BIND_OUTPUT, n, None)
        bound.forward()
        want = shape_of([s for n, _, s in lib.outputs if n == first][0], grown)
        nt.expect("after unbinding, the run uses the context's memory",
                  bound.output(first).shape == want)
    nt.finish()


if __name__ == "__main__":
    main()
