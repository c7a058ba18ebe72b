//===- ODE.cpp - Workspace sizes of the ODE family's CPU drivers ----------===//
//
// The solvers themselves are header-only (ODESolver.h, GradKernels.h), so
// that the generated model code inlines its right-hand side into them; the
// CUDA drivers run the same step loops (CUDA/ODE.cuh).
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "nncc/Kernels/GradKernels.h"

extern "C" int64_t nncc_ode_grad_workspace_size(int method, int64_t steps, int64_t max_steps,
                                                int adjoint, int64_t n, int64_t P,
                                                int64_t elem_size) {
  return nncc::grad::ode_grad_layout(method, steps, max_steps, adjoint, n, P, elem_size).bytes;
}
