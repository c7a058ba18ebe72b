"""Compiled models: `compile` runs the nncc compiler, `Library` loads a
lib<model>.so and `Context` drives one of its contexts through the C ABI."""
import ctypes as C
import hashlib
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import time
import warnings

import numpy as np

from . import _abi
from .errors import Error


def _executable(path, what):
    """`path` (a file, or a bare name looked up on PATH) as an absolute
    executable; an error naming `what` when it is not one."""
    p = os.fspath(path)
    found = p if os.sep in p else shutil.which(p)
    if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise Error("NOT_FOUND", "%s: %s is not an executable file" % (what, p))
    return os.path.abspath(found)


def _find_nncc(explicit=None):
    """The compiler: `nncc=` if given, else $NNCC if set, else nncc on PATH.
    A given path that is not an executable is an error, never a fallback to
    the next place."""
    if explicit is not None:
        return _executable(explicit, "nncc=%r" % (os.fspath(explicit),))
    env = os.environ.get("NNCC")
    if env:
        return _executable(env, "NNCC=%r" % env)
    found = shutil.which("nncc")
    if found:
        return os.path.abspath(found)
    raise Error("NOT_FOUND", "the nncc compiler was not found: pass nncc=PATH, set NNCC, or "
                "put nncc on PATH (cmake --install puts it in <prefix>/bin)")


# --------------------------------------------------------------------------
# The compile cache: nncc's cache folder (lib/Driver/CompileCache.cpp), with
# entries of nncc.compile's own beside the CLI's.
# --------------------------------------------------------------------------
_ENTRY_FORMAT = "nncc-python-cache-entry-1"
_ENTRY_PREFIX = "py-"


def _cache_root():
    """nncc's cache folder: $NNCC_CACHE_DIR, else $XDG_CACHE_HOME/nncc, else
    $HOME/.cache/nncc, else the account's home + /.cache/nncc (cacheRoot())."""
    d = os.environ.get("NNCC_CACHE_DIR")
    if d:
        return d
    d = os.environ.get("XDG_CACHE_HOME")
    if d:
        return os.path.join(d, "nncc")
    d = os.environ.get("HOME")
    if d:
        return os.path.join(d, ".cache", "nncc")
    try:
        home = pwd.getpwuid(os.geteuid()).pw_dir
    except KeyError:
        home = ""
    if home:
        return os.path.join(home, ".cache", "nncc")
    raise Error("IO", "there is no cache folder: neither NNCC_CACHE_DIR, XDG_CACHE_HOME nor "
                "HOME is set and this user has no home directory (set NNCC_CACHE_DIR, or "
                "pass output_dir)")


def _foreign_writer(st, path, what):
    """Why `st` could have been written by someone else ("" when it could not)."""
    if st.st_uid != os.geteuid():
        return "%s '%s' belongs to user %d, not to this user (%d)" % (
            what, path, st.st_uid, os.geteuid())
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "%s '%s' can be written by its group or others (mode %04o)" % (
            what, path, stat.S_IMODE(st.st_mode))
    return ""


def _private_dir(path):
    """Creates `path` (0700) when missing; an error unless only this user can
    write it (privateCacheDir())."""
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise Error("IO", "cannot create the cache folder '%s': %s (set NNCC_CACHE_DIR, or "
                    "pass output_dir)" % (path, e.strerror or e)) from None
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise Error("IO", "the cache folder '%s' is not a directory (set NNCC_CACHE_DIR)" % path)
    why = _foreign_writer(st, path, "the cache folder")
    if why:
        raise Error("IO", why + ": nncc loads libraries from it only when no one else can "
                    "write it (chmod go-w, or set NNCC_CACHE_DIR to a folder of your own)")


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _stamp(path):
    """Size and modification time of a file ("" when it is missing), as
    nncc's compilerFingerprint() records its files."""
    try:
        st = os.stat(path)
    except OSError:
        return ""
    return "%s:%d:%d" % (path, st.st_size, st.st_mtime_ns)


