// CUDA-emulation parity: runtime/include/nncc/Kernels/CUDA/LossHead.cuh
// (launch_linear_cross_entropy: the fused, chunked linear + cross-entropy
// loss and its dx, dw, db) against nncc_linear_cross_entropy_* of
// libnncc_kernels.so (int64 targets; the CUDA launcher also with int32),
// with and without bias and the logits output, ignore_index, one chunk and
// several (nncc_linear_ce_chunk_rows(N, V) < N: a vocabulary of 2^19 + 3
// gives 3-row chunks, 2^20 + 1 one-row chunks), and the out-of-range flag;
// the bf16 launcher against the float one on the widened values.
#include "nncc/Kernels/CUDA/LossHead.cuh"
#include "nncc/Kernels/Kernels.h"

#include "emu_bf16.h"
#include "emu_test.h"

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;
using namespace emutest;

template <typename T, typename... A> int cpu_linear_cross_entropy(A... a) {
  if constexpr (std::is_same_v<T, double>)
    return nncc_linear_cross_entropy_f64(a...);
  else
    return nncc_linear_cross_entropy_f32(a...);
}

struct Shape {
  int64_t N, K, V;
};

/// The comparisons' name: shape, chunk rows, ignore pattern, bias.
std::string caseTag(Shape s, int ignorePattern, bool bias) {
  return "N" + std::to_string(s.N) + " K" + std::to_string(s.K) + " V" + std::to_string(s.V) +
         " chunk" + std::to_string(nncc_linear_ce_chunk_rows(s.N, s.V)) + " ign" +
         std::to_string(ignorePattern) + (bias ? " bias" : "");
}

template <typename T, typename I>
void one(Group &G, cublasHandle_t blas, Shape s, int64_t ignore, bool bias, bool wantLogits,
         int ignorePattern) {
  const auto [N, K, V] = s;
  auto x = rnd<T>(N * K, 1.0), w = rnd<T>(V * K, 1.0), b = rnd<T>(V, 1.0);
  std::vector<int64_t> t64(N);
  std::vector<I> tI(N);
  for (int64_t i = 0; i < N; ++i) {
    t64[i] = (i * 7919 + 3) % V;
    if (ignorePattern == 1 && i % 3 == 1) t64[i] = ignore; // some rows ignored
    if (ignorePattern == 2) t64[i] = ignore;                // every row ignored
    tI[i] = (I)t64[i];
  }
  const T *bp = bias ? b.data() : nullptr;
  T lossC = NAN, lossG = NAN;
  auto dxC = nanv<T>(N * K), dxG = nanv<T>(N * K), dwC = nanv<T>(V * K), dwG = nanv<T>(V * K),
       dbC = nanv<T>(V), dbG = nanv<T>(V), lC = nanv<T>(wantLogits ? N * V : 0),
       lG = nanv<T>(wantLogits ? N * V : 0);
  auto wsC = garbage(nncc_linear_ce_workspace_size(N, V, sizeof(T)));
  auto wsG = garbage(linear_cross_entropy_scratch_bytes(N, K, V, sizeof(T)));
  int flag = 0;
  G.ok("cpu linear_ce", cpu_linear_cross_entropy<T>(N, K, V, x.data(), w.data(), bp, t64.data(),
                                                    ignore, &lossC, dxC.data(), dwC.data(),
                                                    dbC.data(), wantLogits ? lC.data() : nullptr,
                                                    (void *)wsC.data()));
  G.ok("cuda linear_ce", launch_linear_cross_entropy<T, I>(
                             blas, N, K, V, x.data(), w.data(), bp, tI.data(), ignore, &lossG,
                             dxG.data(), dwG.data(), dbG.data(), wantLogits ? lG.data() : nullptr,
                             &flag, 5, wsG.data(), nullptr));
  G.ok("linear_ce flag", flag);
  const std::string tag = caseTag(s, ignorePattern, bias);
  G.cmp(tag + " loss", &lossC, &lossG, 1);
  G.cmp(tag + " dx", dxC, dxG);
  G.cmp(tag + " dw", dwC, dwG);
  G.cmp(tag + " db", dbC, dbG);
  if (wantLogits) G.cmp(tag + " logits", lC, lG);
}

