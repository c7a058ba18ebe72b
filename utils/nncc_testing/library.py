"""nncc_testing.library - run nncc-compiled models from Python and compare
with PyTorch (everything here is also importable as `nncc_testing.X`).

Used by the parity tests (test/Parity) and the benchmarks (bench/run.py).
Needs numpy only (torch tensors are accepted where arrays are).

    import nncc_testing as nt
    m = nt.Model("test/Parity/Inputs/mlp.nn")          # compiled once, cached
    out = m.run(weights=state_dict, inputs={"x": x})    # dict name -> ndarray
    nt.check("mlp", out["y"], ref)                      # metric below
    nt.finish()

Metric (all parity tests): err(a, b) = max|a - b| / max(1, max|b|), b the
PyTorch reference, a nncc's output; fp32 tolerance 1e-4 (fp64 1e-10).

Two ways to run a model (environment variable NNCC_PARITY_BACKEND):
  run   `nncc run M.nn --weights W --inputs I -o O` (a process per call);
  abi   `nncc compile M.nn -o DIR` once, then the library's C ABI
        (nncc_model.h) through ctypes, in this process;
  auto  (default) `run` when the driver has the `run` command, else `abi`.
Compiled libraries are cached in NNCC_TEST_CACHE (default: a directory
under the system temp dir), keyed by the .nn source and the nncc binary.
"""
import ctypes as C
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from .safetensors import NP_TO_ST, ST_DTYPES, load_safetensors, save_safetensors, to_numpy  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from nncc import _abi  # noqa: E402

# --------------------------------------------------------------------------
# the metric
# --------------------------------------------------------------------------
TOL = {"f32": 1e-4, "f64": 1e-10}
FAILED = []
RESULTS = []
CASE = [""]  # the case run_cases is running


def err(a, b):
    """max|a - b| / max(1, max|b|), b the reference."""
    a = np.asarray(to_numpy(a), dtype=np.float64)
    b = np.asarray(to_numpy(b), dtype=np.float64)
    if a.shape != b.shape:
        raise AssertionError("shape %s vs reference %s" % (a.shape, b.shape))
    if a.size == 0:
        return 0.0
    if not np.all(np.isfinite(a)):
        return float("inf")
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def check(name, got, ref, tol=TOL["f32"]):
    """Compare nncc's `got` with the reference; print PASS/FAIL with the error."""
    try:
        e = err(got, ref)
        ok = e <= tol
        r = np.abs(np.asarray(to_numpy(ref), dtype=np.float64))
        msg = "err=%.3e tol=%.0e max|ref|=%.2g" % (e, tol, r.max() if r.size else 0.0)
    except AssertionError as ex:
        e, ok, msg = float("inf"), False, str(ex)
    print("%s %s %s" % ("PASS" if ok else "FAIL", name, msg))
    sys.stdout.flush()
    RESULTS.append({"name": name, "case": CASE[0], "err": e, "tol": tol, "ok": ok})
    if not ok:
        FAILED.append(name)
    return ok


def check_exact_or_close(name, got, ref, tol=TOL["f32"]):
    """Integer and boolean references must match exactly, dtype included;
    float ones within `tol` (check())."""
    want = to_numpy(ref)
    if want.dtype.kind in "biu":
        ok = got.dtype == want.dtype and np.array_equal(got, want)
        return expect("%s (exact, %s)" % (name, got.dtype), ok)
    return check(name, got, ref, tol)


def expect(name, cond, detail=""):
    print("%s %s%s" % ("PASS" if cond else "FAIL", name, (" " + detail) if detail else ""))
    if not cond:
        FAILED.append(name)
    return cond


def finish():
    out = os.environ.get("NNCC_PARITY_RESULTS")
    if out:  # one JSON line per check, for docs/parity.md
        with open(out, "a") as f:
            for r in RESULTS:
                f.write(json.dumps(dict(r, script=os.path.basename(sys.argv[0]))) + "\n")
    if FAILED:
        print("FAILED: " + ", ".join(FAILED))
        sys.exit(1)
    print("ALL PASSED")


# --------------------------------------------------------------------------
# the nncc driver
# --------------------------------------------------------------------------
def _find_nncc():
    n = os.environ.get("NNCC")
    if n:
        return n
    here = os.path.dirname(os.path.abspath(__file__))
    cand = os.path.join(here, "..", "..", "build", "bin", "nncc")
    if os.path.exists(cand):
        return os.path.abspath(cand)
    return shutil.which("nncc") or "nncc"


NNCC = _find_nncc()
_HAS_RUN = None


def has_run_command():
    global _HAS_RUN
    if _HAS_RUN is None:
        try:
            p = subprocess.run([NNCC, "run", "--help"], capture_output=True, text=True, timeout=60)
            _HAS_RUN = p.returncode == 0 and "--inputs" in (p.stdout + p.stderr)
        except OSError:
            _HAS_RUN = False
    return _HAS_RUN


