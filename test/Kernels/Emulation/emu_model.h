//===- emu_model.h - the emulation of a whole generated model ---*- C++ -*-===//
//
// Test-only, included first by emu_nvcc.py into a generated model's CUDA
// source: the emulated runtime, cuBLAS and cuBLASLt (cuda_runtime.h,
// cublas_v2.h, cublasLt.h here) plus the runtime calls only the generated
// host code makes (the events of the NNCC_PROFILE timer). With
// EMU_GEMM_COUNTS=FILE the library appends, when it is unloaded, the line
// "gemm calls: cublas N, cublasLt M" (how many GEMMs took which path).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_TEST_EMU_MODEL_H
#define NNCC_TEST_EMU_MODEL_H

#include <chrono>
#include <cstdlib>
#include <cuda_runtime.h>

#include "cublasLt.h"
#include "cublas_v2.h"

struct emu_event {
  double seconds = 0;
};
// Launches run synchronously, so an event's time is when it was recorded.
inline cudaError_t cudaEventCreate(cudaEvent_t *e) {
  *e = new emu_event();
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = nullptr) {
  e->seconds = std::chrono::duration<double>(
                   std::chrono::steady_clock::now().time_since_epoch())
                   .count();
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = (float)((b->seconds - a->seconds) * 1e3);
  return cudaSuccess;
}

namespace emu {
struct gemm_count_report {
  ~gemm_count_report() {
    const char *path = getenv("EMU_GEMM_COUNTS");
    if (FILE *f = path && *path ? fopen(path, "a") : nullptr) {
      fprintf(f, "gemm calls: cublas %ld, cublasLt %ld\n", gemms, lt_matmuls);
      fclose(f);
    }
  }
};
inline gemm_count_report gemm_counts;
} // namespace emu

#endif
