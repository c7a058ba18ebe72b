// The backward math (BackwardMath.h) is NNCC_HD: it must compile as device
// code so a CUDA twin of the backward kernels can call it unchanged.
#include "nncc/Kernels/BackwardMath.h"

using namespace nncc::kernels;

template <typename T>
__global__ void backward_math_probe(const T *sv, const T *in, T *out, int H) {
  int j = threadIdx.x;
  if (j >= H)
    return;
  T dc = in[j], dah;
  lstm_unit_backward(sv, H, j, in[H + j], in[2 * H + j], dc, out);
  out[4 * H + j] = gru_unit_backward(sv, H, j, in[j], dc, out, out + 3 * H);
  out[5 * H + j] = gru_cho_backward1(sv, H, j, in[j], dc, out, out + 3 * H, dah);
  out[6 * H + j] = gru_cho_backward2(sv, H, j, in[j], dah, out, out + 3 * H);
  out[7 * H + j] = rnn_unit_backward(in[j], false, dc) +
                   activation_grad_pre(ActGeluErf, in[j], T(0.1)) +
                   activation_grad_pre(ActGeluTanh, in[j], T(0.1)) +
                   activation_grad_post(ActSigmoid, in[j], T(0.1)) +
                   softmax_score_grad(in[j], dc, dah) +
                   unit_norm_grad(in[j], dc, dah, in[H + j]) +
                   bce_logits_grad_elem(in[j], dc, dah);
}

template __global__ void backward_math_probe<float>(const float *, const float *, float *, int);
template __global__ void backward_math_probe<double>(const double *, const double *, double *, int);
