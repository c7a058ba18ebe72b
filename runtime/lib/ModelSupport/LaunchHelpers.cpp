//===- LaunchHelpers.cpp - what generated launches call -------------------===//
//
// Kernel status codes as messages, strided n-d copies and the reductions of
// broadcast gradients (nncc_ms_reduce_*: every output element sums its
// inputs in row-major order, in double).
//
//===----------------------------------------------------------------------===//
#include "ModelState.h"
#include "nncc/Kernels/IndexMath.h"

using namespace nncc::ms;

using nncc::kernels::merge_reduce_dims;
using nncc::kernels::strided_offsets;

namespace {

template <typename T>
void reduceImpl(int32_t rank, const int64_t *shape, uint32_t mask, int mean,
                       const T *x, T *y) {
  // Merge adjacent dims of the same kind (size-1 dims vanish), then walk
  // the outer dims with an odometer and the innermost one contiguously.
  // Every output element sums its inputs in row-major order.
  int64_t total = 1, kept = 1;
  for (int32_t d = 0; d < rank; ++d) {
    total *= shape[d];
    if (!(mask >> d & 1))
      kept *= shape[d];
  }
  std::vector<int64_t> size(rank > 0 ? rank : 1);
  uint32_t merged = 0;
  size_t n = static_cast<size_t>(merge_reduce_dims(rank, shape, mask, size.data(), &merged));
  auto reduced = [&](int64_t d) { return (merged >> d & 1u) != 0; };
  std::vector<double> acc(static_cast<size_t>(kept), 0.0);
  if (total > 0) {
    if (n == 0)
      size[0] = 1, merged = 0, n = 1;
    std::vector<int64_t> keptStride(n, 0);
    for (int64_t d = (int64_t)n - 1, st = 1; d >= 0; --d)
      if (!reduced(d)) {
        keptStride[d] = st;
        st *= size[d];
      }
    std::vector<int64_t> idx(n, 0);
    const int64_t inner = size[n - 1];
    const bool innerReduced = reduced((int64_t)n - 1);
    int64_t o = 0;
    for (int64_t i = 0; i < total; i += inner) {
      const T *xi = x + i;
      if (innerReduced) {
        double s = acc[o];
        for (int64_t c = 0; c < inner; ++c)
          s += static_cast<double>(xi[c]);
        acc[o] = s;
      } else {
        double *ao = acc.data() + o;
        for (int64_t c = 0; c < inner; ++c)
          ao[c] += static_cast<double>(xi[c]);
      }
      for (int64_t d = (int64_t)n - 2; d >= 0; --d) { // odometer step
        o += keptStride[d];
        if (++idx[d] < size[d])
          break;
        o -= keptStride[d] * size[d];
        idx[d] = 0;
      }
    }
  }
  double cnt = kept ? static_cast<double>(total) / static_cast<double>(kept) : 1.0;
  for (int64_t o = 0; o < kept; ++o)
    y[o] = static_cast<T>(mean ? acc[o] / cnt : acc[o]);
}

} // namespace

nncc_status nncc_ms_kernel_status(int rc, const char *launch, nncc_error *err) {
  switch (rc) {
  case 0:
    return NNCC_OK;
  case -2:
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "%s: an index input is out of range", launch);
  case -3:
    return nncc_error_set(err, NNCC_ERROR_UNSUPPORTED, "%s: unsupported by the kernel",
                          launch);
  default:
    return nncc_error_set(err, NNCC_ERROR_INTERNAL,
                          "%s: the kernel rejected its arguments (code %d)", launch, rc);
  }
}

void nncc_ms_copy_nd(uint32_t elem_size, int32_t rank, const int64_t *shape, void *dst,
                     const int64_t *dst_strides, const void *src,
                     const int64_t *src_strides) {
  int64_t total = 1;
  for (int32_t d = 0; d < rank; ++d)
    total *= shape[d];
  if (total <= 0)
    return;
  char *out = static_cast<char *>(dst);
  const char *in = static_cast<const char *>(src);
  int64_t inner = rank ? shape[rank - 1] : 1;
  int64_t rows = total / inner;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t so = 0, dso = 0; // the row's offsets: its index over dims 0..rank-2
    strided_offsets(r, rank - 1, shape, src_strides, &so, dst_strides, &dso);
    int64_t ss = rank ? src_strides[rank - 1] : 1, ds = rank ? dst_strides[rank - 1] : 1;
    if (ss == 1 && ds == 1) {
      std::memcpy(out + dso * elem_size, in + so * elem_size, inner * elem_size);
      continue;
    }
    for (int64_t j = 0; j < inner; ++j)
      std::memcpy(out + (dso + j * ds) * elem_size, in + (so + j * ss) * elem_size,
                  elem_size);
  }
}

void nncc_ms_reduce_f32(int32_t rank, const int64_t *shape, uint32_t mask, int mean,
                        const float *x, float *y) {
  reduceImpl(rank, shape, mask, mean, x, y);
}
void nncc_ms_reduce_f64(int32_t rank, const int64_t *shape, uint32_t mask, int mean,
                        const double *x, double *y) {
  reduceImpl(rank, shape, mask, mean, x, y);
}
