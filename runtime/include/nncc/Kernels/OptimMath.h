//===- OptimMath.h - element-wise optimizer updates (host and device) -----===//
//
// One fused element update per optimizer, shared by the CPU kernels
// (runtime/lib/Kernels/Optim.cpp) and any CUDA kernel (NNCC_HD). Each reads the
// gradient once, applies the clipping scale, updates the state and the
// parameter in place. Formulas and their order follow torch.optim (SGD,
// Adam, AdamW with foreach=False) so results agree to rounding.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_OPTIMMATH_H
#define NNCC_KERNELS_OPTIMMATH_H

#include "nncc/Kernels/Common.h"

#include <cmath>

namespace nncc::kernels {

/// SGD with momentum (torch: dampening 0). `first`: the momentum buffer is
/// uninitialised (torch sets buf = g on the first step).
template <typename T>
NNCC_HD void sgdUpdate(T &p, T g, T &buf, T lr, T momentum, T wd, bool nesterov,
                              bool first) {
  if (wd != T(0))
    g = g + wd * p;
  if (momentum != T(0)) {
    buf = first ? g : momentum * buf + g;
    g = nesterov ? g + momentum * buf : buf;
  }
  p = p - lr * g;
}

/// Adam / AdamW. `decoupled`: AdamW (p *= 1 - lr*wd before the step), else
/// L2 (g += wd*p). bc1 = 1 - beta1^t, bc2 = 1 - beta2^t.
template <typename T>
NNCC_HD void adamUpdate(T &p, T g, T &m, T &v, T lr, T beta1, T beta2, T eps, T wd,
                               bool decoupled, T bc1, T bc2) {
  if (wd != T(0)) {
    if (decoupled)
      p = p * (T(1) - lr * wd);
    else
      g = g + wd * p;
  }
  m = m + (g - m) * (T(1) - beta1);          // torch: m.lerp_(g, 1 - beta1)
  v = v * beta2 + g * g * (T(1) - beta2);    // torch: v.mul_(b2).addcmul_(g, g, 1 - b2)
  T stepSize = lr / bc1;
  T denom = std::sqrt(v) / std::sqrt(bc2) + eps;
  p = p - stepSize * (m / denom);
}

/// Gradient accumulation (apply_gradients): the weighted mean of the
/// micro-batches' gradients as a running mean, mean += alpha (g - mean)
/// with alpha = w_k / (w_1 + ... + w_k); the first micro-batch sets mean = g
/// (exactly its gradient when it is the only one).
template <typename T> NNCC_HD void runningMeanUpdate(T &mean, T g, T alpha) {
  mean = mean + alpha * (g - mean);
}

} // namespace nncc::kernels

#endif
