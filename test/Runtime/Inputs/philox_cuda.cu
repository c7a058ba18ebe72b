// Philox.h compiled by nvcc: the host pass must reproduce libnncc_runtime's
// fills bit for bit; with --device, a kernel must too (same header, GPU math).
#include "nncc/Runtime/Philox.h"
#include "nncc/Runtime/nncc_runtime.h"

#include <cstdio>
#include <cstring>
#include <vector>

__global__ void fill(float *normal, float *uniform, unsigned long long n, unsigned long long seed,
                     unsigned long long stream) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) {
    normal[i] = nncc_rng_normal(seed, stream, i);
    uniform[i] = nncc_rng_uniform(seed, stream, i);
  }
}

int main(int argc, char **argv) {
  const unsigned long long n = 1 << 16, seed = 0x5eedull, stream = 3;
  std::vector<float> normal(n), uniform(n);
  nncc_rng_fill_normal_f32(normal.data(), n, seed, stream, 0, 0.f, 1.f);
  nncc_rng_fill_uniform_f32(uniform.data(), n, seed, stream, 0, 0.f, 1.f);
  for (unsigned long long i = 0; i < n; ++i)
    if (normal[i] != nncc_rng_normal(seed, stream, i) ||
        uniform[i] != nncc_rng_uniform(seed, stream, i)) {
      std::printf("host mismatch at %llu\n", i);
      return 1;
    }
  std::printf("host OK: %llu values\n", n);
  if (argc < 2 || std::strcmp(argv[1], "--device") != 0)
    return 0;

  float *dn = nullptr, *du = nullptr;
  if (cudaMalloc(&dn, n * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&du, n * sizeof(float)) != cudaSuccess) {
    std::printf("cudaMalloc failed\n");
    return 1;
  }
  fill<<<(unsigned)((n + 255) / 256), 256>>>(dn, du, n, seed, stream);
  std::vector<float> gn(n), gu(n);
  cudaError_t e = cudaMemcpy(gn.data(), dn, n * sizeof(float), cudaMemcpyDeviceToHost);
  if (e == cudaSuccess)
    e = cudaMemcpy(gu.data(), du, n * sizeof(float), cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(e));
    return 1;
  }
  unsigned long long bad = 0, first = n;
  for (unsigned long long i = 0; i < n; ++i)
    if (std::memcmp(&gn[i], &normal[i], 4) != 0 || std::memcmp(&gu[i], &uniform[i], 4) != 0) {
      if (first == n)
        first = i;
      ++bad;
    }
  if (bad) {
    std::printf("device differs in %llu of %llu values (first at %llu: %.9g vs %.9g)\n", bad, n,
                first, gn[first], normal[first]);
    return 1;
  }
  std::printf("device OK: %llu values bit-identical\n", n);
  cudaFree(dn);
  cudaFree(du);
  return 0;
}
