//===- CudaState.cuh - What every generated CUDA model keeps -----*- CUDA -*-===//
//
// The part of a generated model's CUDA state that does not depend on the
// model: the cuBLAS handle, the kernel scratch (one device buffer, grown to
// the largest launch of the bound dims), the index-check flag and the
// events of the opt-in per-launch timer (NNCC_PROFILE, docs/runtime.md).
// The generated NNCCCudaState derives from CudaStateBase and adds what its
// ops need (the cuBLASLt plans of LtGemm.cuh).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_MODELSUPPORT_CUDASTATE_CUH
#define NNCC_MODELSUPPORT_CUDASTATE_CUH

#include "nncc/ModelSupport/ModelSupport.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace nncc {
namespace ms {

struct CudaStateBase {
  cublasHandle_t blas = nullptr;
  void *scratch = nullptr; // kernel scratch (grown on demand)
  uint64_t scratch_bytes = 0;
  int *flag = nullptr; // first failing index check (0 = none)
  cudaEvent_t prof_a = nullptr, prof_b = nullptr; // NNCC_PROFILE only
};

/// The per-launch timer on the device: CUDA events around each top-level
/// launch, the host waiting for the second, so launches do not overlap
/// while it is on. A launch whose events fail is left out of the table.
/// Returns 1 when the launch is timed, 0 otherwise (profiling off).
inline double cuda_prof_begin(CudaStateBase *st, cudaStream_t stream) {
  if (nncc_ms_prof_begin() == 0.0)
    return 0.0;
  if ((!st->prof_a && cudaEventCreate(&st->prof_a) != cudaSuccess) ||
      (!st->prof_b && cudaEventCreate(&st->prof_b) != cudaSuccess))
    return 0.0;
  return cudaEventRecord(st->prof_a, stream) == cudaSuccess ? 1.0 : 0.0;
}

/// Ends the launch that cuda_prof_begin returned `on` for; adds its
/// device time to the table under `launch`.
inline void cuda_prof_end(CudaStateBase *st, double on, const char *launch,
                          cudaStream_t stream) {
  float ms = 0;
  if (on == 0.0 || cudaEventRecord(st->prof_b, stream) != cudaSuccess ||
      cudaEventSynchronize(st->prof_b) != cudaSuccess ||
      cudaEventElapsedTime(&ms, st->prof_a, st->prof_b) != cudaSuccess)
    return;
  nncc_ms_prof_add(ms * 1e-3, launch);
}

/// The kernel scratch holds at least `bytes` (the stream is synchronised
/// before a smaller buffer is freed).
inline cudaError_t cuda_ensure_scratch(CudaStateBase *st, uint64_t bytes, cudaStream_t stream) {
  if (bytes <= st->scratch_bytes)
    return cudaSuccess;
  cudaError_t e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess)
    return e;
  if (st->scratch && (e = cudaFree(st->scratch)) != cudaSuccess)
    return e;
  st->scratch = nullptr;
  st->scratch_bytes = 0;
  if ((e = cudaMalloc(&st->scratch, bytes)) != cudaSuccess)
    return e;
  st->scratch_bytes = bytes;
  return cudaSuccess;
}

/// Frees what the base holds (teardown cannot report; errors here leave
/// nothing behind to fix).
inline void cuda_state_release(CudaStateBase *s) {
  if (s->scratch)
    (void)cudaFree(s->scratch);
  if (s->flag)
    (void)cudaFree(s->flag);
  if (s->blas)
    (void)cublasDestroy(s->blas);
  if (s->prof_a)
    (void)cudaEventDestroy(s->prof_a);
  if (s->prof_b)
    (void)cudaEventDestroy(s->prof_b);
  *s = CudaStateBase();
}

} // namespace ms
} // namespace nncc

#endif // NNCC_MODELSUPPORT_CUDASTATE_CUH
