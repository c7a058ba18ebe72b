// Instantiates, for fp32 and fp64, every launcher and kernel of
// runtime/include/nncc/Kernels/CUDA that generated CUDA code calls
// (lib/Target/Launch, lib/Target/Cuda), with the template arguments the
// emitters print, so that nvcc has to compile all of them (cuda-compile.test).
#include "nncc/Kernels/CUDA/Attention.cuh"
#include "nncc/Kernels/CUDA/Elementwise.cuh"
#include "nncc/Kernels/CUDA/Loss.cuh"
#include "nncc/Kernels/CUDA/LossBackward.cuh"
#include "nncc/Kernels/CUDA/LossHead.cuh"
#include "nncc/Kernels/CUDA/LshAttention.cuh"
#include "nncc/Kernels/CUDA/LtGemm.cuh"
#include "nncc/Kernels/CUDA/Norm.cuh"
#include "nncc/Kernels/CUDA/NormBackward.cuh"
#include "nncc/Kernels/CUDA/ODE.cuh"
#include "nncc/Kernels/CUDA/Optim.cuh"
#include "nncc/Kernels/CUDA/Recurrent.cuh"
#include "nncc/Kernels/CUDA/Tensor.cuh"
#include "nncc/Kernels/CUDA/TensorBackward.cuh"
#include "nncc/Kernels/CUDA/Token.cuh"
#include "nncc/Kernels/CUDA/TokenBackward.cuh"
#include "nncc/ModelSupport/CudaState.cuh"

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;

/// Every cell kind, with lengths of type L (recurrent_scan / recurrent_layer);
/// launch_rnn_scan instantiates both recurrent kernels (rnn_scan_kernel and
/// the cooperative-grid rnn_grid_kernel with its launcher).
template <typename T, typename L> void instantiateRecurrent(cudaStream_t s) {
  T *p = nullptr;
  const L *len = nullptr;
  launch_rnn_scan<T, L, CellRnnTanh>(4, 8, 32, 0, 64, 0, len, p, p, p, p, p, p, p, p, p, 0, p, s);
  launch_rnn_scan<T, L, CellRnnRelu>(4, 8, 32, 1, 64, 32, len, p, p, p, p, p, p, p, p, p, 0, p, s);
  launch_rnn_scan<T, L, CellLstm>(4, 8, 32, 0, 64, 0, len, p, p, p, p, p, p, p, p, p, 0, p, s);
  launch_rnn_scan<T, L, CellGru>(4, 8, 32, 0, 64, 0, len, p, p, p, p, p, p, p, p, p, 0, p, s);
  launch_rnn_scan<T, L, CellGruCho>(4, 8, 32, 0, 64, 0, len, p, p, p, p, p, p, p, p, p, 0, p, s);
}

/// Embedding and cross-entropy with index type I.
template <typename T, typename I> void instantiateIndexed(cudaStream_t s) {
  T *p = nullptr;
  const I *idx = nullptr;
  launch_embedding<T, I>(16, 100, 8, idx, p, p, nullptr, 1, s);
  launch_cross_entropy<T, I>(16, 10, p, idx, -100, p, nullptr, nullptr, 2, s);
}

