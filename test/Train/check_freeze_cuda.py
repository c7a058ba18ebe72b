#!/usr/bin/env python3
"""`nncc train --target cuda --freeze` under the CUDA emulation (the fake
driver and emu_nvcc.py; freeze.test sets NNCC_NVCC, NNCC_CUDA_DRIVER): the
generated update_cuda / grad_sum_squares_cuda leave the frozen parameters
out of their tables.

 - f32: the frozen parameters bit-identical to the start, the others and
   every step's loss and gradient norm (the trainable ones only) as the CPU
   run's (1e-4 relative); without --freeze they move;
 - bf16 (fp32 master weights): the frozen parameters stay the bf16 rounding
   of the start bit for bit; a state saved after 2 steps holds zero moments
   for them and masters equal to their (widened) values; --resume from it
   ends bit-identical to the uninterrupted run.
The model must train with SGD and momentum (the state checked is the
momentum buffer).

    check_freeze_cuda.py NNCC MODEL.nn WORKDIR PATTERN
"""
import fnmatch
import json
import os
import sys

import struct

import numpy as np

import nncc
from nncc.library import _bf16_bits
from nncc_testing.safetensors import load_safetensors
from nncc_testing.train_runs import nncc_checked, random_data, train

nncc_exe, model, work, pattern = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
FAILS = []


def check(name, ok, detail=""):
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, (": " + detail) if detail else ""))
    if not ok:
        FAILS.append(name)


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(1e-30, np.max(np.abs(b))))


def load_any(path):
    """{name: ndarray} of a safetensors file, BF16 tensors as their uint16 bits."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode())
    kinds = {"F32": np.float32, "F64": np.float64, "BF16": np.uint16}
    out = {}
    for name, e in header.items():
        if name != "__metadata__":
            lo, hi = e["data_offsets"]
            out[name] = np.frombuffer(raw[8 + n + lo:8 + n + hi],
                                      kinds[e["dtype"]]).reshape(e["shape"]).copy()
    return out


def train_bf16(tag, args):
    """An nncc train run whose weights are bf16 (train_runs.train reads no BF16)."""
    out = os.path.join(work, tag + ".safetensors")
    nncc_checked(nncc_exe, ["train", model, "--data", data, "--quiet", "-o", out] + args)
    return load_any(out)


data = os.path.join(work, "data.safetensors")
random_data(nncc_exe, model, data, ["N=32"], seed=2)
params = [p["name"] for p in json.loads(nncc_checked(nncc_exe, ["inspect", model]))["parameters"]]
frozen = [p for p in params if fnmatch.fnmatchcase(p, pattern)]
trainable = [p for p in params if p not in frozen]
ctx = nncc.compile(model, nncc=nncc_exe).context()
ctx.init_weights(4)
init_path = os.path.join(work, "init.safetensors")
ctx.save_weights(init_path)
ctx.close()
init = load_safetensors(init_path)
common = ["--no-shuffle", "--batch", "8", "--max-steps", "4", "--weights", init_path]
freeze = ["--freeze", pattern]
cuda = ["--target", "cuda"]

rows_cpu, w_cpu = train(nncc_exe, model, data, work, "cpu", common + freeze)
rows_gpu, w_gpu = train(nncc_exe, model, data, work, "cuda", common + freeze + cuda)
check("cuda f32: frozen parameters bit-identical to the start",
      all(np.array_equal(w_gpu[n], init[n]) for n in frozen))
worst = max(rel(w_gpu[n], w_cpu[n]) for n in trainable)
check("cuda f32: trained parameters = the CPU's", worst <= 1e-4, "worst rel err %.2e" % worst)
for key in ("loss", "grad_norm"):
    e = rel([float(r[key]) for r in rows_gpu], [float(r[key]) for r in rows_cpu])
    check("cuda f32: %s per step = the CPU's" % key, e <= 1e-4, "rel err %.2e" % e)
_, w_all = train(nncc_exe, model, data, work, "cuda-all", common + cuda)
check("cuda f32 without --freeze: they move",
      all(not np.array_equal(w_all[n], init[n]) for n in frozen))

bf16 = ["--precision", "bf16"] + cuda + freeze
rounded = {n: _bf16_bits(init[n].astype(np.float32)) for n in params}


def bits(a):
    a = np.asarray(a)
    return a if a.dtype == np.uint16 else _bf16_bits(a.astype(np.float32))


w_bf = train_bf16("bf16", common + bf16)
check("cuda bf16: frozen parameters = the start's bf16 rounding, bit for bit",
      all(np.array_equal(bits(w_bf[n]), rounded[n]) for n in frozen))
check("cuda bf16: trained parameters moved",
      all(not np.array_equal(bits(w_bf[n]), rounded[n]) for n in trainable))
state = os.path.join(work, "state.safetensors")
stop = [a for a in common if a != "4"]
stop[stop.index("--max-steps") + 1:stop.index("--max-steps") + 1] = ["2"]
train_bf16("bf16-first", stop + bf16 + ["--save-state", state])
st = load_any(state)
check("cuda bf16 state: zero momentum buffers for the frozen parameters, not for the others",
      all(not st["optimizer.momentum_buffer." + n].any() for n in frozen) and
      all(st["optimizer.momentum_buffer." + n].any() for n in trainable))
masters = [n for n in frozen if "optimizer.master." + n in st]
check("cuda bf16 state: masters of the frozen parameters = their values",
      masters == frozen and all(np.array_equal(_bf16_bits(st["optimizer.master." + n]), rounded[n])
                                and np.array_equal(st["optimizer.master." + n],
                                                   st["optimizer.master." + n].astype(np.float32))
                                for n in masters))
resume = [a for a in common if a not in ("--weights", init_path)]
w_res = train_bf16("bf16-resumed", resume + bf16 + ["--resume", state])
check("cuda bf16: --resume = the uninterrupted run, bit for bit",
      all(np.array_equal(bits(w_res[n]), bits(w_bf[n])) for n in params))
if FAILS:
    sys.exit("FAILED: %s" % ", ".join(FAILS))
print("ALL PASSED")
