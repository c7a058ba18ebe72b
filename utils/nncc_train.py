"""ctypes access to the training half of a generated library (ABI 7).

    lib = TrainLib.compile("models/deep_mlp.nn", f64=False)   # nncc compile --grad
    m = lib.context(seed=0)
    m.set_inputs({"x": X, "y": Y})
    m.train_step()                       # the model's own train clause
    m.output("loss"), m.output("grad.hidden.0.fc.weight"), m.stats()

Used by utils/gradient_flow.py and test/Train. See docs/training.md.
"""
import ctypes as C
import hashlib
import os
import shutil
import subprocess

import numpy as np

from nncc_testing import library as T  # safetensors I/O, compiling, contexts
# The C ABI's ctypes types: python/nncc (put on sys.path by nncc_testing).
from nncc import _abi
from nncc._abi import (BIND_COTANGENT, BIND_GRAD, BIND_INPUT, BIND_OUTPUT,  # noqa: F401
                       BIND_PARAM, ParamGroup, TrainConfig, TrainStats)

SGD, ADAM, ADAMW = 0, 1, 2
CONSTANT, WARMUP_COSINE, COSINE, LINEAR, STEP = range(5)


def nncc_binary():
    return T.NNCC


def compile_grad(nn_path, f64=False, vjp=False):
    """`nncc compile --grad [--f64] [--vjp] nn_path -o DIR`, cached like nncc_testing."""
    args = ["--grad"] + (["--f64"] if f64 else []) + (["--vjp"] if vjp else [])
    return T.compile_model(nn_path, args)


class TrainLib(T.Library):
    def __init__(self, so_path):
        self.path = so_path
        self.dll = C.CDLL(so_path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        self.dll.nncc_model_get_abi.restype = C.POINTER(_abi.ABI)
        self.abi = self.dll.nncc_model_get_abi().contents
        if self.abi.abi_version != _abi.ABI_VERSION:
            raise T.NNCCError("ABI version %d, expected %d" % (self.abi.abi_version, _abi.ABI_VERSION))
        dims = [self.abi.dim_names[i].decode() for i in range(self.abi.num_dims)]

        def infos(n, arr):
            res = []
            for i in range(n):
                t = arr[i]
                shape = [t.dims[d] if t.dims[d] >= 0 else dims[-t.dims[d] - 1]
                         for d in range(t.rank)]
                res.append((t.name.decode(), T.DT.get(t.dtype), shape))
            return res
        self.name = self.abi.model_name.decode()
        self.precision = self.abi.precision.decode()
        self.inputs = infos(self.abi.num_inputs, self.abi.inputs)
        self.outputs = infos(self.abi.num_outputs, self.abi.outputs)
        self.params = infos(self.abi.num_params, self.abi.params)
        self.cotangents = infos(self.abi.num_cotangents, self.abi.cotangents)
        self.input_grads = infos(self.abi.num_input_grads, self.abi.input_grads)

    @staticmethod
    def compile(nn_path, f64=False, vjp=False):
        return TrainLib(compile_grad(nn_path, f64, vjp))

    def config(self):
        return self.abi.train_config.contents.copy()

    def schedule_lr(self, cfg, t):
        return self.abi.schedule_lr(C.byref(cfg), t)

    def context(self, weights=None, seed=None, target=0):
        return TrainContext(self, weights, seed, target)


class TrainContext(T.Context):
    def _call(self, fn, what, *args):
        e = T._Error()
        self.lib._ok(fn(self.h, *args, C.byref(e)), e, what)

    def forward_backward(self):
        self._call(self.abi.forward_backward, "forward_backward")

    def forward_train(self):
        self._call(self.abi.forward_train, "forward_train")

    def backward(self):
        self._call(self.abi.backward, "backward")

    def bind(self, kind, name, array):
        """Binds a C-contiguous numpy array (None: unbinds) as caller-owned
        memory (ABI 5); the caller keeps the array alive while bound."""
        if array is None:
            self._call(self.abi.bind, "bind(%s)" % name, kind, name.encode(), 0, 0, None, None)
            return
        if not array.flags["C_CONTIGUOUS"]:
            raise ValueError("bind(%s): the array must be C-contiguous" % name)
        shape = (C.c_int64 * max(1, array.ndim))(*array.shape)
        self._call(self.abi.bind, "bind(%s)" % name, kind, name.encode(), T.DT_CODE[array.dtype],
                   array.ndim, shape, array.ctypes.data_as(C.c_void_p))

    def set_cotangent(self, name, value):
        """VJP libraries: the cotangent of output `name` (after forward_train)."""
        a = T.to_numpy(value)
        shape = (C.c_int64 * max(1, a.ndim))(*a.shape)
        self._call(self.abi.set_cotangent, "set_cotangent(%s)" % name,
                   ("cotangent." + name).encode(), T.DT_CODE[a.dtype], a.ndim, shape,
                   a.ctypes.data_as(C.c_void_p))

    def train_step(self, cfg=None):
        self._call(self.abi.train_step, "train_step",
                   C.cast(C.byref(cfg), C.c_void_p) if cfg is not None else None)

    def accumulate_gradients(self, weight=1.0):
        self._call(self.abi.accumulate_gradients, "accumulate_gradients", float(weight))

    def set_seed(self, seed):
        """The run seed of the random streams (ABI 9; 0: the op seeds' own)."""
        self._call(self.abi.set_seed, "set_seed", int(seed))

    def set_sample_offset(self, row):
        """The batch row of the current inputs' first sample (ABI 9)."""
        self._call(self.abi.set_sample_offset, "set_sample_offset", int(row))

    def apply_gradients(self, cfg=None):
        self._call(self.abi.apply_gradients, "apply_gradients",
                   C.cast(C.byref(cfg), C.c_void_p) if cfg is not None else None)

    def stats(self):
        s = TrainStats()
        self._call(self.abi.train_stats, "train_stats", C.byref(s))
        return s

    def reset_optimizer(self):
        self._call(self.abi.reset_optimizer, "reset_optimizer")

    def param_group(self, i, cfg=None):
        d, s = C.c_int32(), C.c_double()
        self._call(self.abi.param_group, "param_group", i,
                   C.byref(cfg) if cfg is not None else None, C.byref(d), C.byref(s))
        return bool(d.value), s.value

    def params(self):
        with_dir = T.tempfile.TemporaryDirectory()
        with with_dir as d:
            p = os.path.join(d, "w.safetensors")
            e = T._Error()
            self.lib._ok(self.abi.save_weights(self.h, p.encode(), C.byref(e)), e,
                         "save_weights")
            return T.load_safetensors(p)
