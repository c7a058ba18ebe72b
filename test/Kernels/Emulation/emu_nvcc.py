#!/usr/bin/env python3
"""A stand-in for nvcc: builds a generated model's CUDA source for the host
emulation (cuda_runtime.h and cublas_v2.h here), so that a whole
`nncc compile --target all` library runs its CUDA functions on the CPU.

    NNCC_NVCC=DIR/bin/nvcc nncc compile M.nn --target all --grad -o OUT
    # DIR/bin/nvcc: a link to this script; DIR/lib64: an empty libcublas.so
    # and libcudart_static.a (the link nncc adds; the shims are inline)

It takes the command nncc runs (`nvcc -std=... -O3 -arch=... -Xcompiler
F,... [-DNAME] -I INCLUDE -c IN.cu -o OUT.o`), rewrites the runtime's CUDA headers
and IN.cu with rewrite_cuda.py (launches, __shared__), and compiles the
result with the host C++ compiler ($CXX, default c++), emu_model.h included
first. Device memory is host memory on both sides of such a library: the
model support's allocations come from test/Runtime/FakeCudaDriver.c
(NNCC_CUDA_DRIVER), the generated code's from the emulated runtime."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, HERE)
import rewrite_cuda  # noqa: E402


def main(argv):
    includes, src, out, xflags, defines = [], None, None, [], []
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-I", "-o", "-c", "-Xcompiler") and i + 1 < len(argv):
            v = argv[i + 1]
            if a == "-I":
                includes.append(v)
            elif a == "-o":
                out = v
            elif a == "-c":
                src = v
            else:
                xflags += [f for f in v.split(",") if f]
            i += 2
            continue
        if a.startswith("-I"):
            includes.append(a[2:])
        elif a.startswith("-D"):  # the precision switch (-DNNCC_PRECISION_BF16)
            defines.append(a)
        i += 1
    if not src or not out:
        sys.stderr.write("emu_nvcc.py: expected -c IN.cu -o OUT.o\n")
        return 2
    work = out + ".emu"
    inc = os.path.join(work, "inc")
    for d in includes:  # the runtime include dir holds nncc/Kernels/CUDA
        if os.path.isdir(os.path.join(d, "nncc", "Kernels", "CUDA")):
            with open(os.devnull, "w") as quiet:
                old, sys.stdout = sys.stdout, quiet
                try:
                    rc = rewrite_cuda.main(["rewrite_cuda.py", d, inc])
                finally:
                    sys.stdout = old
            if rc:
                return rc
    with open(src) as f:
        text = f.read()
    try:
        body = rewrite_cuda.rewrite(text, os.path.basename(src))
    except rewrite_cuda.RewriteError as e:
        sys.stderr.write("emu_nvcc.py: error: %s\n" % e)
        return 1
    cpp = os.path.join(work, os.path.basename(src) + ".cpp")
    with open(cpp, "w") as f:
        f.write('#include "emu_model.h"\n#line 1 "%s"\n%s' % (src, body))
    cxx = os.environ.get("CXX", "c++")
    cmd = [cxx, "-std=c++20", "-O1", "-Wno-unknown-pragmas", "-I", inc, "-I", HERE]
    cmd += ["-I" + d for d in includes] + defines + xflags + ["-c", cpp, "-o", out]
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
