// Instantiates every CUDA kernel of include/nncc/Kernels/CUDA for fp32 and
// fp64 so that nvcc has to compile all of them (see cuda-compile.test).
#include "nncc/Kernels/CUDA/Attention.cuh"
#include "nncc/Kernels/CUDA/Elementwise.cuh"
#include "nncc/Kernels/CUDA/LayerNorm.cuh"
#include "nncc/Kernels/CUDA/LshAttention.cuh"
#include "nncc/Kernels/CUDA/Recurrent.cuh"

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;

template <typename T> void instantiate(cudaStream_t s) {
  T *p = nullptr;
  const int32_t *len = nullptr;
  RnnLayerArgs a{4, 8, 32, 0, 64, 0, len, 5 * 32};
  launch_rnn_layer<T, CellRnnTanh>(a, p, p, p, p, p, p, p, p, p, s);
  launch_rnn_layer<T, CellRnnRelu>(a, p, p, p, p, p, p, p, p, p, s);
  launch_rnn_layer<T, CellLstm>(a, p, p, p, p, p, p, p, p, p, s);
  launch_rnn_layer<T, CellGru>(a, p, p, p, p, p, p, p, p, p, s);
  launch_rnn_layer<T, CellGruCho>(a, p, p, p, p, p, p, p, p, p, s);
  rnn_zero_padding_kernel<T><<<1, 32, 0, s>>>(4, 8, 64, len, p);
  launch_flash_attention<T, 64>(2, 128, 4, p, p, p, 768, p, 256, nullptr, 1,
                                T(0.125), p, s);
  launch_dilated_attention<T, 64>(2, 128, 4, p, p, p, 768, p, 256, nullptr, 0,
                                  T(0.125), 64, 2, nullptr, len, 1, s);
  launch_lsh_attention<T>(24, 2, 128, 4, 2, 8, 16, 1, T(0.2), 0, p, p, 192, p, p,
                          96, nullptr, nullptr, s); // every head-size kernel
  launch_lsh_attention<T, 64>(64, 2, 128, 4, 2, 8, 16, 1, T(0.125), 0, p, p, 512, p, p,
                              256, nullptr, nullptr, s);
  lsh_rotations_kernel<T><<<1, 32, 0, s>>>(16, 7, p);
  launch_layer_norm<T>(16, 256, p, p, p, p, T(1e-5), p, p, p, p, s);
  launch_linear_epilogue<T>(16, 256, p, p, ActGeluErf, T(0), p, s);
  launch_dropout<T>(1024, 0.1f, 42, 0, p, p, nullptr, s);
  launch_zoneout<T>(1024, 0.1f, 42, 0, p, p, p, s);
  activation_kernel<T><<<1, 32, 0, s>>>(16, p, ActTanh, T(0), p);
  sinusoidal_position_kernel<T><<<1, 32, 0, s>>>(1, 8, 16, p, p);
}

template void instantiate<float>(cudaStream_t);
template void instantiate<double>(cudaStream_t);
