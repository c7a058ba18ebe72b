//===- Bf16.h - bfloat16 storage for the kernels ----------------*- C++ -*-===//
//
// bf16_t is a bfloat16 value as the kernels store it: the high 16 bits of an
// IEEE float (same layout as CUDA's __nv_bfloat16, PyTorch's torch.bfloat16
// and safetensors' BF16). The kernels never compute in it: values are
// widened to float when loaded (exact) and rounded to nearest even when
// stored, so bf16 kernels accumulate in fp32. acc_t<T> names the type a
// kernel with element type T computes in (float for bf16_t, T otherwise).
// Host and device share these functions; the conversions are the runtime's
// nncc_f32_to_bf16 / nncc_bf16_to_f32, bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_BF16_H
#define NNCC_KERNELS_BF16_H

#include "nncc/Kernels/HostDevice.h"

#include <stdint.h>
#include <string.h>

#include <type_traits>

namespace nncc {
namespace kernels {

struct bf16_t {
  uint16_t bits;
};
static_assert(sizeof(bf16_t) == 2, "bf16_t is two bytes");

NNCC_HD uint32_t bf16_float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
#endif
}

NNCC_HD float bf16_bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/// The float a bf16 holds (exact).
NNCC_HD float bf16_to_float(bf16_t x) { return bf16_bits_float((uint32_t)x.bits << 16); }

/// f rounded to the nearest bf16, ties to even; NaN stays a (quiet) NaN,
/// overflow rounds to infinity as IEEE rounding does.
NNCC_HD bf16_t bf16_from_float(float f) {
  const uint32_t u = bf16_float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return bf16_t{(uint16_t)((u >> 16) | 0x40u)};
  return bf16_t{(uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}

/// The arithmetic type of kernels over element type T.
template <typename T> struct AccOf {
  using type = T;
};
template <> struct AccOf<bf16_t> {
  using type = float;
};
template <typename T> using acc_t = typename AccOf<T>::type;

template <typename T> inline constexpr bool is_bf16_v = std::is_same_v<T, bf16_t>;

/// Bytes of the arithmetic type for a stored element of `elem` bytes
/// (bf16's 2: fp32's 4): scratch and workspace sizes given sizeof(real_t).
NNCC_HD constexpr int64_t acc_elem_bytes(int64_t elem) { return elem == 2 ? 4 : elem; }

/// A stored element as its arithmetic type, and back.
template <typename T> NNCC_HD acc_t<T> load_acc(T x) { return x; }
template <> NNCC_HD float load_acc<bf16_t>(bf16_t x) { return bf16_to_float(x); }
template <typename T> NNCC_HD T store_acc(acc_t<T> x) { return x; }
template <> NNCC_HD bf16_t store_acc<bf16_t>(float x) { return bf16_from_float(x); }

} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_BF16_H