def backend():
    b = os.environ.get("NNCC_PARITY_BACKEND", "auto")
    if b == "auto":
        return "run" if has_run_command() else "abi"
    return b


def cache_dir():
    d = os.environ.get("NNCC_TEST_CACHE") or os.path.join(tempfile.gettempdir(),
                                                        "nncc-test-cache-%d" % os.getuid())
    os.makedirs(d, exist_ok=True)
    return d


# The kernel headers the generated code includes (nvcc compiles the CUDA
# half at `nncc compile` time, so a header change must miss the cache).
RUNTIME_INCLUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                               "runtime", "include")


def _nncc_stamp():
    """Size and mtime of nncc and of the libraries a compiled model links
    (the model-support archive is linked statically), as nncc run's cache,
    and the newest mtime, count and total size of the runtime headers."""
    exe = shutil.which(NNCC) or NNCC
    libdir = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(exe))), "lib")
    parts = []
    for f in [exe] + [os.path.join(libdir, l) for l in (
            "libnncc_model_support.a", "libnncc_kernels.so", "libnncc_runtime.so")]:
        try:
            st = os.stat(f)
            parts.append("%d:%d" % (st.st_size, st.st_mtime_ns))
        except OSError:
            parts.append("?")
    newest = count = size = 0
    for root, _, files in os.walk(RUNTIME_INCLUDE):
        for f in files:
            st = os.stat(os.path.join(root, f))
            newest, count, size = max(newest, st.st_mtime_ns), count + 1, size + st.st_size
    parts.append("headers %d:%d:%d" % (newest, count, size))
    return "|".join(parts)


