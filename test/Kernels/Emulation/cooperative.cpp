// Self-test of the emulation's cooperative launches (cuda_runtime.h,
// cooperative_groups.h): every CTA of the grid runs at once, grid.sync() is
// an exact barrier over the whole grid, each CTA has its own blockIdx and
// dynamic shared memory, and the launch checks co-residency. The kernels
// are written here (the form rewrite_cuda.py gives .cuh code).
//
// usage: cooperative            the checks that must pass
//        cooperative MODE       one misuse that the emulation must report:
//          exit     CTA 0 waits at grid.sync() while the others exit
//          plain    grid.sync() in an ordinary launch
//          static   static __shared__ in a cooperative kernel
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "emu_test.h"

#include <string>

namespace cg = cooperative_groups;

/// Each round every thread publishes v, the grid syncs, and v becomes the
/// value of the same thread of the next CTA plus one. Without an exact grid
/// barrier some thread reads a value of the wrong round. Also: the CTA's
/// dynamic shared memory is its own (flag set otherwise).
__global__ void ring_kernel(int rounds, int *buf, int *out, int *flag) {
  int *smem = (int *)::emu::dynamic_smem();
  cg::grid_group grid = cg::this_grid();
  const int n = (int)(gridDim.x * blockDim.x);
  const int gid = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  smem[threadIdx.x] = (int)blockIdx.x;
  int v = gid;
  for (int r = 0; r < rounds; ++r) {
    buf[(r & 1) * n + gid] = v;
    grid.sync();
    v = buf[(r & 1) * n + (gid + (int)blockDim.x) % n] + 1;
  }
  __syncthreads();
  for (unsigned t = 0; t < blockDim.x; ++t)
    if (smem[t] != (int)blockIdx.x)
      *flag = 1;
  out[gid] = v;
}

__global__ void exit_kernel(int *x) {
  if (blockIdx.x == 0)
    cg::this_grid().sync();
  x[threadIdx.x] = 1;
}

__global__ void static_smem_kernel(int *x) {
  static int arr[32];
  ::emu::shared_array(&arr, sizeof(arr));
  arr[threadIdx.x] = 1;
  __syncthreads();
  x[threadIdx.x] = arr[threadIdx.x];
}

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  std::vector<int> x(64, 0);
  if (mode == "exit" || mode == "static") {
    int *p = x.data();
    void *args[] = {&p};
    const cudaError_t e = mode == "exit"
                              ? cudaLaunchCooperativeKernel(exit_kernel, dim3(3), dim3(32), args)
                              : cudaLaunchCooperativeKernel(static_smem_kernel, dim3(2), dim3(32),
                                                            args);
    printf("launch returned %d\n", (int)e);
    return emutest::finish();
  }
  if (mode == "plain") {
    int *p = x.data();
    ::emu::launch(exit_kernel, dim3(2), dim3(32), 0, nullptr, "exit_kernel",
                  [&](auto... a) { exit_kernel(a...); })(p);
    return emutest::finish();
  }
  {
    emutest::Group G("cooperative launch", 0);
    for (int ctas : {1, 2, 5}) {
      const int threads = 64, n = ctas * threads, rounds = 7;
      std::vector<int> buf(2 * n, -1), out(n, -1);
      int flag = 0, r = rounds;
      int *pb = buf.data(), *po = out.data(), *pf = &flag;
      void *args[] = {&r, &pb, &po, &pf};
      const size_t smem = threads * sizeof(int);
      G.ok("smem attribute", cudaFuncSetAttribute(ring_kernel,
                                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                  (int)smem));
      const long before = emu::g.coop_launches;
      G.ok("launch " + std::to_string(ctas),
           cudaLaunchCooperativeKernel(ring_kernel, dim3(ctas), dim3(threads), args, smem));
      G.ok("counted", emu::g.coop_launches - before - 1);
      // Thread gid ends with gid + rounds * threads (mod n) + rounds.
      std::vector<int> want(n);
      for (int g = 0; g < n; ++g)
        want[g] = (g + rounds * threads) % n + rounds;
      G.cmp("ring " + std::to_string(ctas), want.data(), out.data(), n);
      G.ok("own dynamic shared memory", flag);
    }
    // Device model: co-residency and attributes.
    int coop = 0, per = 0;
    G.ok("attribute", cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0));
    G.ok("cooperative launch supported", coop != 1);
    const int sms = emu::g.sms;
    emu::g.sms = 2;
    G.ok("occupancy", cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, ring_kernel, 1024, 0));
    G.ok("two 1024-thread CTAs per SM", per != 2);
    G.ok("occupancy smem", cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, ring_kernel, 64,
                                                                          100 * 1024));
    G.ok("two 100 KiB CTAs per SM", per != 2);
    {
      std::vector<int> buf(2 * 5 * 1024), out(5 * 1024);
      int flag = 0, r = 1;
      int *pb = buf.data(), *po = out.data(), *pf = &flag;
      void *args[] = {&r, &pb, &po, &pf};
      G.ok("5 CTAs of 1024 threads on 2 SMs: too large",
           cudaLaunchCooperativeKernel(ring_kernel, dim3(5), dim3(1024), args, 0) !=
               cudaErrorCooperativeLaunchTooLarge);
      emu::g.coop = 0;
      G.ok("without cooperative launches: not supported",
           cudaLaunchCooperativeKernel(ring_kernel, dim3(1), dim3(32), args, 0) !=
               cudaErrorNotSupported);
      emu::g.coop = 1;
    }
    emu::g.sms = sms;
  }
  return emutest::finish();
}
