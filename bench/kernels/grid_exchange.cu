//===- grid_exchange.cu - the per-step cost of a grid-wide exchange -------===//
//
// A micro-benchmark for the recurrent grid kernels (Recurrent.cuh): every
// step, each of nc CTAs reads all B x H values of the previous step's h
// from L2 and writes its own floor(H / nc) columns of the next one, then
// the grid synchronises. Two synchronisations are timed:
//   grid.sync  cooperative groups' grid barrier (what rnn_grid_kernel uses);
//   flags      all-to-all step flags: each CTA publishes its step with a
//              release store, every CTA polls all nc flags with acquire
//              loads before it reads h.
// Prints microseconds per step for B 1 and 8, H 512, nc 32, 64, 128 and the
// device's SM count. Needs a GPU with cooperative launch; nothing but the
// driver at run time:
//
//   nvcc -O3 -arch=sm_90 bench/kernels/grid_exchange.cu -o grid_exchange
//   ./grid_exchange
//
// The exchange loops here are plain (one float per thread and iteration),
// so at B 8 they cost more than the grid kernel's 16-byte staging: compare
// the two synchronisations with each other, and B 1 with the LSTM step.
// First run: docs/benchmarks.md, "2026-11-27".
//
//===----------------------------------------------------------------------===//
#include <cooperative_groups.h>
#include <cstdio>
#include <cuda_runtime.h>

namespace {

constexpr int kMaxValues = 8 * 1024; // B x H staged per CTA, floats
constexpr int kSteps = 2000;

/// One step's exchange: stage h (buffer s & 1) in shared memory, write this
/// CTA's columns of the next h (buffer (s + 1) & 1).
__device__ void exchangeStep(int s, float *h, int H, int B, float *staged) {
  const int nc = gridDim.x, c = blockIdx.x, per = H / nc;
  const float *in = h + (s & 1) * B * H;
  float *out = h + ((s + 1) & 1) * B * H;
  for (int i = threadIdx.x; i < B * H; i += blockDim.x)
    staged[i] = __ldcg(in + i);
  __syncthreads();
  for (int i = threadIdx.x; i < B * per; i += blockDim.x)
    out[(i / per) * H + c * per + i % per] = staged[i] * 0.5f + 1.f;
}

__global__ void gridSyncKernel(int steps, float *h, int H, int B) {
  __shared__ float staged[kMaxValues];
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  for (int s = 0; s < steps; ++s) {
    exchangeStep(s, h, H, B, staged);
    grid.sync();
  }
}

__device__ __forceinline__ void storeRelease(int *p, int v) {
  asm volatile("st.release.gpu.global.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ int loadAcquire(const int *p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__global__ void stepFlagsKernel(int steps, float *h, int H, int B, int *flags) {
  __shared__ float staged[kMaxValues];
  for (int s = 0; s < steps; ++s) {
    if (s > 0) { // every CTA has written step s's h
      if (threadIdx.x < gridDim.x)
        while (loadAcquire(flags + threadIdx.x) < s) {
        }
      __syncthreads();
    }
    exchangeStep(s, h, H, B, staged);
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      storeRelease(flags + blockIdx.x, s + 1);
    }
  }
}

bool check(cudaError_t e, const char *what) {
  if (e == cudaSuccess)
    return true;
  std::fprintf(stderr, "grid_exchange: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

/// Microseconds per step of one cooperative launch of `kernel` (the second
/// of two: the first warms up), or a negative value after an error.
double timeSteps(bool flags, int nc, int H, int B, float *h, int *flagBuf) {
  cudaEvent_t start, stop;
  if (!check(cudaEventCreate(&start), "cudaEventCreate") ||
      !check(cudaEventCreate(&stop), "cudaEventCreate"))
    return -1;
  int steps = kSteps;
  void *syncArgs[] = {&steps, &h, &H, &B};
  void *flagArgs[] = {&steps, &h, &H, &B, &flagBuf};
  float ms = 0;
  bool ok = true;
  for (int rep = 0; rep < 2 && ok; ++rep) {
    ok = check(cudaMemset(flagBuf, 0, 1024 * sizeof(int)), "cudaMemset") &&
         check(cudaEventRecord(start), "cudaEventRecord") &&
         check(flags ? cudaLaunchCooperativeKernel((void *)stepFlagsKernel, nc, 256, flagArgs)
                     : cudaLaunchCooperativeKernel((void *)gridSyncKernel, nc, 256, syncArgs),
               "cudaLaunchCooperativeKernel") &&
         check(cudaEventRecord(stop), "cudaEventRecord") &&
         check(cudaEventSynchronize(stop), "the kernel") &&
         check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ok ? 1e3 * ms / kSteps : -1;
}

} // namespace

int main() {
  int sms = 0, coop = 0;
  if (!check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "no CUDA device") ||
      !check(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0), "attributes"))
    return 1;
  if (!coop) {
    std::fprintf(stderr, "grid_exchange: the device has no cooperative launch\n");
    return 1;
  }
  float *h = nullptr;
  int *flags = nullptr;
  if (!check(cudaMalloc(&h, 2 * kMaxValues * sizeof(float)), "cudaMalloc") ||
      !check(cudaMalloc(&flags, 1024 * sizeof(int)), "cudaMalloc") ||
      !check(cudaMemset(h, 0, 2 * kMaxValues * sizeof(float)), "cudaMemset"))
    return 1;
  const int H = 512;
  for (int B : {1, 8})
    for (int nc : {32, 64, 128, sms}) {
      if (nc > sms || nc > 1024)
        continue;
      const double sync = timeSteps(false, nc, H, B, h, flags);
      const double poll = timeSteps(true, nc, H, B, h, flags);
      if (sync < 0 || poll < 0)
        return 1;
      std::printf("B %d H %d CTAs %3d: grid.sync %.2f us/step, flags %.2f us/step\n", B, H, nc,
                  sync, poll);
    }
  return 0;
}
