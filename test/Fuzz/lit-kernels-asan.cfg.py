# -*- Python -*-
# lit configuration for test/Kernels's CPU tests (the kernels' parity and
# gradient checks against PyTorch: Python + ctypes on libnncc_kernels.so) run
# against a sanitized build's libraries instead of the main build's.
# utils/sanitize.sh writes <build-asan>/test-kernels/lit.site.cfg.py, which
# sets nncc_src_root, nncc_exec_root, nncc_lib (the sanitized build's lib/),
# asan_runtime (the compiler's libasan.so, preloaded into Python) and
# llvm_tools_dir, then loads this file. (Not a lit.cfg.py: the main suite
# must not pick it up.)
import os
import subprocess

import lit.formats

config.name = "nncc-kernels-asan"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test"]
kernels = os.path.join(config.nncc_src_root, "test", "Kernels")
config.test_source_root = kernels
config.test_exec_root = config.nncc_exec_root
# The CUDA tests (nvcc, or the host emulation of the generated CUDA) do not
# load libnncc_kernels.so.
config.excludes = ["Inputs", "Emulation"] + sorted(
    f for f in os.listdir(kernels) if f.startswith("cuda"))

python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
# The ASan runtime must be the process's first library: Python itself is not
# instrumented, libnncc_kernels.so is.
config.substitutions.append(("%python", "env LD_PRELOAD=%s %s" % (config.asan_runtime, python)))
config.substitutions.append(("%nncc_lib", config.nncc_lib))
config.environment["PYTHONPATH"] = os.path.join(config.nncc_src_root, "utils")
config.environment["PATH"] = os.pathsep.join([config.llvm_tools_dir, os.environ.get("PATH", "")])
# Leaks are the unit tests' business: Python and PyTorch do not free
# everything at exit. Everything else stops the test with a report.
config.environment["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=0"
config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
# As in test/lit.cfg.py: two tests at once, OpenMP threads that sleep.
config.environment["OMP_WAIT_POLICY"] = "passive"

try:
    if subprocess.run([python, "-c", "import torch"], capture_output=True,
                      timeout=120).returncode == 0:
        config.available_features.add("torch")
except Exception:
    pass
