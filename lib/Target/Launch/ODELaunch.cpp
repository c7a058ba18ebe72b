//===- ODELaunch.cpp - launches of the ODE solves -------------------------===//
//
// nnk.ode_solve, ode_rnn and their gradients are host loops that drive the
// launches of their regions (the dynamics, the cell) stage by stage. The
// loops are the runtime's (ODESolver.h, GradKernels.h, both targets); what
// each target prints, the regions as lambdas and the driver call, is in
// Cpp/CppOdeLoops.cpp and Cuda/CudaOdeLoops.cpp (the emitters' odeSolveLoop,
// odeRNNLoop, odeSolveGradLoop and odeRNNGradLoop), the region launches
// coming back through the emitter core.
//
//===----------------------------------------------------------------------===//
#include "../Common/LaunchEmitter.h"

using namespace mlir;

namespace nncc::target {
namespace {

LogicalResult emitODESolve(LaunchEmitter &e, nnk::ODESolveOp o) { return e.odeSolveLoop(o); }
LogicalResult emitODERNN(LaunchEmitter &e, nnk::ODERNNOp o) { return e.odeRNNLoop(o); }
LogicalResult emitODESolveGrad(LaunchEmitter &e, nnk::ODESolveGradOp o) {
  return e.odeSolveGradLoop(o);
}
LogicalResult emitODERNNGrad(LaunchEmitter &e, nnk::ODERNNGradOp o) { return e.odeRNNGradLoop(o); }

} // namespace

void attachODELaunches(MLIRContext &ctx) {
  attachLaunch<nnk::ODESolveOp, emitODESolve, Bf16Kernel::Yes, CudaODE>(ctx);
  attachLaunch<nnk::ODERNNOp, emitODERNN, Bf16Kernel::Yes, CudaODE>(ctx);
  attachLaunch<nnk::ODESolveGradOp, emitODESolveGrad, Bf16Kernel::Yes, CudaODE>(ctx);
  attachLaunch<nnk::ODERNNGradOp, emitODERNNGrad, Bf16Kernel::Yes, CudaODE>(ctx);
}

} // namespace nncc::target