template <typename T> void instantiate(cudaStream_t s) {
  T *p = nullptr;
  instantiateRecurrent<T, int32_t>(s);
  instantiateRecurrent<T, int64_t>(s);
  instantiateIndexed<T, int32_t>(s);
  instantiateIndexed<T, int64_t>(s);
  launch_flash_attention<T, 64>(2, 128, 4, p, p, p, 768, p, 256, nullptr, 1, T(0.125), p, s);
  launch_flash_attention_dyn<T>(48, 2, 128, 4, p, p, p, 576, p, 192, nullptr, 0, T(0.125), p,
                                s); // every head-size kernel
  launch_dilated_attention_dyn<T, 64>(64, 2, 128, 4, p, p, p, 768, p, 256, nullptr, 0,
                                      T(0.125), 8, 2, nullptr, 0, nullptr, s);
  launch_dilated_attention_dyn<T>(24, 2, 128, 4, p, p, p, 288, p, 96, nullptr, 1, T(0.2), 8,
                                  1, nullptr, 0, nullptr, s);
  launch_lsh_attention<T>(24, 2, 128, 4, 2, 8, 16, 1, T(0.2), 0, p, p, 192, p, p, 96, nullptr,
                          nullptr, s); // every head-size kernel
  launch_lsh_attention<T, 64>(64, 2, 128, 4, 2, 8, 16, 1, T(0.125), 0, p, p, 512, p, p, 256,
                              nullptr, nullptr, s);
  lsh_rotations_kernel<T><<<1, 32, 0, s>>>(16, 7, p);
  launch_layer_norm<T>(16, 256, p, p, p, p, T(1e-5), p, p, p, p, s);
  softmax_axis_kernel<T><<<1, 32, 0, s>>>(2, 16, 3, p, p);
  fill_kernel<T><<<1, 32, 0, s>>>(16, T(0), p);
  launch_linear_epilogue<T>(16, 256, p, p, ActGeluErf, T(0), p, s);
  launch_dropout<T>(1024, 0.1f, 42, 0, p, p, nullptr, s);
  launch_zoneout<T>(1024, 0.1f, 42, 0, p, p, p, s);
  launch_sinusoidal_position<T>(1, 8, 16, p, p, s);
  CopyNd c{};
  launch_copy_nd<T>(c, p, p, s);
  ReduceNd r{};
  launch_reduce<T>(r, 1, p, p, (void *)p, s);
  launch_mse_loss<T>(16, p, p, p, nullptr, s);
  launch_bce_with_logits<T>(4, 4, p, p, p, p, nullptr, s);
  ode_rnn_interval_kernel<T><<<1, 32, 0, s>>>(4, 8, 1, p, p, p);
  ode_rnn_row_time_kernel<T><<<1, 32, 0, s>>>(4, 0.5, p, p, p);
  ode_rnn_adjoint_in_kernel<T><<<1, 32, 0, s>>>(4, 8, 2, 1, p, p, p);
  // The ODE training drivers, with regions that launch nothing.
  OdeDevice od;
  od.stream = s;
  auto dyn = [](double, const T *, T *) { return 0; };
  auto vjp = [](double, const T *, const T *, T *, T *) { return 0; };
  auto cell = [](const T *, const T *, const T *, T *, T *, T *) { return 0; };
  (void)ode_grad_device<T>(od, nncc::kernels::OdeDopri5, 0, 10, 1e-6, 1e-8, 1, 16, 4, p, 0.0,
                           1.0, p, p, 4, p, nullptr, dyn, vjp);
  (void)ode_rnn_grad_device<T>(od, nncc::kernels::OdeRk4, 2, 10, 1e-6, 1e-8, 0, 2, 3, 4, 8, p,
                               p, p, p, p, p, p, 4, p, 4, p, nullptr, dyn, vjp, cell);
  auto rnnCell = []() { return 0; };
  (void)ode_rnn_device<T>(od, nncc::kernels::OdeDopri5, 0, 1e-6, 1e-8, 2, 3, 4, 8, p, p, p, p,
                          p, 9, p, p, p, p, dyn, rnnCell);
  // The fused GEMM sites (cuBLASLt).
  LtState lt;
  (void)lt_gemm_choice<T>();
  (void)lt_gemm<T>(&lt, 0, CUBLASLT_EPILOGUE_BIAS, 16, 32, 8, p, p, p, p, p, s);
  lt_destroy(&lt);
}

template void instantiate<float>(cudaStream_t);
template void instantiate<double>(cudaStream_t);

/// The bf16 attention forwards (attention_tile_bf16_kernel at every head
/// size and mode; the global rows widened to fp32).
void instantiateBf16Attention(cudaStream_t s) {
  bf16_t *p = nullptr;
  float *lse = nullptr;
  const int32_t globals[1] = {0};
  launch_flash_attention<bf16_t, 64>(2, 128, 4, p, p, p, 768, p, 256, nullptr, 1, 0.125f, lse, s);
  launch_flash_attention_dyn<bf16_t>(48, 2, 128, 4, p, p, p, 576, p, 192, nullptr, 0, 0.125f,
                                     lse, s);
  launch_flash_attention_train<bf16_t>(64, 2, 128, 4, p, p, p, 768, p, 256, nullptr, 0, 0.125f,
                                       lse, 0.1, 1, 2, s);
  launch_dilated_attention_dyn<bf16_t>(24, 2, 128, 4, p, p, p, 288, p, 96, nullptr, 1, 0.2f, 8,
                                       2, globals, 1, p, s);
  launch_dilated_attention_train<bf16_t>(64, 2, 128, 4, p, p, p, 768, p, 256, nullptr, 0,
                                         0.125f, 8, 2, globals, 1, lse, 0.1, 1, 2, p, s);
}

/// The model-independent state of a generated library.
void instantiateState(cudaStream_t s) {
  nncc::ms::CudaStateBase st;
  const double on = nncc::ms::cuda_prof_begin(&st, s);
  nncc::ms::cuda_prof_end(&st, on, "launch", s);
  (void)nncc::ms::cuda_ensure_scratch(&st, 256, s);
  nncc::ms::cuda_state_release(&st);
}

/// Copies of index tensors and masks.
void instantiateCopies(cudaStream_t s) {
  CopyNd c{};
  launch_copy_nd<int32_t>(c, nullptr, nullptr, s);
  launch_copy_nd<int64_t>(c, nullptr, nullptr, s);
  launch_copy_nd<uint8_t>(c, nullptr, nullptr, s);
}