def _runtime_include(exe):
    """The runtime headers `exe` compiles against (runtimeLocation()): an
    installed nncc's <prefix>/include, else the source tree of the build tree
    it sits in (its CMakeCache.txt), else None."""
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(exe)))
    installed = os.path.join(prefix, "include")
    if os.path.isfile(os.path.join(installed, "nncc", "Runtime", "nncc_model.h")):
        return installed
    try:
        with open(os.path.join(prefix, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    src = os.path.join(line.split("=", 1)[1].strip(), "runtime", "include")
                    return src if os.path.isdir(src) else None
    except OSError:
        pass
    return None


def _compiler_fingerprint(exe):
    """What nncc's own cache key covers of the compiler: the nncc binary (its
    SHA-256 here), the libraries a model links and the runtime headers."""
    real = os.path.realpath(exe)
    parts = ["nncc " + _sha256_file(real), _stamp(real)]
    libdir = os.path.join(os.path.dirname(os.path.dirname(real)), "lib")
    for name in ("libnncc_model_support.a", "libnncc_kernels.so", "libnncc_runtime.so"):
        parts.append(_stamp(os.path.join(libdir, name)))
    include = _runtime_include(real)
    if include:
        for sub in ("Kernels", "Runtime", "ModelSupport", os.path.join("Kernels", "CUDA")):
            d = os.path.join(include, "nncc", sub)
            try:
                names = sorted(os.listdir(d))
            except OSError:
                continue
            parts.extend(_stamp(os.path.join(d, n)) for n in names)
    return "\n".join(parts)


def _entry_damage(entry):
    """Why the cache entry `entry` cannot be used ("" when it can): it and
    its files must be this user's alone, the library of the recorded size and
    SHA-256 (entryDamage())."""
    try:
        st = os.lstat(entry)
    except OSError:
        return "it is missing"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    why = _foreign_writer(st, entry, "the entry")
    if why:
        return why
    manifest = os.path.join(entry, "manifest")
    try:
        st = os.lstat(manifest)
        if not stat.S_ISREG(st.st_mode):
            return "its manifest is not a regular file"
        why = _foreign_writer(st, manifest, "the manifest")
        if why:
            return why
        with open(manifest) as f:
            lines = f.read().splitlines()
    except OSError:
        return "its manifest is missing"
    if len(lines) != 2 or lines[0] != _ENTRY_FORMAT or len(lines[1].split(" ")) != 3:
        return "its manifest does not parse"
    name, size, digest = lines[1].split(" ")
    lib = os.path.join(entry, name)
    if os.sep in name or not (name.startswith("lib") and name.endswith(".so")):
        return "its manifest names no library"
    try:
        st = os.lstat(lib)
    except OSError:
        return "its library is missing"
    if not stat.S_ISREG(st.st_mode):
        return "its library is not a regular file"
    why = _foreign_writer(st, lib, "the library")
    if why:
        return why
    if str(st.st_size) != size or _sha256_file(lib) != digest:
        return "its library's size or SHA-256 differs from what was recorded"
    return ""


def _entry_library(entry):
    with open(os.path.join(entry, "manifest")) as f:
        return os.path.join(entry, f.read().splitlines()[1].split(" ")[0])


def _remove_stale_temporaries(root):
    """What builds that never finished left (killed compiles): tmp-py-*
    folders untouched for an hour (removeStaleTemporaries())."""
    hour_ago = time.time() - 3600
    try:
        names = os.listdir(root)
    except OSError:
        return
    for n in names:
        if n.startswith("tmp-" + _ENTRY_PREFIX):
            p = os.path.join(root, n)
            try:
                if os.lstat(p).st_mtime < hour_ago:
                    shutil.rmtree(p, ignore_errors=True)
            except OSError:
                pass


def _run_compiler(cmd, out, path):
    p = subprocess.run(cmd + ["-o", out], capture_output=True, text=True)
    if p.returncode != 0:
        raise Error.from_compiler(p.stderr + p.stdout, "nncc compile %s failed" % path)
    libs = [f for f in os.listdir(out) if f.startswith("lib") and f.endswith(".so")]
    if len(libs) != 1:
        raise Error("INTERNAL", "nncc compile wrote %d libraries into %s" % (len(libs), out))
    return libs[0]


def _compile_cached(cmd, exe, path, options):
    """The library of `cmd` (nncc compile ... without -o) from the cache,
    built into it on a miss: in a private folder renamed into place, so
    concurrent calls are safe and nothing is left elsewhere."""
    with open(path, "rb") as f:
        source = f.read()
    h = hashlib.sha256()
    for field in (_ENTRY_FORMAT, source, _compiler_fingerprint(exe), repr(sorted(options.items())),
                  "opt=" + os.environ.get("NNCC_OPT_LEVEL", ""), "cxx=" + os.environ.get("CXX", ""),
                  "nvcc=" + os.environ.get("NNCC_NVCC", "")):
        data = field if isinstance(field, bytes) else field.encode()
        h.update(b"%d:" % len(data) + data)
    key = h.hexdigest()[:32]
    root = _cache_root()
    _private_dir(root)
    _remove_stale_temporaries(root)
    entry = os.path.join(root, _ENTRY_PREFIX + key)
    if os.path.lexists(entry):
        damage = _entry_damage(entry)
        if not damage:
            return _entry_library(entry)
        warnings.warn("nncc: the cache entry '%s' is damaged (%s); building it again"
                      % (entry, damage))
        try:
            shutil.rmtree(entry) if os.path.isdir(entry) and not os.path.islink(entry) \
                else os.unlink(entry)
        except OSError as e:
            raise Error("IO", "cannot remove the damaged cache entry '%s': %s" % (entry, e)) \
                from None
    tmp = tempfile.mkdtemp(prefix="tmp-%s%s-" % (_ENTRY_PREFIX, key), dir=root)
    try:
        name = _run_compiler(cmd, tmp, path)
        lib = os.path.join(tmp, name)
        with open(os.path.join(tmp, "manifest"), "w") as f:
            f.write("%s\n%s %d %s\n" % (_ENTRY_FORMAT, name, os.path.getsize(lib),
                                        _sha256_file(lib)))
        try:
            os.rename(tmp, entry)
        except OSError:
            # Another process built the same key first: keep its (identical)
            # entry when it is sound.
            if _entry_damage(entry):
                raise Error("IO", "cannot move the new library into the cache entry '%s'"
                            % entry) from None
        else:
            tmp = None
        return _entry_library(entry)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def compile(path, target="cpu", grad=True, vjp=True, f64=False, output_dir=None,
            memory_budget=None, dims=None, nncc=None, precision=None):
    """Compiles a .nn model with `nncc compile` and loads the library.

    target: "cpu" or "cuda" (the CPU and CUDA; needs nvcc). grad / vjp: the
    training entry points and the vector-Jacobian product (nncc.torch.Module
    needs both). f64: CPU code in double precision (precision="f64").
    precision: "f32" (default), "f64" or "bf16" (bf16 storage, fp32
    arithmetic: target "cuda"). memory_budget / dims: `--memory-budget` for
    the binding `dims` ({"B": 64, "T": 128}).
    output_dir: where lib<model>.so goes. Without it the library comes from
    nncc's compile cache ($NNCC_CACHE_DIR, else ~/.cache/nncc: the folder of
    `nncc run`), built there on the first call: keyed by the source, the
    compiler (the nncc binary's SHA-256, its libraries and runtime headers)
    and the options, checked (size and SHA-256) before it is loaded, nothing
    left anywhere else. nncc: the compiler (else $NNCC, else PATH; a given
    path that is not an executable is an error). Raises nncc.Error with the
    source location on a compile error."""
    if target not in ("cpu", "cuda"):
        raise Error("INVALID_ARGUMENT", "target must be 'cpu' or 'cuda', got %r" % (target,))
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise Error("NOT_FOUND", "no such model file: %s" % path)
    if precision not in (None, "f32", "f64", "bf16"):
        raise Error("INVALID_ARGUMENT",
                    "precision must be 'f32', 'f64' or 'bf16', got %r" % (precision,))
    if f64 and precision not in (None, "f64"):
        raise Error("INVALID_ARGUMENT", "f64=True and precision=%r disagree" % (precision,))
    precision = "f64" if f64 else (precision or "f32")
    exe = _find_nncc(nncc)
    cmd = [exe, "compile", path, "--target", target]
    if grad:
        cmd.append("--grad")
        if vjp:
            cmd.append("--vjp")
    if precision == "f64":
        cmd.append("--f64")
    elif precision == "bf16":
        cmd += ["--precision", "bf16"]
    if memory_budget is not None:
        cmd += ["--memory-budget", str(memory_budget)]
    for k, v in sorted((dims or {}).items()):
        cmd += ["--dim", "%s=%d" % (k, v)]
    options = dict(target=target, grad=bool(grad), vjp=bool(grad and vjp), precision=precision,
                   memory_budget=None if memory_budget is None else str(memory_budget),
                   dims=tuple(sorted((dims or {}).items())))
    if output_dir is not None:
        os.makedirs(output_dir, exist_ok=True)
        lib_path = os.path.join(output_dir, _run_compiler(cmd, os.fspath(output_dir), path))
    else:
        lib_path = _compile_cached(cmd, exe, path, options)
    lib = Library(lib_path)
    lib.source = os.path.abspath(path)
    lib.compile_options = dict(options, dims=dict(options["dims"]), nncc=exe)
    return lib


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
        # Set by nncc.compile: the model's source and the options it was built
        # with, so that with_precision can build the same model again.
        self.source, self.compile_options = None, None
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
        # ABI 9: whether forward needs each input (False: only the loss reads it).
        self.inference_inputs = [bool(a.inference_inputs[i]) if a.inference_inputs else True
                                 for i in range(a.num_inputs)]
        self._served = None

    def serving(self):
        """This library served without the inputs only the loss reads: a view
        whose inputs are those forward needs and whose outputs leave out the
        loss (docs/runtime.md, "Serving without targets"); its contexts are
        this library's."""
        if self._served is None:
            self._served = _Served(self)
        return self._served

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

    def with_precision(self, precision):
        """The same model built with float storage `precision` ("f32", "f64"):
        this library when it has it, else nncc.compile of its source with its
        other options (the compile cache makes a second call cheap). Only for
        libraries from nncc.compile: a library loaded from a path has no
        source to build from."""
        if precision == self.precision:
            return self
        if self.source is None:
            raise Error("UNSUPPORTED", "%s is %s and was loaded from a path: build it with "
                        "nncc.compile(source) to switch it to %s (or load a %s library)"
                        % (self.path, self.precision, precision, precision))
        o = self.compile_options
        other = compile(self.source, target=o["target"], grad=o["grad"], vjp=o["vjp"],
                        memory_budget=o["memory_budget"], dims=o["dims"] or None,
                        nncc=o["nncc"], precision=precision)
        mine = [(s.name, s.shape) for s in self.params]
        if [(s.name, s.shape) for s in other.params] != mine or \
                [s.name for s in other.inputs] != [s.name for s in self.inputs]:
            raise Error("INVALID_ARGUMENT", "%s changed since %s was built from it: its %s "
                        "build has other inputs or parameters" % (self.source, self.path,
                                                                   precision))
        return other

    def __getstate__(self):
        return {"path": self.path, "source": self.source,
                "compile_options": self.compile_options}

    def __setstate__(self, state):
        self.__init__(state["path"])
        self.source, self.compile_options = state["source"], state["compile_options"]

    def __repr__(self):
        return "nncc.Library(%r: %s)" % (self.name, self.path)


class _Served:
    def __init__(self, lib):
        self._lib = lib
        self.inputs = [s for s, needed in zip(lib.inputs, lib.inference_inputs) if needed]
        self.outputs = [s for s in lib.outputs if s.name != "loss"]
        self.targets = [s.name for s, needed in zip(lib.inputs, lib.inference_inputs)
                        if not needed]

    def __getattr__(self, name):
        return getattr(self._lib, name)

    def __repr__(self):
        return "nncc.Library(%r served without %s: %s)" % (self.name, ", ".join(self.targets),
                                                          self.path)


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

    def set_frozen(self, name, frozen=True):
        """Freeze parameter `name` (False: trainable again): train_step and
        apply_gradients leave it and its optimizer state unchanged and its
        gradient out of the clipping norm (ABI 10; docs/training.md,
        "Fine-tuning")."""
        self._call(self.abi.set_frozen, "set_frozen(%s)" % name, name.encode(),
                   1 if frozen else 0)

    def frozen(self, name):
        """Whether parameter `name` is frozen (set_frozen)."""
        flag = C.c_int32()
        self._call(self.abi.get_frozen, "get_frozen(%s)" % name, name.encode(), C.byref(flag))
        return bool(flag.value)

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
