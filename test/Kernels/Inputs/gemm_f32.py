"""nncc_gemm_f32 / nncc_linear_f32 on both of their back ends against a
float64 product: nncc's own AVX-512 SGEMM (Gemm.cpp, where the CPU has
AVX-512) and OpenBLAS (NNCC_KERNELS_PORTABLE=1), each in a child process
since the choice is read once per process.

Shapes cross every blocking edge of Gemm.cpp: micro-tile rows (14) and
columns (32), the row block (224), the K slice (256) and the column block
(2048); all four transposes; leading dimensions wider than the matrices
(the padding of C must stay untouched); alpha and beta, and beta = 0 over a
C of NaNs (BLAS semantics: C is not read). 1 and 2 threads (the products
over 2^22 multiply-adds are split into one panel per thread)."""
import ctypes as C
import os
import subprocess
import sys

import numpy as np

from nncc_testing.ckernels import i64, load, ptr

CASES = [  # M, N, K, ta, tb, alpha, beta
    (14, 32, 256, 0, 0, 1.0, 0.0),
    (13, 31, 255, 0, 1, 1.0, 0.0),
    (15, 33, 257, 1, 0, -0.5, 1.0),
    (29, 65, 7, 1, 1, 2.0, 0.25),
    (1, 700, 300, 0, 1, 1.0, 0.0),
    (300, 1, 40, 0, 0, 1.0, 1.0),
    (230, 130, 600, 0, 1, 1.0, 0.0),
    (450, 2050, 33, 0, 1, 1.0, 0.5),
    (97, 2100, 513, 1, 0, 0.75, 0.0),
    (1030, 520, 256, 0, 1, 1.0, 0.0),
    (520, 1030, 260, 1, 1, 1.0, 2.0),
]


def run(lib, case, rng):
    M, N, K, ta, tb, alpha, beta = case
    pad = 3
    A = rng.standard_normal((K, M + pad) if ta else (M, K + pad)).astype(np.float32)
    B = rng.standard_normal((N, K + pad) if tb else (K, N + pad)).astype(np.float32)
    C0 = (np.full((M, N + pad), np.nan, np.float32) if beta == 0.0
          else rng.standard_normal((M, N + pad)).astype(np.float32))
    C0[:, N:] = 7.0  # the padding columns: must come back unchanged
    out = C0.copy()
    rc = lib.nncc_gemm_f32(ta, tb, *i64(M, N, K), C.c_float(alpha), ptr(A),
                           C.c_int64(A.shape[1]), ptr(B), C.c_int64(B.shape[1]),
                           C.c_float(beta), ptr(out), C.c_int64(out.shape[1]))
    a = (A[:, :M].T if ta else A[:, :K]).astype(np.float64)
    b = (B[:, :K].T if tb else B[:, :N]).astype(np.float64)
    ref = alpha * (a @ b)
    if beta != 0.0:
        ref += beta * C0[:, :N].astype(np.float64)
    # f32 rounding of K products and sums: |error| <= ~K eps sum |a||b|.
    bound = (abs(alpha) * (np.abs(a) @ np.abs(b)) + abs(beta) * np.abs(C0[:, :N]
             if beta != 0.0 else 0.0)) * (K + 2) * 2.0 ** -24
    got = out[:, :N].astype(np.float64)
    ok = (rc == 0 and np.all(np.isfinite(got)) and np.all(np.abs(got - ref) <= bound)
          and np.array_equal(out[:, N:], C0[:, N:]))
    worst = float(np.max(np.abs(got - ref) / np.maximum(bound, 1e-30)))
    return ok, worst


def linear(lib, rng):
    """The linear entry (bias + gelu epilogue on each panel) at BERT's shape."""
    lib.nncc_linear_f32.argtypes = [C.c_int64] * 3 + [C.c_void_p] * 4 + [
        C.c_int, C.c_double, C.c_void_p]
    M, N, K = 1024, 1024, 256
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((N, K)).astype(np.float32) / 16
    bias = rng.standard_normal(N).astype(np.float32)
    y = np.zeros((M, N), np.float32)
    rc = lib.nncc_linear_f32(M, N, K, ptr(x), ptr(w), ptr(bias), None, 0, 0.0, ptr(y))
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + bias
    err = float(np.max(np.abs(y - ref)) / np.max(np.abs(ref)))
    return rc == 0 and err < 1e-6, err


def child(libdir):
    lib = load(libdir)
    lib.nncc_gemm_f32_backend.restype = C.c_char_p
    print("backend", lib.nncc_gemm_f32_backend().decode())
    rng = np.random.default_rng(7)
    for case in CASES:
        ok, worst = run(lib, case, rng)
        print("%s gemm M%d N%d K%d ta%d tb%d alpha %g beta %g: worst |err| / bound %.3f"
              % ((("PASS" if ok else "FAIL"),) + case + (worst,)))
    ok, err = linear(lib, rng)
    print("%s linear 1024x1024x256 + bias: rel err %.2e" % ("PASS" if ok else "FAIL", err))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        return child(sys.argv[2])
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    avx512 = " avx512f " in flags and " avx512dq " in flags
    failed = 0
    for portable in (False, True):
        for threads in (1, 2):
            env = dict(os.environ, OMP_NUM_THREADS=str(threads))
            env.pop("NNCC_KERNELS_PORTABLE", None)
            if portable:
                env["NNCC_KERNELS_PORTABLE"] = "1"
            out = subprocess.run([sys.executable, __file__, "--child", sys.argv[1]], env=env,
                                 capture_output=True, text=True)
            lines = out.stdout.splitlines()
            want = "openblas" if portable or not avx512 else "nncc-avx512"
            got = lines[0].split()[1] if lines else "?"
            print("%s backend %s (threads %d, expected %s)"
                  % ("PASS" if got == want else "FAIL", got, threads, want))
            failed += got != want or out.returncode != 0
            for line in lines[1:]:
                print(line + " [%s, threads %d]" % (got, threads))
                failed += line.startswith("FAIL")
            if out.returncode != 0:
                print(out.stderr)
    print("FAILED" if failed else "ALL PASSED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
