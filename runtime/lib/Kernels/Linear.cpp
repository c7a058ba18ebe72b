//===- Linear.cpp - GEMM wrapper, linear with fused epilogue (CPU) --------===//
//
// Forward of the linear family; its backward is LinearBackward.cpp.
//
//===----------------------------------------------------------------------===//

#include "ActivationTile.h"
#include "Internal.h"

#include <type_traits>

using namespace nncc::kernels;

namespace {

template <typename T>
int gemmImpl(int ta, int tb, int64_t M, int64_t N, int64_t K, T alpha,
             const T *A, int64_t lda, const T *B, int64_t ldb, T beta, T *C,
             int64_t ldc) {
  if (M < 0 || N < 0 || K < 0 || (M * N > 0 && !C) ||
      (M * N * K > 0 && (!A || !B)))
    return NNCC_K_EINVAL;
  gemm(ta != 0, tb != 0, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  return NNCC_K_OK;
}

/// The fused epilogue act(y + bias) + residual on rows [r0, r1) x columns
/// [c0, c1) of y[., N]; one instantiation per activation and operand set so
/// that the inner loop is branch-free and vectorises.
template <typename T, int Act, bool HasBias, bool HasRes>
void epilogueBlock(T *y, int64_t N, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                   const T *bias, const T *residual, T alpha) {
  for (int64_t i = r0; i < r1; ++i) {
    T *row = y + i * N;
    const T *res = HasRes ? residual + i * N : nullptr;
    for (int64_t j = c0; j < c1; ++j) {
      T v = row[j];
      if constexpr (HasBias)
        v += bias[j];
      v = activate(Act, v, alpha);
      if constexpr (HasRes)
        v += res[j];
      row[j] = v;
    }
  }
}

template <typename T, int Act>
void epilogueAct(T *y, int64_t N, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                 const T *bias, const T *residual, T alpha) {
  if (bias && residual)
    epilogueBlock<T, Act, true, true>(y, N, r0, r1, c0, c1, bias, residual, alpha);
  else if (bias)
    epilogueBlock<T, Act, true, false>(y, N, r0, r1, c0, c1, bias, residual, alpha);
  else if (residual)
    epilogueBlock<T, Act, false, true>(y, N, r0, r1, c0, c1, bias, residual, alpha);
  else
    epilogueBlock<T, Act, false, false>(y, N, r0, r1, c0, c1, bias, residual, alpha);
}

template <typename T>
void epilogue(int act, T *y, int64_t N, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
              const T *bias, const T *residual, T alpha) {
  switch (act) {
  case ActRelu:
    return epilogueAct<T, ActRelu>(y, N, r0, r1, c0, c1, bias, residual, alpha);
  case ActLeakyRelu:
    return epilogueAct<T, ActLeakyRelu>(y, N, r0, r1, c0, c1, bias, residual, alpha);
  case ActGeluErf:
    if constexpr (std::is_same_v<T, float>)
      if (geluErfBlockF32(y, N, r0, r1, c0, c1, bias, residual))
        return;
    return epilogueAct<T, ActGeluErf>(y, N, r0, r1, c0, c1, bias, residual, alpha);
  case ActGeluTanh:
    return epilogueAct<T, ActGeluTanh>(y, N, r0, r1, c0, c1, bias, residual, alpha);
  case ActTanh:
    return epilogueAct<T, ActTanh>(y, N, r0, r1, c0, c1, bias, residual, alpha);
  case ActSigmoid:
    return epilogueAct<T, ActSigmoid>(y, N, r0, r1, c0, c1, bias, residual, alpha);
  default:
    return epilogueAct<T, ActNone>(y, N, r0, r1, c0, c1, bias, residual, alpha);
  }
}

template <typename T>
int linearImpl(int64_t M, int64_t N, int64_t K, const T *x, const T *w,
               const T *bias, const T *residual, int act, double alpha, T *y) {
  if (M < 0 || N < 0 || K < 0 || !y || (K > 0 && (!x || !w)) || act < 0 ||
      act > ActSigmoid)
    return NNCC_K_EINVAL;
  const bool hasEpilogue = bias || act != ActNone || residual;
  const T a = T(alpha);
  if (K == 0) {
    for (int64_t i = 0; i < M * N; ++i)
      y[i] = T(0);
    if (hasEpilogue)
      epilogue<T>(act, y, N, 0, M, 0, N, bias, residual, a);
    return NNCC_K_OK;
  }
  // The epilogue runs on each block of y as soon as its GEMM is done, while
  // the block is still in cache (ownSgemm's micro-tiles: in L1; OpenBLAS's
  // panels: one pass over y, no second parallel loop).
  gemmPanels(false, true, M, N, K, T(1), x, K, w, K, T(0), y, N,
             [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
               if (hasEpilogue)
                 epilogue<T>(act, y, N, r0, r1, c0, c1, bias, residual, a);
             });
  return NNCC_K_OK;
}

} // namespace

#define NNCC_DEFINE_LINEAR(S, T)                                               \
  extern "C" int nncc_gemm_##S(int ta, int tb, int64_t M, int64_t N,          \
                               int64_t K, T alpha, const T *A, int64_t lda,    \
                               const T *B, int64_t ldb, T beta, T *C,          \
                               int64_t ldc) {                                  \
    return gemmImpl<T>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);  \
  }                                                                            \
  extern "C" int nncc_linear_##S(int64_t M, int64_t N, int64_t K, const T *x,  \
                                 const T *w, const T *b, const T *r, int act,  \
                                 double alpha, T *y) {                         \
    return linearImpl<T>(M, N, K, x, w, b, r, act, alpha, y);                  \
  }

NNCC_DEFINE_LINEAR(f32, float)
NNCC_DEFINE_LINEAR(f64, double)
