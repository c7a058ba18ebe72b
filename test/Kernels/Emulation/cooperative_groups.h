//===- cooperative_groups.h - host emulation of cooperative groups -*- C++ -*-===//
//
// Test-only (see cuda_runtime.h): the grid and thread-block groups the
// kernels use. grid_group::sync() is the emulation's exact barrier over
// every thread of a cooperative launch (reported in any other launch).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_TEST_EMU_COOPERATIVE_GROUPS_H
#define NNCC_TEST_EMU_COOPERATIVE_GROUPS_H

#include <cuda_runtime.h>

namespace cooperative_groups {

class grid_group {
public:
  [[gnu::noinline]] void sync(EMU_LOC) const { emu::grid_sync(EMU_SITE); }
  bool is_valid() const { return emu::g.cooperative; }
  unsigned long long num_threads() const {
    return (unsigned long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x;
  }
  unsigned long long thread_rank() const {
    const unsigned long long b = blockIdx.x + (unsigned long long)gridDim.x *
                                                  (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    return b * blockDim.x + threadIdx.x;
  }
  unsigned long long num_blocks() const {
    return (unsigned long long)gridDim.x * gridDim.y * gridDim.z;
  }
};
inline grid_group this_grid() { return grid_group(); }

class thread_block {
public:
  [[gnu::noinline]] void sync(EMU_LOC) const { emu::syncthreads(EMU_SITE); }
  unsigned thread_rank() const { return threadIdx.x; }
  unsigned num_threads() const { return blockDim.x; }
};
inline thread_block this_thread_block() { return thread_block(); }

} // namespace cooperative_groups

#endif
