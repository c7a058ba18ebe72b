"""A --precision bf16 library through nncc.Library on the CUDA target
(emulated in the tests): its float tensors read as "bfloat16"; the f32
library's weights file loads into it rounded to bf16 (its own save is BF16,
bit for bit the rounding); float32 inputs are rounded on set_input, bf16
outputs come back as float32 and agree with the f32 library on the CPU to
bf16's error; the Python rounding matches nncc_f32_to_bf16 bit for bit;
nncc.compile builds a bf16 training library and refuses a bf16 CPU one.

    bf16_library.py F32_LIB BF16_LIB TOL LIBNNCC_RUNTIME TMPDIR
"""
import ctypes
import os
import sys

import numpy as np

import nncc
from nncc.library import _bf16_bits

from bf16_training import read_safetensors  # beside this file


def main(f32_path, bf16_path, tol, runtime, tmp):
    f32, bf16 = nncc.Library(f32_path), nncc.Library(bf16_path)
    print("dtypes:", sorted({s.dtype for s in bf16.inputs + bf16.outputs}))
    rng = np.random.default_rng(0)
    ins = {s.name: rng.standard_normal(s.concrete({"N": 4})).astype(np.float32)
           for s in f32.inputs}
    ref, got = f32.context("cpu"), bf16.context("cuda")
    ref.init_weights(1)
    w32, w16 = os.path.join(tmp, "w32.safetensors"), os.path.join(tmp, "w16.safetensors")
    ref.save_weights(w32)
    got.load_weights(w32)
    got.save_weights(w16)
    a, b = read_safetensors(w32), read_safetensors(w16)
    weights_ok = sorted(a) == sorted(b) and all(
        b[k][0] == "BF16" and np.array_equal(b[k][1], _bf16_bits(a[k][1])) for k in a)
    print("f32 weights file loaded as bf16, rounded to nearest even: %s" % weights_ok)
    for ctx in (ref, got):
        for k, v in ins.items():
            ctx.set_input(k, v)
        ctx.forward()
    ok = weights_ok
    for s in f32.outputs:
        a, b = ref.output(s.name), got.output(s.name)
        err = float(np.abs(a - b).max() / max(np.abs(a).max(), 1e-3))
        ok &= b.dtype == np.float32 and err <= tol
        print("%s: %s %s err %.2e %s" % (s.name, b.dtype, "x".join(map(str, b.shape)), err,
                                         "ok" if err <= tol else "FAIL"))
    # The numpy rounding against the runtime's, over every bf16 neighbourhood
    # (ties, the largest finite values, infinities, NaN).
    rt = ctypes.CDLL(runtime)
    rt.nncc_f32_to_bf16.restype, rt.nncc_f32_to_bf16.argtypes = ctypes.c_uint16, [ctypes.c_float]
    hi = np.arange(0, 1 << 16, 7, dtype=np.uint32) << 16
    bits = np.concatenate([hi, hi | 0x8000, hi | 0x7FFF, hi | 0x8001, hi | 0x18000]).astype(np.uint32)
    vals = bits.view(np.float32)
    mine = _bf16_bits(vals)
    theirs = np.array([rt.nncc_f32_to_bf16(float(v)) for v in vals], dtype=np.uint16)
    same = np.array_equal(mine, theirs)
    print("rounding matches nncc_f32_to_bf16 over %d values: %s" % (len(vals), same))
    # nncc.compile(precision=...): a bf16 training library, and the
    # compiler's refusal of a bf16 CPU build as a typed error.
    model = os.path.join(os.path.dirname(__file__), "..", "..", "..", "models", "deep_mlp.nn")
    lib = nncc.compile(model, target="cuda", grad=True, precision="bf16",
                       output_dir=os.path.join(tmp, "py_bf16"))
    print("nncc.compile(precision='bf16', grad=True):", sorted({s.dtype for s in lib.inputs}),
          "gradients:", lib.has_grad)
    try:
        nncc.compile(model, target="cpu", precision="bf16",
                     output_dir=os.path.join(tmp, "py_bf16_cpu"))
        print("nncc.compile(precision='bf16', target='cpu') did not fail")
        same = False
    except nncc.Error as e:
        print("nncc.compile(precision='bf16', target='cpu'): %s" % str(e).splitlines()[0])
    print("PASS" if ok and same else "FAIL")
    return 0 if ok and same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]))