template <typename T, typename I> void lossHead(Group &G, bool big) {
  cublasHandle_t blas;
  cublasCreate(&blas);
  for (Shape s : {Shape{1, 1, 1}, Shape{7, 5, 13}, Shape{37, 9, 300}})
    for (int64_t ignore : {-100L, 2L})
      for (int var = 0; var < 4; ++var)
        one<T, I>(G, blas, s, ignore, var & 1, var & 2, s.N > 1 ? 1 : 0);
  // Every row ignored: loss 0/0 = NaN, gradients from 1/0 rows (as the CPU).
  one<T, I>(G, blas, Shape{5, 3, 11}, -100, true, false, 2);
  if (big) {
    // Several chunks: rows 3 + 3 + 1, and one row per chunk.
    one<T, I>(G, blas, Shape{7, 3, (1 << 19) + 3}, -100, true, true, 1);
    one<T, I>(G, blas, Shape{3, 2, (1 << 20) + 1}, 1, false, false, 1);
  }
  {
    // An out-of-range target raises the flag with the launch's code (the
    // CPU rejects the call).
    const int64_t N = 3, K = 2, V = 4;
    std::vector<I> t = {0, 9, 1};
    std::vector<int64_t> t64(t.begin(), t.end());
    auto x = rnd<T>(N * K), w = rnd<T>(V * K);
    auto dx = nanv<T>(N * K), dw = nanv<T>(V * K), db = nanv<T>(V);
    auto ws = garbage(linear_cross_entropy_scratch_bytes(N, K, V, sizeof(T)));
    auto wsC = garbage(nncc_linear_ce_workspace_size(N, V, sizeof(T)));
    T loss = NAN;
    int flag = 0;
    launch_linear_cross_entropy<T, I>(blas, N, K, V, x.data(), w.data(), (const T *)nullptr,
                                      t.data(), -100, &loss, dx.data(), dw.data(), db.data(),
                                      (T *)nullptr, &flag, 17, ws.data(), nullptr);
    G.ok("linear_ce out-of-range flag != 17", flag - 17);
    G.ok("cpu linear_ce out-of-range != NNCC_K_ERANGE",
         cpu_linear_cross_entropy<T>(N, K, V, x.data(), w.data(), (const T *)nullptr, t64.data(),
                                     (int64_t)-100, &loss, dx.data(), dw.data(), db.data(),
                                     (T *)nullptr, (void *)wsC.data()) != NNCC_K_ERANGE);
  }
  cublasDestroy(blas);
}

