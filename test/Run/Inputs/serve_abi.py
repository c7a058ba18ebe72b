"""Serving without targets through the C ABI (ABI 9 `inference_inputs`).

serve_abi.py MODEL.nn TARGET NAME=SIZE...

TARGET is the input only the loss reads. Checks that inference_inputs marks
it (and only it) 0; that forward without it computes every other output,
equal bit for bit to a forward with it, and that get_output("loss") then
fails naming it; that forward_train still needs it; that a target dropped by
a new batch size leaves the next forward without the loss; and that setting
it again brings the loss back."""
import sys

import numpy as np

import nncc_train as NT
from nncc_testing import library as nt


def random_inputs(lib, dims, batch):
    rng = np.random.default_rng(0)
    res = {}
    for name, dt, shape in lib.inputs:
        shp = tuple(batch if d == "B" else dims[d] if isinstance(d, str) else d for d in shape)
        if np.dtype(dt).kind == "f":
            res[name] = rng.standard_normal(shp).astype(dt)
        else:  # lengths / ids: small valid values
            res[name] = np.full(shp, 1, dtype=dt)
    return res


def expect_error(fn, *needles):
    try:
        fn()
    except nt.NNCCError as e:
        for n in needles:
            assert n in str(e), "%r not in %s" % (n, e)
        return str(e)
    raise AssertionError("no error (expected one naming %s)" % (needles,))


def main():
    model, target = sys.argv[1], sys.argv[2]
    dims = {d.split("=")[0]: int(d.split("=")[1]) for d in sys.argv[3:]}
    lib = NT.TrainLib.compile(model)
    abi = lib.abi
    flags = {lib.inputs[i][0]: abi.inference_inputs[i] for i in range(abi.num_inputs)}
    assert flags == {n: int(n != target) for n, _, _ in lib.inputs}, flags
    print("inference_inputs", flags)

    inputs = random_inputs(lib, dims, dims["B"])
    full = lib.context(seed=0)
    full.set_inputs(inputs)
    full.forward()
    ref = full.outputs()
    assert np.isfinite(ref["loss"]).all()

    serve = lib.context(seed=0)
    serve.set_inputs({k: v for k, v in inputs.items() if k != target})
    serve.forward()
    for name, _, _ in lib.outputs:
        if name != "loss":
            assert np.array_equal(serve.output(name), ref[name]), name
    print(expect_error(lambda: serve.output("loss"), "'%s'" % target, "only the loss reads"))
    print(expect_error(serve.forward_train, "'%s'" % target, "has not been set"))

    # The target set: the loss is back, the same as the full context's.
    serve.set_inputs({target: inputs[target]})
    serve.forward()
    assert np.array_equal(serve.output("loss"), ref["loss"])
    # A new batch size drops the target (its B no longer agrees): served again.
    small = random_inputs(lib, dims, 1)
    serve.set_inputs({k: v for k, v in small.items() if k != target})
    serve.forward()
    first = [n for n, _, _ in lib.outputs if n != "loss"][0]
    assert serve.output(first).shape[0] == 1, serve.output(first).shape
    expect_error(lambda: serve.output("loss"), "'%s'" % target)
    print("served without", target)


if __name__ == "__main__":
    main()
