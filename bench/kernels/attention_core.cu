//===- attention_core.cu - the attention kernels alone, for bench/gpu.py -===//
//
// C entries over Attention.cuh's forward launchers and AttentionBackward.cuh's
// dense backward, so bench/gpu.py can time the attention core (no
// projections) in fp32 and bf16 on torch's tensors and stream against SDPA
// and FlexAttention in the same precision. Built by `bench/gpu.py --prepare`
// with nvcc into libnncc_bench_attention.so.
//
//===----------------------------------------------------------------------===//
#include "nncc/Kernels/CUDA/Attention.cuh"
#include "nncc/Kernels/CUDA/AttentionBackward.cuh"

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;

namespace {

template <typename T>
int attentionCore(int kind, int B, int Tn, int H, int dh, const void *q, const void *k,
                  const void *v, int64_t ld_in, void *out, int64_t ld_out, int causal,
                  float scale, int window, int dilation, const int32_t *host_globals,
                  int n_global, void *scratch, cudaStream_t stream) {
  const T *qt = static_cast<const T *>(q), *kt = static_cast<const T *>(k),
          *vt = static_cast<const T *>(v);
  T *ot = static_cast<T *>(out);
  if (kind == 0)
    return (int)launch_flash_attention_dyn<T>(dh, B, Tn, H, qt, kt, vt, ld_in, ot, ld_out,
                                              nullptr, causal, (acc_t<T>)scale, nullptr, stream);
  return (int)launch_dilated_attention_dyn<T>(dh, B, Tn, H, qt, kt, vt, ld_in, ot, ld_out,
                                              nullptr, causal, (acc_t<T>)scale, window, dilation,
                                              host_globals, n_global, scratch, stream);
}

} // namespace

extern "C" {

/// Bytes of device scratch nncc_bench_attention needs (dilated only).
int64_t nncc_bench_attention_scratch(int Tn, int n_global) {
  return dilated_attention_scratch_bytes(Tn, n_global);
}

/// The attention forward over rows of stride ld_in (q, k, v) and ld_out
/// (out), heads at columns h * dh. dtype 0: fp32, 1: bf16. kind 0: dense
/// (flash), 1: dilated band (window, dilation, host_globals). Returns the
/// launcher's cudaError_t.
int nncc_bench_attention(int dtype, int kind, int B, int Tn, int H, int dh, const void *q,
                         const void *k, const void *v, int64_t ld_in, void *out, int64_t ld_out,
                         int causal, float scale, int window, int dilation,
                         const int32_t *host_globals, int n_global, void *scratch,
                         void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (dtype == 1)
    return attentionCore<bf16_t>(kind, B, Tn, H, dh, q, k, v, ld_in, out, ld_out, causal, scale,
                                 window, dilation, host_globals, n_global, scratch, s);
  return attentionCore<float>(kind, B, Tn, H, dh, q, k, v, ld_in, out, ld_out, causal, scale,
                              window, dilation, host_globals, n_global, scratch, s);
}

/// Bytes of device scratch nncc_bench_attention_backward needs.
int64_t nncc_bench_attention_backward_scratch(int dtype, int B, int Tn, int H, int dh) {
  return flash_attention_backward_workspace_bytes(
      B, Tn, H, dh, dtype == 1 ? (int64_t)sizeof(bf16_t) : (int64_t)sizeof(float), 1);
}

/// The dense (non-causal, no dropout) attention backward as training runs
/// it without a saved forward: q, k, v, dout, dq, dk, dv rows of stride ld
/// (heads at columns h * dh); the forward is recomputed inside (bf16 always
/// does). dtype 0: fp32, 1: bf16. Returns the launcher's cudaError_t.
int nncc_bench_attention_backward(int dtype, int B, int Tn, int H, int dh, const void *q,
                                  const void *k, const void *v, const void *dout, void *dq,
                                  void *dk, void *dv, int64_t ld, float scale, void *scratch,
                                  void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  char *ws = static_cast<char *>(scratch);
  if (dtype == 1) {
    using T = bf16_t;
    return (int)launch_flash_attention_backward<T>(
        dh, B, Tn, H, static_cast<const T *>(q), static_cast<const T *>(k),
        static_cast<const T *>(v), ld, static_cast<const T *>(dout), ld, static_cast<T *>(dq),
        static_cast<T *>(dk), static_cast<T *>(dv), ld, nullptr, 0, scale, 0.0, 0, 0, nullptr,
        nullptr, nullptr, ws, s);
  }
  return (int)launch_flash_attention_backward<float>(
      dh, B, Tn, H, static_cast<const float *>(q), static_cast<const float *>(k),
      static_cast<const float *>(v), ld, static_cast<const float *>(dout), ld,
      static_cast<float *>(dq), static_cast<float *>(dk), static_cast<float *>(dv), ld, nullptr,
      0, scale, 0.0, 0, 0, nullptr, nullptr, nullptr, ws, s);
}

} // extern "C"