/// bf16: launch_linear_cross_entropy<bf16_t> against the float launcher on
/// the same values widened. The logits, the loss and db come from the same
/// fp32 logits and softmax gradient: the float results rounded once (0
/// ulps). dx and dw take the gradient rounded to bf16 as the GEMMs'
/// operand: within 1e-2 of the float ones relative to their largest entry
/// (a wrong row, chunk or transpose is off by O(1)).
template <typename I>
void oneBf16(Bf16UlpGroup &U, Group &G, cublasHandle_t blas, Shape s, bool bias, bool wantLogits,
             int ignorePattern) {
  const auto [N, K, V] = s;
  const int64_t ignore = -100;
  Bf16Values x = uniform_bf16((size_t)(N * K), 1.0), w = uniform_bf16((size_t)(V * K), 1.0),
             b = uniform_bf16((size_t)V, 1.0);
  std::vector<I> t(N);
  for (int64_t i = 0; i < N; ++i)
    t[i] = ignorePattern == 1 && i % 3 == 1 ? (I)ignore : (I)((i * 7919 + 3) % V);
  float lossF = NAN;
  auto dxF = nanv<float>(N * K), dwF = nanv<float>(V * K), dbF = nanv<float>(V),
       lF = nanv<float>(wantLogits ? N * V : 0);
  bf16_t lossB = bf16_from_float(NAN);
  auto dxB = fill_bf16(N * K, 0x7fc1), dwB = fill_bf16(V * K, 0x7fc1), dbB = fill_bf16(V, 0x7fc1),
       lB = fill_bf16(wantLogits ? N * V : 0, 0x7fc1);
  auto wsF = garbage(linear_cross_entropy_scratch_bytes(N, K, V, sizeof(float)));
  auto wsB = garbage(linear_cross_entropy_scratch_bytes(N, K, V, sizeof(bf16_t)));
  int flag = 0;
  G.ok("float linear_ce", launch_linear_cross_entropy<float, I>(
                              blas, N, K, V, x.f.data(), w.f.data(), bias ? b.f.data() : nullptr,
                              t.data(), ignore, &lossF, dxF.data(), dwF.data(), dbF.data(),
                              wantLogits ? lF.data() : nullptr, &flag, 5, wsF.data(), nullptr));
  G.ok("bf16 linear_ce", launch_linear_cross_entropy<bf16_t, I>(
                             blas, N, K, V, x.b.data(), w.b.data(), bias ? b.b.data() : nullptr,
                             t.data(), ignore, &lossB, dxB.data(), dwB.data(), dbB.data(),
                             wantLogits ? lB.data() : nullptr, &flag, 5, wsB.data(), nullptr));
  G.ok("bf16 linear_ce flag", flag);
  const std::string tag = "bf16 " + caseTag(s, ignorePattern, bias);
  U.cmp(tag + " loss", &lossF, &lossB, 1);
  U.cmp(tag + " db", dbF, dbB);
  if (wantLogits) U.cmp(tag + " logits", lF, lB);
  auto widen = [](const std::vector<bf16_t> &v) {
    std::vector<float> f(v.size());
    for (size_t i = 0; i < v.size(); ++i) f[i] = bf16_to_float(v[i]);
    return f;
  };
  G.cmp(tag + " dx", dxF, widen(dxB));
  G.cmp(tag + " dw", dwF, widen(dwB));
}

template <typename I> void lossHeadBf16(Bf16UlpGroup &U, Group &G) {
  cublasHandle_t blas;
  cublasCreate(&blas);
  for (Shape s : {Shape{1, 1, 1}, Shape{7, 5, 13}, Shape{37, 9, 300}})
    for (int var = 0; var < 4; ++var)
      oneBf16<I>(U, G, blas, s, var & 1, var & 2, s.N > 1 ? 1 : 0);
  // Several chunks (3 + 3 + 1 rows): dw summed over them in fp32.
  oneBf16<I>(U, G, blas, Shape{7, 3, (1 << 19) + 3}, true, true, 1);
  cublasDestroy(blas);
}

int main() {
  // f64 1e-13: the GEMMs differ in summation order only (the emulated cuBLAS
  // sums in long double, the CPU's gemm in double); dx of the 2^20-column
  // rows sums 10^6 products and differs by up to 2e-14 of its largest entry.
  { Group G("linear_cross_entropy i64 f64", 1e-13); lossHead<double, int64_t>(G, true); }
  { Group G("linear_cross_entropy i32 f64", 1e-13); lossHead<double, int32_t>(G, true); }
  { Group G("linear_cross_entropy i32 f32", 1e-5); lossHead<float, int32_t>(G, false); }
  {
    Bf16UlpGroup U("linear_cross_entropy i32 bf16 (rounded)", 0);
    Group G("linear_cross_entropy i32 bf16 (dx, dw)", 1e-2);
    lossHeadBf16<int32_t>(U, G);
  }
  return finish();
}