def compile_model(nn_path, extra_args=()):
    """`nncc compile nn_path -o DIR`, cached; returns the path of lib<model>.so.
    The key covers $NNCC_OPT_LEVEL (the test suite builds at -O1, the
    benchmarks at the default -O3, and both share this cache)."""
    src = open(nn_path, "rb").read()
    opt = "|opt=%s" % os.environ.get("NNCC_OPT_LEVEL", "")
    key = hashlib.sha256(src + _nncc_stamp().encode() + repr(tuple(extra_args)).encode() +
                         opt.encode()).hexdigest()[:16]
    stem = os.path.splitext(os.path.basename(nn_path))[0]
    root = cache_dir()
    out = os.path.join(root, "%s-%s" % (stem, key))
    with open(os.path.join(root, ".lock-%s-%s" % (stem, key)), "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)  # parallel lit tests compile a model once
        libs = [f for f in os.listdir(out) if f.startswith("lib") and f.endswith(".so")] \
            if os.path.isdir(out) else []
        if not libs:
            tmp = out + ".tmp%d" % os.getpid()
            shutil.rmtree(tmp, ignore_errors=True)
            p = subprocess.run([NNCC, "compile", nn_path, "-o", tmp] + list(extra_args),
                               capture_output=True, text=True)
            if p.returncode != 0:
                shutil.rmtree(tmp, ignore_errors=True)
                raise NNCCError("nncc compile %s failed (%d):\n%s%s" % (
                    nn_path, p.returncode, p.stdout, p.stderr))
            shutil.rmtree(out, ignore_errors=True)
            os.replace(tmp, out)
            libs = [f for f in os.listdir(out) if f.startswith("lib") and f.endswith(".so")]
    return os.path.join(out, libs[0])


class NNCCError(RuntimeError):
    pass


# --------------------------------------------------------------------------
# ctypes view of nncc_model.h
# --------------------------------------------------------------------------
DT = {1: np.float64, 2: np.float32, 3: np.float16, 5: np.int64, 6: np.int32,
      7: np.int16, 8: np.int8, 9: np.uint8, 10: np.bool_}
DT_CODE = {np.dtype(v): k for k, v in DT.items()}


# The ctypes mirror of nncc_model.h is the Python package's (python/nncc/_abi.py).
_Error, _TensorInfo, _ABI, _set_input_t = _abi.Error_, _abi.TensorInfo, _abi.ABI, _abi.SetTensorFn


class Library:
    """A compiled lib<model>.so driven through its C ABI."""

    def __init__(self, so_path):
        self.path = so_path
        self.dll = C.CDLL(so_path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        self.dll.nncc_model_get_abi.restype = C.POINTER(_ABI)
        self.abi = self.dll.nncc_model_get_abi().contents
        if self.abi.abi_version < 1:  # later ABIs only append members
            raise NNCCError("ABI version %d" % self.abi.abi_version)
        dims = [self.abi.dim_names[i].decode() for i in range(self.abi.num_dims)]

        def infos(n, arr):
            res = []
            for i in range(n):
                t = arr[i]
                shape = [t.dims[d] if t.dims[d] >= 0 else dims[-t.dims[d] - 1]
                         for d in range(t.rank)]
                res.append((t.name.decode(), DT.get(t.dtype), shape))
            return res
        self.name = self.abi.model_name.decode()
        self.precision = self.abi.precision.decode()
        self.inputs = infos(self.abi.num_inputs, self.abi.inputs)
        self.outputs = infos(self.abi.num_outputs, self.abi.outputs)
        self.params = infos(self.abi.num_params, self.abi.params)

    def _ok(self, status, e, what):
        if status != 0:
            raise NNCCError("%s: %s: status %d: %s" % (self.name, what, status,
                                                       e.message.decode(errors="replace")))

    def context(self, weights=None, seed=None, target=0):
        return Context(self, weights, seed, target)


class Context:
    """One nncc_model context (weights + arena)."""

    def __init__(self, lib, weights=None, seed=None, target=0):
        self.lib, self.abi = lib, lib.abi
        e = _Error()
        h = C.c_void_p()
        lib._ok(self.abi.create(target, C.byref(h), C.byref(e)), e, "create")
        self.h = h
        if weights is not None:
            self.load_weights(weights)
        elif seed is not None:
            lib._ok(self.abi.init_weights(self.h, seed, C.byref(e)), e, "init_weights")

    def load_weights(self, weights):
        e = _Error()
        if isinstance(weights, dict):
            with tempfile.TemporaryDirectory() as d:
                p = os.path.join(d, "w.safetensors")
                save_safetensors(p, weights)
                self.lib._ok(self.abi.load_weights(self.h, p.encode(), C.byref(e)), e,
                             "load_weights")
        else:
            self.lib._ok(self.abi.load_weights(self.h, weights.encode(), C.byref(e)), e,
                         "load_weights")

    def set_inputs(self, inputs):
        e = _Error()
        self._keep = []
        for name, v in inputs.items():
            a = to_numpy(v)
            shape = (C.c_int64 * max(1, a.ndim))(*a.shape)
            self._keep.append(a)
            self.lib._ok(self.abi.set_input(self.h, name.encode(), DT_CODE[a.dtype], a.ndim,
                                            shape, a.ctypes.data_as(C.c_void_p), C.byref(e)),
                         e, "set_input(%s)" % name)

    def forward(self):
        e = _Error()
        self.lib._ok(self.abi.forward(self.h, C.byref(e)), e, "forward")

    def outputs(self):
        res = {}
        for name, _, _ in self.lib.outputs:
            res[name] = self.output(name)
        return res

    def output(self, name):
        e = _Error()
        dt, rank = C.c_int(), C.c_int32()
        shape, data = C.POINTER(C.c_int64)(), C.c_void_p()
        self.lib._ok(self.abi.get_output(self.h, name.encode(), C.byref(dt), C.byref(rank),
                                         C.byref(shape), C.byref(data), C.byref(e)),
                     e, "get_output(%s)" % name)
        shp = tuple(shape[i] for i in range(rank.value))
        npdt = np.dtype(DT[dt.value])
        n = int(np.prod(shp)) if shp else 1
        buf = (C.c_char * (n * npdt.itemsize)).from_address(data.value) if n else b""
        return np.frombuffer(bytes(buf), dtype=npdt).reshape(shp).copy()

    def memory_stats(self):
        e = _Error()
        a, p = C.c_uint64(), C.c_uint64()
        self.lib._ok(self.abi.memory_stats(self.h, C.byref(a), C.byref(p), C.byref(e)), e,
                     "memory_stats")
        return a.value, p.value

    def close(self):
        if self.h:
            self.abi.destroy(self.h)
            self.h = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Model:
    """A .nn model run by nncc (see the module doc for the backend choice)."""

    def __init__(self, nn_path, backend_name=None):
        self.nn = os.path.abspath(nn_path)
        self.backend = backend_name or backend()
        self._lib = None

    @property
    def lib(self):
        if self._lib is None:
            self._lib = Library(compile_model(self.nn))
        return self._lib

    def run(self, weights, inputs, seed=None):
        """Forward once; returns {output name: ndarray} (incl. 'loss' if any)."""
        if self.backend == "run":
            return self._run_cli(weights, inputs, seed)
        ctx = self.lib.context(weights=weights, seed=seed)
        try:
            ctx.set_inputs(inputs)
            ctx.forward()
            return ctx.outputs()
        finally:
            ctx.close()

    def _run_cli(self, weights, inputs, seed):
        with tempfile.TemporaryDirectory() as d:
            ip, op = os.path.join(d, "in.safetensors"), os.path.join(d, "out.safetensors")
            save_safetensors(ip, inputs)
            cmd = [NNCC, "run", self.nn, "--inputs", ip, "-o", op, "--target", "cpu"]
            if weights is not None:
                wp = weights
                if isinstance(weights, dict):
                    wp = os.path.join(d, "w.safetensors")
                    save_safetensors(wp, weights)
                cmd += ["--weights", wp]
            if seed is not None:
                cmd += ["--seed", str(seed)]
            env = dict(os.environ)
            env.setdefault("NNCC_CACHE_DIR", cache_dir())
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if p.returncode != 0:
                raise NNCCError("%s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode,
                                                          p.stdout, p.stderr))
            return load_safetensors(op)


def check_grads(name, nn_path, weights, inputs, loss, params):
    """`nncc run --grad` against torch.autograd: back-propagates the torch
    `loss` (a float64 graph over the leaf tensors `params`, by parameter
    name) and checks nncc's loss and every grad.<param>."""
    loss.backward()
    g = grad_run(nn_path, weights, inputs)
    check("%s loss (--grad)" % name, g["loss"], loss.detach())
    for k, p in params.items():
        check("%s grad.%s" % (name, k), g["grad." + k], p.grad)


def op_seeds(nn_path, op_name):
    """The `seed` attributes of the `op_name` ops (e.g. "nn.sample") of a
    model's nn module, in program order: what a reference needs to redraw
    nncc's masks and samples (nncc_testing.refs)."""
    ir = subprocess.run([NNCC, "compile", nn_path, "--emit", "nn", "-o", "-"],
                        capture_output=True, text=True, check=True).stdout
    return [int(m) for m in re.findall(re.escape(op_name) + r" .*?seed = (\d+)", ir)]


def grad_run(nn_path, weights, inputs, precision=None, extra_args=()):
    """`nncc run M.nn --grad` on the CPU (weights and inputs: arrays or torch
    tensors by name): {name: ndarray} with the outputs, `loss` and
    grad.<param> of every parameter."""
    with tempfile.TemporaryDirectory() as d:
        wp, ip, op = (os.path.join(d, n) for n in ("w.st", "in.st", "out.st"))
        save_safetensors(wp, {k: to_numpy(v) for k, v in weights.items()})
        save_safetensors(ip, {k: to_numpy(v) for k, v in inputs.items()})
        cmd = [NNCC, "run", nn_path, "--grad", "--weights", wp, "--inputs", ip, "-o", op,
               "--target", "cpu", "--quiet"]
        if precision:
            cmd += ["--precision", precision]
        cmd += list(extra_args)
        env = dict(os.environ)
        env.setdefault("NNCC_CACHE_DIR", cache_dir())
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if p.returncode != 0:
            raise NNCCError(" ".join(cmd) + "\n" + p.stdout + p.stderr)
        return load_safetensors(op)


def state_dict(module, prefix=""):
    """{prefix + name: float32 ndarray} of a torch module's state_dict."""
    return {prefix + k: to_numpy(v) for k, v in module.state_dict().items()}


def randomize_(module, scale=None, seed=None):
    """Re-draw every parameter of a torch module in place, so that no
    parameter is a trivial 0 or 1: layer norms get weight 1 +- 0.2 and bias
    +- 0.1; every other parameter U(-s, s) with s = `scale` or 1/sqrt(last
    dim) (PyTorch's default bound for weights)."""
    import torch
    g = torch.Generator().manual_seed(seed) if seed is not None else None
    u = lambda shape: torch.rand(shape, generator=g) * 2 - 1
    with torch.no_grad():
        norms = set()
        for m in module.modules():
            if isinstance(m, torch.nn.LayerNorm) and m.elementwise_affine:
                m.weight.copy_(1.0 + 0.2 * u(m.weight.shape))
                m.bias.copy_(0.1 * u(m.bias.shape))
                norms.update((id(m.weight), id(m.bias)))
        for name, p in module.named_parameters():
            if id(p) in norms:
                continue
            s = scale if scale is not None else (1.0 / max(1, p.shape[-1])) ** 0.5
            p.copy_(s * u(p.shape))
    return module


def run_cases(cases, argv=None):
    """Run the named case functions (all when argv names none), report each
    failure (an exception is a FAIL of that case) and exit like finish()."""
    import traceback
    argv = sys.argv[1:] if argv is None else argv
    names = [a for a in argv if not a.startswith("-")] or list(cases)
    for n in names:
        if n not in cases:
            print("FAIL unknown case %r (have: %s)" % (n, ", ".join(cases)))
            FAILED.append(n)
            continue
        CASE[0] = n
        try:
            cases[n]()
        except Exception as ex:  # a crash or an nncc error fails this case only
            traceback.print_exc(file=sys.stdout)
            print("FAIL %s raised %s: %s" % (n, type(ex).__name__, str(ex)[:2000]))
            FAILED.append(n)
        sys.stdout.flush()
    finish()
