//===- CudaEmitter.h - the CUDA emitter ---------------------------*- C++ -*-===//
//
// CudaEmitter: LaunchEmitter's CUDA target. CudaEmitter.cpp prints the
// .cu (includes, state, setup, the launch sequences, training and the
// optimizer); CudaOdeLoops.cpp the ODE ops' region lambdas and driver calls.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_LIB_TARGET_CUDA_CUDAEMITTER_H
#define NNCC_LIB_TARGET_CUDA_CUDAEMITTER_H

#include "../Common/LaunchEmitter.h"

namespace nncc::target {

class CudaEmitter : public LaunchEmitter {
public:
  explicit CudaEmitter(mlir::ModuleOp module, Precision precision = Precision::F32)
      : LaunchEmitter(module, TargetKind::CUDA, precision) {}
  mlir::LogicalResult emit(mlir::raw_indented_ostream &os);

  //===--- target hooks -----------------------------------------------------===//
  std::string checked(const std::string &callExpr) override {
    // The call is parenthesised: template argument lists contain commas.
    return "NNCC_CUDA_CHECK((" + callExpr + "), " + cString(launchComment(op())) + ");\n";
  }
  /// Device scratch for the current top-level launch (the scratch buffer
  /// is sized for the largest launch); returns a `char *` expression.
  std::string workspace(const Size &bytes) override {
    std::string at = "(nncc_scratch + (" + scratchCur + "))";
    scratchCur += " + nncc_gen_align((uint64_t)(" + bytes.str() + "))";
    return at;
  }
  void beginTopLevelLaunch() override { scratchCur = "0"; }
  /// Device time between two CUDA events around the launch.
  std::string profileBegin(const std::string &t0) override {
    return "const double " + t0 + " = nncc::ms::cuda_prof_begin(st, stream);\n";
  }
  std::string profileEnd(const std::string &t0, const std::string &launch) override {
    return "nncc::ms::cuda_prof_end(st, " + t0 + ", " + cString(launch) + ", stream);\n";
  }
  mlir::LogicalResult copyNd(const StridedCopy &c) override;
  void copyOne(const std::string &dst, const std::string &src) override {
    out() << checked("cudaMemcpyAsync(" + dst + ", " + src + ", sizeof(*" + dst +
                     "), cudaMemcpyDeviceToDevice, stream)");
  }
  mlir::LogicalResult odeSolveLoop(nnk::ODESolveOp o) override { return emitOdeSolve(out(), o); }
  mlir::LogicalResult odeRNNLoop(nnk::ODERNNOp o) override { return emitOdeRnn(out(), o); }
  mlir::LogicalResult odeSolveGradLoop(nnk::ODESolveGradOp o) override {
    return emitOdeSolveGrad(out(), o);
  }
  mlir::LogicalResult odeRNNGradLoop(nnk::ODERNNGradOp o) override {
    return emitOdeRnnGrad(out(), o);
  }

private:
  std::string scratchCur = "0"; // bytes taken by the current launch
  /// Emits the launches of a region of an ODE op (its inner weights and
  /// allocs are declared by the function's prologue: parameters and arena
  /// slots); the caller has named the block arguments.
  mlir::LogicalResult emitRegion(mlir::raw_indented_ostream &os, mlir::Region &region,
                                 mlir::Operation *parent);
  mlir::LogicalResult emitOdeSolve(mlir::raw_indented_ostream &os, nnk::ODESolveOp op);
  mlir::LogicalResult emitOdeRnn(mlir::raw_indented_ostream &os, nnk::ODERNNOp op);
  /// The status check after an ODE driver (ode_integrate_device,
  /// ode_rnn_device) returned rc_.
  std::string odeSolveFailure();
  mlir::LogicalResult emitOdeSolveGrad(mlir::raw_indented_ostream &os, nnk::ODESolveGradOp op);
  mlir::LogicalResult emitOdeRnnGrad(mlir::raw_indented_ostream &os, nnk::ODERNNGradOp op);
  /// A region as a lambda `lambda(params) -> int` (0 or a status) whose
  /// `prologue` binds the block arguments; inner launches as emitRegion's.
  mlir::LogicalResult emitRegionLambda(mlir::raw_indented_ostream &os, mlir::Region &region,
                                       mlir::Operation *parent, const std::string &lambda,
                                       const std::string &params, const std::string &prologue);
  /// The dynamics region (t, h, dh) as the lambda `dynamics(s_, hin_, dh_)`
  /// the ODE.cuh drivers call; `timeStmts` give its time argument the
  /// value s_ (scalarTime, or the ODE-RNN rows' times).
  mlir::LogicalResult emitDynamicsLambda(mlir::raw_indented_ostream &os, mlir::Region &dynamics,
                                         mlir::Operation *parent, const std::string &prefix,
                                         const std::string &timeStmts);
  /// Statements binding a region's time argument `t` (as `name`) to s_ in
  /// the device scalar `tbuf`, filled only when the region reads it.
  std::string scalarTime(mlir::BlockArgument t, const std::string &name);
  /// The arena slot of the CPU plan's workspace for `op` (the ODE
  /// gradients' scratch: the same bytes, device memory on CUDA).
  mlir::FailureOr<int> plannedWorkspace(mlir::Operation *op);
  /// `OdeDevice ode_dev` of the current launch (stream, dopri5's norm
  /// scratch from the kernel scratch).
  void emitOdeDevice(mlir::raw_indented_ostream &os);
  /// The statements reporting a device driver's CUDA error (OdeDeviceError).
  std::string odeDeviceBranch();
  llvm::DenseMap<mlir::Operation *, int> cpuWorkspaces;
  bool cpuPlanned = false;
  /// One extern "C" launch sequence nncc_<model>_<fnName> over `ops` of `fn`.
  mlir::LogicalResult emitSequence(mlir::raw_indented_ostream &f, llvm::StringRef fnName,
                                   mlir::func::FuncOp fn, llvm::ArrayRef<mlir::Operation *> ops);
  /// forward_train / backward on CUDA and the optimizer functions.
  mlir::LogicalResult emitTraining(mlir::raw_indented_ostream &f);
  /// kParamNumel and the optimizer functions over the parameter tables.
  void emitOptimizer(mlir::raw_indented_ostream &f);
  /// nncc_<model>_grad_sum_squares_cuda: the squared norm of the unfrozen gradients.
  void emitGradSumSquares(mlir::raw_indented_ostream &f, size_t numParams, size_t arrayLen);
  /// nncc_<model>_update_cuda: one SGD or Adam(W) step of the unfrozen parameters.
  void emitOptimizerUpdate(mlir::raw_indented_ostream &f, size_t numParams, size_t arrayLen);
  /// nncc_<model>_grad_mean_cuda: launch_grad_mean over every gradient.
  void emitGradMean(mlir::raw_indented_ostream &f, size_t numParams, size_t arrayLen);
  /// real_t, its arithmetic type and the cuBLAS entries for it, switched
  /// by -DNNCC_PRECISION_F64 / _BF16.
  static void emitPrecision(mlir::raw_indented_ostream &os);
  /// The banner and the #includes of <model>.cu.
  void emitIncludes(mlir::raw_indented_ostream &os);
  /// NNCC_CUDA_CHECK, NNCC_CUBLAS_CHECK and NNCC_CUBLASLT_CHECK.
  static void emitCheckMacros(mlir::raw_indented_ostream &os);
  /// NNCCCudaState: CudaState.cuh's base and the fused GEMMs' plans.
  void emitState(mlir::raw_indented_ostream &os);
  /// nncc_<model>_cuda_teardown: frees what the state holds.
  void emitTeardown(mlir::raw_indented_ostream &os);
  /// nncc_<model>_cuda_setup: the state, its cuBLAS(Lt) handles and index-check flag.
  void emitSetup(mlir::raw_indented_ostream &os);
};

} // namespace nncc::target

#endif // NNCC_LIB_TARGET_CUDA_CUDAEMITTER_H
