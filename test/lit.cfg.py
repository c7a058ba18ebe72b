# -*- Python -*-
import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "nncc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".nn", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.nncc_obj_root, "test")
config.excludes = ["Inputs", "Unit", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

llvm_config.use_default_substitutions()
config.substitutions.append(("%models", os.path.join(config.nncc_src_root, "models")))
config.substitutions.append(("%nncc_src", config.nncc_src_root))
# The headers a generated library and a C program using it compile against.
config.substitutions.append(("%nncc_runtime_include", os.path.join(config.nncc_src_root, "runtime", "include")))
# Directory of libnncc_kernels.so (kernel parity tests load it with ctypes).
config.substitutions.append(("%nncc_lib", os.path.join(config.nncc_obj_root, "lib")))
# The build tree itself (cmake --install of the package test).
config.substitutions.append(("%nncc_build", config.nncc_obj_root))

# Debian's PyTorch lives under the system interpreter, which may not be the
# first python3 on PATH.
python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")
config.substitutions.append(("%python", python))
# The Python test helpers (utils/nncc_testing: safetensors, the C ABI of
# compiled models, libnncc_kernels bindings, PyTorch references).
config.environment["PYTHONPATH"] = os.path.join(config.nncc_src_root, "utils")

# One compile cache for the whole suite (NNCC_CACHE_DIR of nncc run /
# train / inspect): tests that build the same model at the same dims share
# the library. The key covers the generated source, the options, nncc and
# the runtime (headers and libraries), so a rebuilt tree never reuses a stale
# library, and concurrent builds of one key are safe (CompileCache.cpp).
# Tests that look into the cache directory give their own.
nncc_cache = lit_config.params.get("nncc_cache",
                                   os.path.join(config.nncc_obj_root, "test", "nncc-cache"))
# Model libraries built at -O0 (nncc's default is -O3): the host compiler is
# most of a small model's build and the suite builds hundreds; the kernels
# (libnncc_kernels) are the release build's either way and the results the
# same. Five model-heavy tests took 12% less time at -O0 than at -O1
# (2026-11-27); test/Run/opt-level.test covers the levels.
# `lit --param nncc_opt_level=N` runs the suite at another level,
# `--param nncc_cache=DIR` with another cache.
config.environment["NNCC_OPT_LEVEL"] = lit_config.params.get("nncc_opt_level", "0")
# OpenMP threads that wait sleep instead of spinning: lit runs one test per
# core, each with a thread per core, and spinning threads took the cores the
# other test's threads were waiting for (Parity + Train: 170 s -> 116 s,
# 2 cores, 2026-11-27; as fast as one thread per test, and the threaded
# kernel paths stay exercised). `--param omp_wait=active` restores the
# default, `--param omp_threads=N` sets OMP_NUM_THREADS and
# OPENBLAS_NUM_THREADS.
config.environment["OMP_WAIT_POLICY"] = lit_config.params.get("omp_wait", "passive")
if "omp_threads" in lit_config.params:
    config.environment["OMP_NUM_THREADS"] = lit_config.params["omp_threads"]
    config.environment["OPENBLAS_NUM_THREADS"] = lit_config.params["omp_threads"]
config.environment["NNCC_CACHE_DIR"] = nncc_cache
config.substitutions.append(("%nncc_cache", nncc_cache))
# One directory of precompiled host preludes (NNCC_PCH_DIR) for every test,
# those with a cache of their own included: the prelude is built once per
# optimisation level and precision, not once per test.
config.environment["NNCC_PCH_DIR"] = os.path.join(nncc_cache, "pch")

# `gnu-cxx`: the tests' host compiler (c++: lit passes no $CXX) is GCC's,
# which the precompiled prelude needs (test/Target/host-pch.test).
host_cxx = shutil.which("c++")
if host_cxx and "g++" in os.path.basename(os.path.realpath(host_cxx)):
    config.available_features.add("gnu-cxx")

# `root`: tests that change a file's owner (test/Run/cache-trust.test).
if os.geteuid() == 0:
    config.available_features.add("root")

llvm_config.with_environment("PATH", config.nncc_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tools = [
    ToolSubst("nncc", unresolved="fatal"),
    ToolSubst("nncc-opt", unresolved="fatal"),
    ToolSubst("nncc-translate", unresolved="fatal"),
]
llvm_config.add_tool_substitutions(tools, [config.nncc_tools_dir])

# test/Runtime/FakeCudaDriver.c (built with the unit tests): a CUDA driver
# whose device memory is host memory.
fake_cuda = os.path.join(config.nncc_obj_root, "lib", "libnncc_fake_cuda.so")
if os.path.exists(fake_cuda):
    config.available_features.add("fake-cuda")
config.substitutions.append(("%nncc_fake_cuda", fake_cuda))

# A GPU is present only where a CUDA driver answers; nvcc alone compiles.
if config.nncc_have_nvcc:
    config.available_features.add("nvcc")
    # %nvcc_check: nvcc with the optimisers off (host, cicc and ptxas at -O0),
    # for the tests that only check that sources compile without warnings:
    # the front end still checks every instantiation and ptxas every resource
    # limit, in a twentieth of the time. Kernels that run are built at -O3
    # (utils/device_prep.sh, nncc compile).
    nvcc_check = config.nncc_nvcc + " -O0 -Xcicc -O0 -Xptxas -O0"
    # %nvcc_syntax: the same, with the host pass stopped after semantic
    # analysis (g++ -fsyntax-only: every instantiation checked, no object
    # file written), for generated model sources whose host side is only
    # checked; 9 s instead of 13 s for bert_small's training source.
    config.substitutions.append(("%nvcc_syntax", nvcc_check + " -Xcompiler -fsyntax-only"))
    config.substitutions.append(("%nvcc_check", nvcc_check))
    config.substitutions.append(("%nvcc", config.nncc_nvcc))
if shutil.which("nvidia-smi"):
    try:
        if subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20).returncode == 0:
            config.available_features.add("cuda")
    except Exception:
        pass

try:
    if subprocess.run([python, "-c", "import torch"], capture_output=True, timeout=120).returncode == 0:
        config.available_features.add("torch")
except Exception:
    pass

# `torch2` and %torch2_python: an interpreter with PyTorch >= 2.4 (the
# torch.library custom ops that torch.compile traces, FSDP2's fully_shard),
# beside Debian's torch 1.13 under %python. utils/setup.sh makes one, a
# virtual environment with PyTorch from PyPI at $NNCC_VENV (default
# ~/.cache/nncc-venv); `lit --param torch2_python=PATH` names another.
# Without one the torch2 tests are unsupported, with a note saying why.
torch2_python = lit_config.params.get("torch2_python")
if not torch2_python:
    venv = os.environ.get("NNCC_VENV") or os.path.join(os.path.expanduser("~"), ".cache", "nncc-venv")
    torch2_python = os.path.join(venv, "bin", "python")
torch2_why = None
if not os.path.exists(torch2_python):
    torch2_why = "%s does not exist (utils/setup.sh makes it)" % torch2_python
else:
    try:
        r = subprocess.run([torch2_python, "-c",
                            "import torch; print(torch.__version__); "
                            "print(hasattr(torch.library, 'custom_op'))"],
                           capture_output=True, text=True, timeout=120)
        lines = r.stdout.split()
        version = tuple(int("".join(c for c in p if c.isdigit()) or 0)
                        for p in lines[0].split("+")[0].split(".")[:2]) if lines else ()
        if r.returncode != 0 or len(lines) < 2:
            torch2_why = "%s cannot import torch: %s" % (
                torch2_python, (r.stderr.strip().splitlines() or ["?"])[-1])
        elif version < (2, 4) or lines[1] != "True":
            torch2_why = "%s has torch %s, not >= 2.4" % (torch2_python, lines[0])
        else:
            config.available_features.add("torch2")
            config.substitutions.append(("%torch2_python", torch2_python))
    except Exception as e:
        torch2_why = "%s: %s" % (torch2_python, e)
# `hf`: %torch2_python also imports Hugging Face's tokenizers, safetensors and
# transformers (utils/setup.sh adds them to its virtual environment): the
# nncc.data tests (test/Data, docs/data.md).
if "torch2" in config.available_features:
    try:
        r = subprocess.run([torch2_python, "-c", "import tokenizers, safetensors, transformers"],
                           capture_output=True, text=True, timeout=120)
        if r.returncode == 0:
            config.available_features.add("hf")
        else:
            lit_config.note("no `hf` feature, the nncc.data tests are unsupported: %s cannot import "
                            "tokenizers, safetensors and transformers (utils/setup.sh adds them): %s"
                            % (torch2_python, (r.stderr.strip().splitlines() or ["?"])[-1]))
    except Exception as e:
        lit_config.note("no `hf` feature: %s: %s" % (torch2_python, e))
# torch.compile's inductor caches its kernels in the suite's cache folder
# (not /tmp/torchinductor_$USER; lit passes no USER).
config.environment["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(nncc_cache, "torchinductor")
if torch2_why:
    lit_config.note("no `torch2` feature, the tests that need PyTorch >= 2.4 are unsupported: "
                    + torch2_why)
