//===- IndexMath.h - Strided-copy and reduction index math ------*- C++ -*-===//
//
// The index math of strided copies (nnk.transpose / slice / concat / split)
// and of nnk.reduce, shared by the CPU side (lib/ModelSupport:
// nncc_ms_copy_nd, nncc_ms_reduce_*) and the CUDA kernels (CUDA/Tensor.cuh):
// row-major flat index -> multi-index -> offsets under strides, and the
// merging of adjacent reduced / kept dims.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_INDEXMATH_H
#define NNCC_KERNELS_INDEXMATH_H

#include "nncc/Kernels/HostDevice.h"

#include <stdint.h>

namespace nncc {
namespace kernels {

/// Offsets of row-major element `flat` of shape[0..rank) under two stride
/// sets (in elements): *oa = sum_d j_d sa[d], *ob = sum_d j_d sb[d].
NNCC_HD void strided_offsets(int64_t flat, int rank, const int64_t *shape,
                             const int64_t *sa, int64_t *oa, const int64_t *sb,
                             int64_t *ob) {
  int64_t rem = flat, a = 0, b = 0;
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t j = rem % shape[d];
    rem /= shape[d];
    a += j * sa[d];
    b += j * sb[d];
  }
  *oa = a;
  *ob = b;
}

/// Offset under `stride` of row-major index `flat` over the dims d of
/// shape[0..rank) whose mask bit equals `bit` (0: kept dims, 1: reduced).
NNCC_HD int64_t masked_offset(int64_t flat, int rank, const int64_t *shape,
                              const int64_t *stride, uint32_t mask,
                              uint32_t bit) {
  int64_t rem = flat, off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    if ((mask >> d & 1u) != bit)
      continue;
    off += (rem % shape[d]) * stride[d];
    rem /= shape[d];
  }
  return off;
}

/// Merges adjacent dims of a reduction over shape[0..rank) (bit d of `mask`
/// set: reduced) that are both reduced or both kept, and drops size-1 dims.
/// Writes the merged sizes to `size` and their mask to *merged_mask (room
/// for `rank` dims) and returns their number (0 when every dim is 1). Row-
/// major order, over the input and over each output's reduced index, is
/// unchanged.
NNCC_HD int merge_reduce_dims(int rank, const int64_t *shape, uint32_t mask,
                              int64_t *size, uint32_t *merged_mask) {
  int n = 0;
  uint32_t m = 0;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] == 1)
      continue;
    const uint32_t r = mask >> d & 1u;
    if (n > 0 && (m >> (n - 1) & 1u) == r) {
      size[n - 1] *= shape[d];
    } else {
      size[n] = shape[d];
      m |= r << n;
      ++n;
    }
  }
  *merged_mask = m;
  return n;
}

} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_INDEXMATH_H
