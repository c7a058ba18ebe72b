//===- ODELaunch.cpp - launches of the ODE solves -------------------------===//
//
// nnk.ode_solve, ode_rnn and their gradients are host loops that drive the
// launches of their regions (the dynamics, the cell) stage by stage; the
// loops are target code (CppEmitter's / CudaEmitter's emitODE), the region
// launches come back through the emitter core.
//
//===----------------------------------------------------------------------===//
#include "../Common/LaunchEmitter.h"

using namespace mlir;

namespace nncc::target {
namespace {

template <typename ODEOp>
LogicalResult emitODE(LaunchEmitter &e, ODEOp o) {
  return e.emitODE(o.getOperation());
}

} // namespace

void attachODELaunches(MLIRContext &ctx) {
  attachLaunch<nnk::ODESolveOp, emitODE<nnk::ODESolveOp>, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::ODERNNOp, emitODE<nnk::ODERNNOp>, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::ODESolveGradOp, emitODE<nnk::ODESolveGradOp>, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::ODERNNGradOp, emitODE<nnk::ODERNNGradOp>, Bf16Kernel::Yes>(ctx);
}

} // namespace nncc::target
