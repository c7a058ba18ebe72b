//===- emu_model.h - the emulation of a whole generated model ---*- C++ -*-===//
//
// Test-only, included first by emu_nvcc.py into a generated model's CUDA
// source: the emulated runtime and cuBLAS (cuda_runtime.h, cublas_v2.h
// here) plus the runtime calls only the generated host code makes (the
// events of the NNCC_PROFILE timer).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_TEST_EMU_MODEL_H
#define NNCC_TEST_EMU_MODEL_H

#include <chrono>
#include <cuda_runtime.h>

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

#endif
