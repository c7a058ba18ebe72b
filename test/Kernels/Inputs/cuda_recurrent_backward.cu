// Instantiates, for fp32 and fp64 (and the stacks for bf16), every cell kind and both length index
// types, each launcher of runtime/include/nncc/Kernels/CUDA/RecurrentBackward.cuh
// with the template arguments lib/Target/Launch/RecurrentLaunch.cpp prints
// (<real_t, length type, cell code>), so that nvcc compiles all of them
// (cuda-recurrent-backward.test), and the LSTM zoneout forms (the trailing
// rate, seed, offset the emitter appends; launch_rnn_scan's also the state
// slot). Nothing here runs.
#include "nncc/Kernels/CUDA/RecurrentBackward.cuh"

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;

template <typename T, typename L, int Kind>
void instantiateStack(cublasHandle_t blas, cudaStream_t s) {
  T *p = nullptr;
  const T *w[8] = {};
  T *dw[8] = {};
  const L *len = nullptr;
  char *ws = nullptr;
  launch_rnn_forward_train<T, L, Kind>(blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p, len, p, p, p,
                                       p, ws, s);
  launch_rnn_forward_train_ckpt<T, L, Kind>(blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p, len, p,
                                            p, p, p, 3, ws, s);
  launch_rnn_backward_reserved<T, L, Kind>(blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p, len, p, p,
                                           p, p, p, p, p, dw, ws, s);
  launch_rnn_backward<T, L, Kind>(blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p, len, p, p, p, p, p,
                                  p, dw, ws, s);
  launch_rnn_backward_ckpt<T, L, Kind>(blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p, len, p, p, p,
                                       p, p, p, p, dw, 3, ws, s);
  launch_rnn_forward_train_revolve<T, L, Kind>(blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p, len, p,
                                               p, p, p, ws, s);
  launch_rnn_backward_revolve<T, L, Kind>(blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p, len, p, p, p,
                                          p, p, p, p, dw, 3, (int64_t *)nullptr, ws, s);
}

/// LSTM zoneout (training): every stack launcher with the trailing rate,
/// seed and offset, and the one-layer scan with its state slot.
template <typename T, typename L> void instantiateZoneout(cublasHandle_t blas, cudaStream_t s) {
  T *p = nullptr;
  const T *w[8] = {};
  T *dw[8] = {};
  const L *len = nullptr;
  char *ws = nullptr;
  const uint64_t seed = 1234ULL, off = 77ULL;
  launch_rnn_forward_train<T, L, CellLstm>(blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p, len, p, p,
                                           p, p, ws, s, 0.25, seed, off);
  launch_rnn_forward_train_ckpt<T, L, CellLstm>(blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p, len, p,
                                                p, p, p, 3, ws, s, 0.25, seed, off);
  launch_rnn_backward_reserved<T, L, CellLstm>(blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p, len, p,
                                               p, p, p, p, p, p, dw, ws, s, 0.25, seed, off);
  launch_rnn_backward<T, L, CellLstm>(blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p, len, p, p, p, p,
                                      p, p, dw, ws, s, 0.25, seed, off);
  launch_rnn_backward_ckpt<T, L, CellLstm>(blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p, len, p, p,
                                           p, p, p, p, p, dw, 3, ws, s, 0.25, seed, off);
  launch_rnn_forward_train_revolve<T, L, CellLstm>(blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p, len,
                                                   p, p, p, p, ws, s, 0.25, seed, off);
  launch_rnn_backward_revolve<T, L, CellLstm>(blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p, len, p,
                                              p, p, p, p, p, p, dw, 3, (int64_t *)nullptr, ws,
                                              s, 0.25, seed, off);
  launch_rnn_scan<T, L, CellLstm>(4, 8, 32, 1, 64, 32, len, p, p, p, p, p, p, p, p, p, 0, p, s,
                                  0.25, seed, off, 3);
}

template <typename T, int Kind> void instantiateCell(cublasHandle_t blas, cudaStream_t s) {
  T *p = nullptr;
  launch_rnn_cell_backward<T, Kind>(blas, 4, 32, p, p, p, p, p, p, p, p, p, p, p, p, nullptr,
                                    s);
}

template <typename T, typename L> void instantiateCells(cublasHandle_t blas, cudaStream_t s) {
  instantiateStack<T, L, CellRnnTanh>(blas, s);
  instantiateStack<T, L, CellRnnRelu>(blas, s);
  instantiateStack<T, L, CellLstm>(blas, s);
  instantiateStack<T, L, CellGru>(blas, s);
  instantiateStack<T, L, CellGruCho>(blas, s);
}

template <typename T> void instantiate(cublasHandle_t blas, cudaStream_t s) {
  instantiateCells<T, int32_t>(blas, s);
  instantiateCells<T, int64_t>(blas, s);
  instantiateZoneout<T, int32_t>(blas, s);
  instantiateZoneout<T, int64_t>(blas, s);
  instantiateCell<T, CellRnnTanh>(blas, s);
  instantiateCell<T, CellRnnRelu>(blas, s);
  instantiateCell<T, CellLstm>(blas, s);
  instantiateCell<T, CellGru>(blas, s);
  instantiateCell<T, CellGruCho>(blas, s);
}

template void instantiate<float>(cublasHandle_t, cudaStream_t);
template void instantiate<double>(cublasHandle_t, cudaStream_t);

/// bf16: the stack launchers (the f32 ones on fp32 copies), with zoneout.
void instantiateBf16(cublasHandle_t blas, cudaStream_t s) {
  instantiateCells<bf16_t, int32_t>(blas, s);
  instantiateCells<bf16_t, int64_t>(blas, s);
  bf16_t *p = nullptr;
  const bf16_t *w[8] = {};
  bf16_t *dw[8] = {};
  launch_rnn_backward_ckpt<bf16_t, int32_t, CellLstm>(blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p,
                                                      nullptr, p, p, p, p, p, p, p, dw, 3,
                                                      nullptr, s, 0.25, 1234ULL, 77ULL);
  launch_rnn_backward_revolve<bf16_t, int32_t, CellLstm>(
      blas, 4, 8, 16, 32, 2, 2, 1, p, w, p, p, nullptr, p, p, p, p, p, p, p, dw, 3,
      (int64_t *)nullptr, nullptr, s, 0.25, 1234ULL, 77ULL);
}

/// The scratch-size functions the generated code's scratch expression calls.
uint64_t scratchSizes(int cell, int64_t B, int64_t T, int64_t I, int64_t H, int64_t L,
                      int64_t D, int64_t elem) {
  return rnn_stack_forward_scratch_bytes(cell, B, T, I, H, L, D, 1, 3, 0, elem) +
         rnn_stack_forward_scratch_bytes(cell, B, T, I, H, L, D, 1, 0, 2, elem) +
         rnn_stack_backward_scratch_bytes(cell, B, T, I, H, L, D, 1, 0, 0, 1, elem) +
         rnn_stack_backward_scratch_bytes(cell, B, T, I, H, L, D, 1, 0, 2, 1, elem) +
         rnn_forward_train_scratch_bytes(cell, B, T, H, elem) +
         rnn_backward_reserved_scratch_bytes(cell, B, T, H, L, D, elem) +
         rnn_backward_scratch_bytes(cell, B, T, H, L, D, elem) +
         rnn_backward_ckpt_scratch_bytes(cell, B, T, I, H, L, D, 3, elem) +
         rnn_backward_revolve_scratch_bytes(cell, B, T, I, H, L, D, 2, elem) +
         rnn_cell_backward_scratch_bytes(cell, B, H, elem);
}
