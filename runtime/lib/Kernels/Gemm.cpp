//===- Gemm.cpp - nncc's own single-threaded AVX-512 SGEMM ----------------===//
//
// C = alpha op(A) op(B) + beta C (row-major, any transposes) on one thread,
// for CPUs with AVX-512F. blasGemm (Internal.h) sends every f32 product of
// the CPU kernels here when the CPU has AVX-512 and the product is not tiny;
// gemmPanels keeps splitting large products into one panel per OpenMP
// thread, so this code never starts threads of its own.
//
// Why not OpenBLAS for these: the OpenBLAS that the platform ships picks its
// kernels by CPU model, and on processors it does not know (or where the
// machine forces OPENBLAS_CORETYPE to an AVX2 core because that build is
// wrong on them) it runs 8-lane AVX2 kernels at under half the 16-lane FMA
// peak. This file reaches the 16-lane peak wherever AVX-512F is there.
//
// The blocking is GotoBLAS's / BLIS's:
//
//   for each NC block of columns:
//     for each KC slice of K:          B block packed into NR-column strips
//       for each MC block of rows:     A block packed into MR-row strips (L2)
//         for each NR strip of B:      the strip (KC x NR) stays in L1
//           for each MR strip of A:    micro-kernel: MR x NR accumulators
//
// The micro-kernel holds an MR x NR tile of C in 2 * MR zmm registers
// (NR = 32 columns, two vectors) over the KC loop: per k two loads of B and
// MR broadcasts of A feed 2 * MR FMAs. Packing pads partial strips with
// zeros, so the micro-kernel always runs whole tiles; only the store is
// masked (rows past M, columns past N are never written).
//
// Summation order: each C element is the sum over K in KC slices, within a
// slice in k order, so results differ from OpenBLAS by rounding only.
//
//===----------------------------------------------------------------------===//
#include "Avx512Math.h"
#include "Internal.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define NNCC_GEMM_X86 1
#else
#define NNCC_GEMM_X86 0
#endif

using namespace nncc::kernels;

#if NNCC_GEMM_X86

#define NNCC_GEMM_AVX512 __attribute__((target("avx512f,avx512dq,fma,avx2")))

namespace {

constexpr int MR = 14;   // rows of a micro-tile
constexpr int NR = 32;   // columns of a micro-tile (two 16-lane vectors)
constexpr int64_t KC = 256;
constexpr int64_t MC = MR * 16;
constexpr int64_t NC = NR * 64;

/// Per-thread packing buffers, grown on demand and kept for the thread's life.
struct PackBuffers {
  float *a = nullptr, *b = nullptr;
  size_t aCap = 0, bCap = 0;
  ~PackBuffers() {
    std::free(a);
    std::free(b);
  }
  static float *grow(float *&p, size_t &cap, size_t n) {
    if (n > cap) {
      std::free(p);
      const size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
      p = static_cast<float *>(std::aligned_alloc(64, bytes));
      cap = p ? n : 0;
    }
    return p;
  }
};
thread_local PackBuffers packBuffers;

/// Element (s0 + s, k0 + k) of a strip operand for s < ext, k < kc into
/// W-wide strips: dst[strip][k][W], strip lanes past ext zero. The operand
/// is X[k][s] (row stride ld) when `alongRows` (each k a contiguous run of
/// lanes: masked copies), else X[s][k] (a transpose: 16 x 16 blocks through
/// registers). Pure data movement, so the product does not depend on it.
template <int W>
NNCC_GEMM_AVX512 void packStrips(bool alongRows, const float *X, int64_t ld, int64_t s0,
                                 int64_t ext, int64_t k0, int64_t kc, float *dst) {
  for (int64_t s = 0; s < ext; s += W) {
    const int64_t lanes = std::min<int64_t>(W, ext - s);
    float *d = dst + s * kc;
    if (alongRows) {
      for (int64_t k = 0; k < kc; ++k) {
        const float *src = X + (k0 + k) * ld + s0 + s;
        for (int l = 0; l < W; l += 16)
          _mm512_mask_storeu_ps(d + k * W + l, firstLanes(W - l),
                                _mm512_maskz_loadu_ps(firstLanes(lanes - l), src + l));
      }
      continue;
    }
    for (int l0 = 0; l0 < W; l0 += 16) {
      const __mmask16 store = firstLanes(W - l0);
      for (int64_t k = 0; k < kc; k += 16) {
        const __mmask16 load = firstLanes(kc - k);
        __m512 r[16];
        for (int l = 0; l < 16; ++l)
          r[l] = l0 + l < lanes
                     ? _mm512_maskz_loadu_ps(load, X + (s0 + s + l0 + l) * ld + k0 + k)
                     : _mm512_setzero_ps();
        transpose16(r);
        const int64_t kn = std::min<int64_t>(16, kc - k);
        for (int64_t kk = 0; kk < kn; ++kk)
          _mm512_mask_storeu_ps(d + (k + kk) * W + l0, store, r[kk]);
      }
    }
  }
}

/// op(A)[i0 + i, p0 + k] for i < mc, k < kc into MR-row strips.
void packA(bool ta, const float *A, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
           int64_t kc, float *dst) {
  packStrips<MR>(ta, A, lda, i0, mc, p0, kc, dst);
}

/// op(B)[p0 + k, j0 + j] for k < kc, j < nc into NR-column strips.
void packB(bool tb, const float *B, int64_t ldb, int64_t p0, int64_t kc, int64_t j0,
           int64_t nc, float *dst) {
  packStrips<NR>(!tb, B, ldb, j0, nc, p0, kc, dst);
}

/// The MR x NR tile C[rows, cols] = alpha * (a strip x b strip) + beta * C;
/// beta == 0 never reads C (BLAS semantics: NaN there does not propagate).
NNCC_GEMM_AVX512 void microKernel(int64_t kc, const float *a, const float *b, float *C,
                                  int64_t ldc, int64_t rows, int64_t cols, float alpha,
                                  float beta) {
  __m512 acc[MR][2];
  for (int i = 0; i < MR; ++i) {
    acc[i][0] = _mm512_setzero_ps();
    acc[i][1] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b + k * NR);
    const __m512 b1 = _mm512_load_ps(b + k * NR + 16);
    const float *ak = a + k * MR;
#pragma GCC unroll 14
    for (int i = 0; i < MR; ++i) {
      const __m512 x = _mm512_set1_ps(ak[i]);
      acc[i][0] = _mm512_fmadd_ps(x, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(x, b1, acc[i][1]);
    }
  }
  const __mmask16 m0 = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32   ? (__mmask16)0xFFFF
                       : cols <= 16 ? (__mmask16)0
                                    : (__mmask16)((1u << (cols - 16)) - 1);
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int i = 0; i < MR; ++i) {
    if (i >= rows)
      break;
    float *c = C + i * ldc;
    __m512 r0 = _mm512_mul_ps(va, acc[i][0]), r1 = _mm512_mul_ps(va, acc[i][1]);
    if (beta != 0.0f) {
      r0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, c), r0);
      r1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, c + 16), r1);
    }
    _mm512_mask_storeu_ps(c, m0, r0);
    _mm512_mask_storeu_ps(c + 16, m1, r1);
  }
}

} // namespace

