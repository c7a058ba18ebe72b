// Instantiates, for fp32 and fp64 (and the dense and dilated backwards for
// bf16), the attention training launchers of
// runtime/include/nncc/Kernels/CUDA (training forwards with dropout and the
// kept log-sum-exp, and the backward of every kind), with the template
// arguments lib/Target/Launch/AttentionLaunch.cpp prints: a static head size
// (32/64/128) or 0 (run-time dispatch over every head-size kernel), so that
// nvcc has to compile all of them (cuda-attention-backward.test).
#include "nncc/Kernels/CUDA/AttentionBackward.cuh"

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;

/// The training forwards and backwards of one static head size DHS (0 =
/// run-time dispatch, dh = 48 here), with dropout and without.
template <typename T, int DHS> void instantiateHead(cudaStream_t s) {
  T *p = nullptr;
  const T *c = nullptr;
  char *ws = nullptr;
  const int dh = DHS ? DHS : 48, H = 4, E = H * dh;
  static const int32_t kGlobal[] = {0, 5, 5, 200};
  // Training forwards.
  launch_flash_attention_train<T, DHS>(dh, 2, 128, H, p, p, p, 3 * E, p, E, nullptr, 1,
                                       T(0.125), p, 0.1, 42ULL, 7ULL, s);
  launch_dilated_attention_train<T, DHS>(dh, 2, 128, H, p, p, p, 3 * E, p, E, nullptr, 0,
                                         T(0.125), 8, 2, kGlobal, 4, p, 0.1, 42ULL, 7ULL, ws, s);
  launch_lsh_attention_train<T, DHS>(dh, 2, 128, H, 2, 8, 16, 1, T(0.125), 0, p, p, 2 * E, p,
                                     p, E, nullptr, p, 0.0, 42ULL, 7ULL, ws, s);
  // Backwards: saved forward, and recomputed (core output given or not).
  launch_flash_attention_backward<T, DHS>(dh, 2, 128, H, p, p, p, 3 * E, p, E, p, p, p, 3 * E,
                                          nullptr, 1, T(0.125), 0.1, 42ULL, 7ULL, c, c, p, ws,
                                          s);
  launch_flash_attention_backward<T, DHS>(dh, 2, 128, H, p, p, p, 3 * E, p, E, p, p, p, 3 * E,
                                          nullptr, 0, T(0.125), 0.0, 42ULL, 7ULL, c, c, p, ws,
                                          s);
  launch_dilated_attention_backward<T, DHS>(dh, 2, 128, H, p, p, p, 3 * E, p, E, p, p, p,
                                            3 * E, nullptr, 1, T(0.125), 8, 2, kGlobal, 4, 0.1,
                                            42ULL, 7ULL, c, c, p, ws, s);
  launch_lsh_attention_backward<T, DHS>(dh, 2, 128, H, 2, 8, 16, 1, T(0.125), 0, p, p, 2 * E, c,
                                        p, E, p, p, 2 * E, nullptr, 0.1, 42ULL, 7ULL, c, c, p,
                                        ws, s);
}

template <typename T> void instantiate(cudaStream_t s) {
  instantiateHead<T, 0>(s); // every head-size kernel
  instantiateHead<T, 32>(s);
  instantiateHead<T, 64>(s);
  instantiateHead<T, 128>(s);
}

template void instantiate<float>(cudaStream_t);
template void instantiate<double>(cudaStream_t);

/// The bf16 dense and dilated backwards at each static head size and at
/// run-time dispatch (dh 32/64/128: the BF16 tensor-core kernels; dh 48:
/// the widened fp32 path), with dropout and causal and without.
template <int DHS> void instantiateBf16(cudaStream_t s) {
  bf16_t *p = nullptr;
  const bf16_t *c = nullptr;
  char *ws = nullptr;
  const int dh = DHS ? DHS : 48, H = 4, E = H * dh;
  launch_flash_attention_backward<bf16_t, DHS>(dh, 2, 128, H, p, p, p, 3 * E, p, E, p, p, p,
                                               3 * E, nullptr, 1, 0.125f, 0.1, 42ULL, 7ULL,
                                               nullptr, nullptr, p, ws, s);
  launch_flash_attention_backward<bf16_t, DHS>(dh, 2, 128, H, p, p, p, 3 * E, p, E, p, p, p,
                                               3 * E, nullptr, 0, 0.125f, 0.0, 42ULL, 7ULL, c, c,
                                               p, ws, s);
  static const int32_t kGlobal[] = {0, 5, 5, 200};
  launch_dilated_attention_backward<bf16_t, DHS>(dh, 2, 128, H, p, p, p, 3 * E, p, E, p, p, p,
                                                 3 * E, nullptr, 1, 0.125f, 8, 2, kGlobal, 4,
                                                 0.1, 42ULL, 7ULL, nullptr, nullptr, p, ws, s);
}
template void instantiateBf16<0>(cudaStream_t);
template void instantiateBf16<32>(cudaStream_t);
template void instantiateBf16<64>(cudaStream_t);
template void instantiateBf16<128>(cudaStream_t);

/// The workspace sizes are host functions (the generated code's scratch
/// expression uses them).
int64_t workspaceBytes(int64_t B, int64_t Tn) {
  return flash_attention_backward_workspace_bytes(B, Tn, 4, 64, sizeof(float), 1) +
         dilated_attention_backward_workspace_bytes(B, Tn, 4, 64, 3, sizeof(float), 0) +
         lsh_attention_backward_workspace_bytes(B, Tn, 4, 64, 2, sizeof(double), 1);
}