/// Token masking (i32 and i64 tokens), Gumbel-max sampling and axial
/// positions (Token.cuh), fp32, fp64 and bf16; the sinusoidal positions,
/// the fused loss head and the ODE solve's drivers in bf16.
template <typename T> void instantiateTokens(cudaStream_t s) {
  T *p = nullptr;
  launch_sample<T>(8, 100, 1, 0, p, nullptr, nullptr, s);
  launch_linear_sample<T>(nullptr, 8, 16, 100, 1, 0, p, p, p, nullptr, nullptr, nullptr, s);
  launch_axial_position<T>(2, 16, 4, 8, 24, p, p, p, p, s);
  launch_axial_position_backward<T>(2, 16, 4, 4, 8, 24, p, p, p, s);
}
template void instantiateTokens<float>(cudaStream_t);
template void instantiateTokens<double>(cudaStream_t);
template void instantiateTokens<bf16_t>(cudaStream_t);
void instantiateBf16Heads(cudaStream_t s) {
  bf16_t *p = nullptr;
  // The ODE solve's drivers (ode_grad_device runs ode_integrate_device).
  OdeDevice od;
  od.stream = s;
  auto dyn = [](double, const bf16_t *, bf16_t *) { return 0; };
  auto vjp = [](double, const bf16_t *, const bf16_t *, bf16_t *, bf16_t *) { return 0; };
  (void)ode_grad_device<bf16_t>(od, nncc::kernels::OdeDopri5, 0, 10, 1e-6, 1e-8, 1, 16, 4, p,
                                0.0, 1.0, p, p, 4, p, nullptr, dyn, vjp);
  launch_sinusoidal_position<bf16_t>(1, 8, 16, p, p, s);
  launch_linear_cross_entropy<bf16_t, int32_t>(nullptr, 16, 8, 100, p, p, p, nullptr, -100, p,
                                               p, p, p, p, nullptr, 1, nullptr, s);
  launch_linear_cross_entropy<bf16_t, int64_t>(nullptr, 16, 8, 100, p, p, p, nullptr, -100, p,
                                               p, p, p, p, nullptr, 1, nullptr, s);
  LtState lt;
  (void)lt_gemm<bf16_t>(&lt, 0, CUBLASLT_EPILOGUE_GELU_BIAS, 16, 32, 8, p, p, p, p, p, s);
}

void instantiateMaskTokens(cudaStream_t s) {
  launch_mask_tokens<int32_t>(2, 16, 0.15, 103, 1, 0, nullptr, nullptr, nullptr, s);
  launch_mask_tokens<int64_t>(2, 16, 0.15, 103, 1, 0, nullptr, nullptr, nullptr, s);
}

/// The training side of the <Family>Backward.cuh headers and Optim.cuh
/// (emitted by the backward launches and the CUDA train_step functions).
template <typename T, typename I> void instantiateBackward(cudaStream_t s) {
  T *p = nullptr;
  const I *idx = nullptr;
  launch_cross_entropy_backward<T, I>(16, 10, p, idx, -100, p, p, nullptr, s);
  launch_embedding_backward<T, I>(16, 100, 8, idx, p, -1, p, (void *)p, s);
  launch_linear_cross_entropy<T, I>(nullptr, 16, 8, 100, p, p, p, idx, -100, p, p, p, p, p,
                                    nullptr, 1, nullptr, s);
}
template <typename T> void instantiateTraining(cudaStream_t s) {
  T *p = nullptr;
  instantiateBackward<T, int32_t>(s);
  instantiateBackward<T, int64_t>(s);
  launch_mse_loss_backward<T>(16, p, p, p, p, s);
  launch_bce_with_logits_backward<T>(4, 4, p, p, p, p, p, s);
  launch_layer_norm_backward<T>(16, 256, p, p, p, 1e-5, p, p, p, p, p, nullptr, s);
  ReduceNd r{};
  launch_broadcast_axes<T>(r, 1, p, p, s);
  OptimTensors<T> ts;
  launch_sum_squares<T>(ts, nullptr, nullptr, s);
  launch_sgd_steps<T>(ts, 0.5, 0.9, 1, 0, s);
  launch_adam_steps<T>(ts, 1.0, 0.9, 0.999, 1e-8, 1, 3, s);
  launch_sgd_step<T>(1024, p, p, p, 0.5, 1e-3, 0.9, 0.01, 1, 0, s);
  launch_adam_step<T>(1024, p, p, p, p, 1.0, 1e-3, 0.9, 0.999, 1e-8, 0.01, 1, 3, s);
}
template void instantiateTraining<float>(cudaStream_t);
template void instantiateTraining<double>(cudaStream_t);