namespace {
/// NNCC_KERNELS_PORTABLE set (not "0"): only the portable loops run.
bool portableForced() {
  const char *env = std::getenv("NNCC_KERNELS_PORTABLE");
  return env && *env && std::strcmp(env, "0") != 0;
}
} // namespace

bool nncc::kernels::cpuHasAvx512() {
  static const bool ok = [] {
    __builtin_cpu_init();
    return !portableForced() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512dq");
  }();
  return ok;
}

bool nncc::kernels::cpuHasAvx2Fma() {
  static const bool ok = [] {
    __builtin_cpu_init();
    return !portableForced() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return ok;
}

bool nncc::kernels::ownSgemmAvailable() { return cpuHasAvx512(); }

bool nncc::kernels::ownSgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                             float alpha, const float *A, int64_t lda, const float *B,
                             int64_t ldb, float beta, float *C, int64_t ldc,
                             const BlockDone *done) {
  const int64_t ncMax = std::min(N, NC), kcMax = std::min(K, KC);
  float *bp = PackBuffers::grow(packBuffers.b, packBuffers.bCap,
                                size_t((ncMax + NR - 1) / NR * NR * kcMax));
  float *ap = PackBuffers::grow(packBuffers.a, packBuffers.aCap, size_t(MC * kcMax));
  if (!bp || !ap)
    return false;
  for (int64_t j0 = 0; j0 < N; j0 += NC) {
    const int64_t nc = std::min(NC, N - j0);
    for (int64_t p0 = 0; p0 < K; p0 += KC) {
      const int64_t kc = std::min(KC, K - p0);
      const float sliceBeta = p0 == 0 ? beta : 1.0f;
      packB(tb, B, ldb, p0, kc, j0, nc, bp);
      for (int64_t i0 = 0; i0 < M; i0 += MC) {
        const int64_t mc = std::min(MC, M - i0);
        packA(ta, A, lda, i0, mc, p0, kc, ap);
        const bool last = p0 + kc == K;
        for (int64_t js = 0; js < nc; js += NR)
          for (int64_t is = 0; is < mc; is += MR) {
            const int64_t rows = std::min<int64_t>(MR, mc - is),
                          cols = std::min<int64_t>(NR, nc - js);
            microKernel(kc, ap + is * kc, bp + js * kc, C + (i0 + is) * ldc + j0 + js, ldc,
                        rows, cols, alpha, sliceBeta);
            if (last && done)
              (*done)(i0 + is, i0 + is + rows, j0 + js, j0 + js + cols);
          }
      }
    }
  }
  return true;
}

#else // !NNCC_GEMM_X86

bool nncc::kernels::cpuHasAvx512() { return false; }
bool nncc::kernels::cpuHasAvx2Fma() { return false; }
bool nncc::kernels::ownSgemmAvailable() { return false; }
bool nncc::kernels::ownSgemm(bool, bool, int64_t, int64_t, int64_t, float, const float *,
                             int64_t, const float *, int64_t, float, float *, int64_t,
                             const BlockDone *) {
  return false;
}

#endif

extern "C" const char *nncc_gemm_f32_backend(void) {
  return ownSgemmAvailable() ? "nncc-avx512" : "openblas";
}
