"""Compiled models: `compile` runs the nncc compiler, `Library` loads a
lib<model>.so and `Context` drives one of its contexts through the C ABI."""
import ctypes as C
import os
import shutil
import subprocess
import tempfile

import numpy as np

from . import _abi
from .errors import Error


def _find_nncc(explicit=None):
    for candidate in (explicit, os.environ.get("NNCC"), shutil.which("nncc")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise Error("NOT_FOUND", "the nncc compiler was not found: pass nncc=PATH, set NNCC, or "
                "put nncc on PATH (cmake --install puts it in <prefix>/bin)")


def compile(path, target="cpu", grad=True, vjp=True, f64=False, output_dir=None,
            memory_budget=None, dims=None, nncc=None, precision=None):
    """Compiles a .nn model with `nncc compile` and loads the library.

    target: "cpu" or "cuda" (the CPU and CUDA; needs nvcc). grad / vjp: the
    training entry points and the vector-Jacobian product (nncc.torch.Module
    needs both). f64: CPU code in double precision (precision="f64").
    precision: "f32" (default), "f64" or "bf16" (bf16 storage, fp32
    arithmetic: target "cuda" and grad=False only). memory_budget / dims:
    `--memory-budget` for the binding `dims` ({"B": 64, "T": 128}).
    output_dir: where lib<model>.so goes (default: a new temporary directory
    that lives as long as the process). Raises nncc.Error with the source
    location on a compile error."""
    if target not in ("cpu", "cuda"):
        raise Error("INVALID_ARGUMENT", "target must be 'cpu' or 'cuda', got %r" % (target,))
    if not os.path.isfile(path):
        raise Error("NOT_FOUND", "no such model file: %s" % path)
    exe = _find_nncc(nncc)
    out = output_dir or tempfile.mkdtemp(prefix="nncc-")
    cmd = [exe, "compile", os.fspath(path), "-o", out, "--target", target]
    if grad:
        cmd.append("--grad")
        if vjp:
            cmd.append("--vjp")
    if precision not in (None, "f32", "f64", "bf16"):
        raise Error("INVALID_ARGUMENT",
                    "precision must be 'f32', 'f64' or 'bf16', got %r" % (precision,))
    if f64 and precision not in (None, "f64"):
        raise Error("INVALID_ARGUMENT", "f64=True and precision=%r disagree" % (precision,))
    if f64 or precision == "f64":
        cmd.append("--f64")
    elif precision == "bf16":
        cmd += ["--precision", "bf16"]
    if memory_budget is not None:
        cmd += ["--memory-budget", str(memory_budget)]
    for k, v in (dims or {}).items():
        cmd += ["--dim", "%s=%d" % (k, v)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise Error.from_compiler(p.stderr + p.stdout, "nncc compile %s failed" % path)
    libs = [f for f in os.listdir(out) if f.startswith("lib") and f.endswith(".so")]
    if len(libs) != 1:
        raise Error("INTERNAL", "nncc compile wrote %d libraries into %s" % (len(libs), out))
    return Library(os.path.join(out, libs[0]))


class TensorSpec:
    """A tensor of the model's signature: name, numpy dtype, shape (ints, or
    the names of symbolic dims)."""

    def __init__(self, name, dtype, shape):
        self.name, self.dtype, self.shape = name, dtype, shape

    def concrete(self, dims):
        return tuple(d if isinstance(d, int) else dims[d] for d in self.shape)

    def __repr__(self):
        return "TensorSpec(%r, %s, %r)" % (self.name, self.dtype, self.shape)


class Library:
    """A compiled lib<model>.so: its signature, and contexts to run it."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        try:
            self._dll = C.CDLL(self.path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as e:
            raise Error("IO", "cannot load %s: %s" % (self.path, e)) from None
        get = self._dll.nncc_model_get_abi
        get.restype = C.POINTER(_abi.ABI)
        header = C.cast(get(), C.POINTER(C.c_uint32)).contents.value
        if header != _abi.ABI_VERSION:
            raise Error("UNSUPPORTED", "%s has ABI version %d; this package reads version %d "
                        "(recompile the model with this nncc)" % (self.path, header,
                                                                 _abi.ABI_VERSION))
        self.abi = get().contents
        a = self.abi
        self.dims = [a.dim_names[i].decode() for i in range(a.num_dims)]
        self.name = a.model_name.decode()
        self.precision = a.precision.decode()
        self.inputs = self._specs(a.num_inputs, a.inputs)
        self.outputs = self._specs(a.num_outputs, a.outputs)
        self.params = self._specs(a.num_params, a.params)
        self.cotangents = self._specs(a.num_cotangents, a.cotangents)
        self.input_grads = self._specs(a.num_input_grads, a.input_grads)
        self.has_grad = a.num_grads > 0
        self.has_vjp = a.num_cotangents > 0

    def _specs(self, n, arr):
        res = []
        for i in range(n):
            t = arr[i]
            shape = tuple(t.dims[d] if t.dims[d] >= 0 else self.dims[-t.dims[d] - 1]
                          for d in range(t.rank))
            res.append(TensorSpec(t.name.decode(), _abi.DTYPES[t.dtype], shape))
        return res

    def context(self, target="cpu"):
        return Context(self, target)

    def __repr__(self):
        return "nncc.Library(%r: %s)" % (self.name, self.path)


def _bf16_bits(a):
    """float32 array -> its bf16 bit patterns (uint16), rounded to nearest
    even; a NaN stays a quiet NaN (nncc_f32_to_bf16's rule)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = ((u + np.uint32(0x7FFF) + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


class Context:
    """One context of a library: parameters, arena, residuals."""

    def __init__(self, lib, target="cpu"):
        self.lib, self.abi = lib, lib.abi
        self.target = target
        self.h = C.c_void_p()
        code = {"cpu": _abi.TARGET_CPU, "cuda": _abi.TARGET_CUDA}.get(target)
        if code is None:
            raise Error("INVALID_ARGUMENT", "target must be 'cpu' or 'cuda', got %r" % (target,))
        self._call(self.abi.create, "create", code, C.byref(self.h), handle=False)

    def _call(self, fn, what, *args, handle=True):
        e = _abi.Error_()
        status = fn(*((self.h,) if handle else ()), *args, C.byref(e))
        if status != 0:
            raise Error(_abi.STATUS_NAMES.get(status, str(status)),
                        "%s: %s" % (what, e.message.decode(errors="replace")))

    @staticmethod
    def _shape(a):
        return (C.c_int64 * max(1, a.ndim))(*a.shape)

    def set_input(self, name, array):
        """A float32 array for a bfloat16 input (a --precision bf16
        library) is rounded to bf16 (nearest even, the runtime's rounding)."""
        a = np.ascontiguousarray(array)
        code = _abi.DTYPE_CODES[a.dtype.name]
        if a.dtype == np.float32 and any(s.name == name and s.dtype == "bfloat16"
                                         for s in self.lib.inputs):
            a, code = _bf16_bits(a), _abi.DTYPE_CODES["bfloat16"]
        self._call(self.abi.set_input, "set_input(%s)" % name, name.encode(), code, a.ndim,
                   self._shape(a), a.ctypes.data_as(C.c_void_p))

    def bind(self, kind, name, pointer, dtype, shape):
        """Caller-owned memory at `pointer` (an int address; None unbinds)."""
        shp = (C.c_int64 * max(1, len(shape)))(*shape)
        self._call(self.abi.bind, "bind(%s)" % name, kind, name.encode(),
                   _abi.DTYPE_CODES[dtype] if pointer else 0, len(shape), shp,
                   C.c_void_p(pointer) if pointer else None)

    def set_cotangent(self, name, array):
        a = np.ascontiguousarray(array)
        self._call(self.abi.set_cotangent, "set_cotangent(%s)" % name,
                   ("cotangent." + name).encode(), _abi.DTYPE_CODES[a.dtype.name], a.ndim,
                   self._shape(a), a.ctypes.data_as(C.c_void_p))

    def init_weights(self, seed):
        self._call(self.abi.init_weights, "init_weights", seed)

    def load_weights(self, path):
        self._call(self.abi.load_weights, "load_weights", os.fspath(path).encode())

    def save_weights(self, path):
        self._call(self.abi.save_weights, "save_weights", os.fspath(path).encode())

    def save_train_state(self, path):
        """Parameters, optimizer state and step counter in one safetensors
        file (ABI 7; docs/training.md, "Resuming")."""
        self._call(self.abi.save_train_state, "save_train_state", os.fspath(path).encode())

    def load_train_state(self, path):
        """What save_train_state wrote: the next train_step continues that run."""
        self._call(self.abi.load_train_state, "load_train_state", os.fspath(path).encode())

    def forward(self):
        self._call(self.abi.forward, "forward")

    def forward_train(self):
        self._need_grad("forward_train")
        self._call(self.abi.forward_train, "forward_train")

    def backward(self):
        self._need_grad("backward")
        self._call(self.abi.backward, "backward")

    def train_step(self):
        self._need_grad("train_step")
        self._call(self.abi.train_step, "train_step", None)

    def accumulate_gradients(self, weight=1.0):
        """forward_backward on the current inputs (one micro-batch), folded
        into the weighted mean of the gradients since the last step (ABI 8;
        docs/training.md, "Micro-batches")."""
        self._need_grad("accumulate_gradients")
        self._call(self.abi.accumulate_gradients, "accumulate_gradients", float(weight))

    def apply_gradients(self):
        """One optimizer step (the model's train clause) on the accumulated mean."""
        self._need_grad("apply_gradients")
        self._call(self.abi.apply_gradients, "apply_gradients", None)

    def set_step(self, step):
        self._call(self.abi.set_step, "set_step", step)

    def set_cuda_stream(self, stream):
        """CUDA contexts: run on the CUstream `stream` (an int handle, e.g.
        torch.cuda.current_stream().cuda_stream; None or 0: the context's
        own)."""
        self._call(self.abi.set_cuda_stream, "set_cuda_stream",
                   C.c_void_p(stream) if stream else None)

    def _need_grad(self, what):
        if not self.lib.has_grad:
            raise Error("UNSUPPORTED", "%s: %s was compiled without gradients (nncc.compile "
                        "grad=True)" % (what, self.lib.name))

    def output(self, name):
        """A copy of output `name` (or grad.<param> / grad.<input>)."""
        dt, rank = C.c_int(), C.c_int32()
        shape, data = C.POINTER(C.c_int64)(), C.c_void_p()
        self._call(self.abi.get_output, "get_output(%s)" % name, name.encode(), C.byref(dt),
                   C.byref(rank), C.byref(shape), C.byref(data))
        shp = tuple(shape[i] for i in range(rank.value))
        # bf16 (numpy has no such type) comes back widened to float32, exactly.
        bf16 = _abi.DTYPES[dt.value] == "bfloat16"
        dtype = np.dtype(np.uint16 if bf16 else _abi.DTYPES[dt.value])
        n = int(np.prod(shp)) if shp else 1
        if n == 0:
            return np.zeros(shp, np.float32 if bf16 else dtype)
        buf = (C.c_char * (n * dtype.itemsize)).from_address(data.value)
        a = np.frombuffer(buf, dtype=dtype).reshape(shp).copy()
        if bf16:
            wide = np.left_shift(a.astype(np.uint32).reshape(-1), np.uint32(16))
            return wide.view(np.float32).reshape(shp)
        return a

    def memory_stats(self):
        a, p = C.c_uint64(), C.c_uint64()
        self._call(self.abi.memory_stats, "memory_stats", C.byref(a), C.byref(p))
        return {"arena_bytes": a.value, "peak_bytes": p.value}

    def close(self):
        if self.h:
            self.abi.destroy(self.h)
            self.h = C.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
