//===- CppEmitter.h - the C++ (CPU) emitter -----------------------*- C++ -*-===//
//
// CppEmitter: LaunchEmitter's CPU target. CppEmitter.cpp prints the
// source (prologue, tables, the launch sequence); CppOdeLoops.cpp the ODE
// ops' region lambdas and driver calls.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_LIB_TARGET_CPP_CPPEMITTER_H
#define NNCC_LIB_TARGET_CPP_CPPEMITTER_H

#include "../Common/LaunchEmitter.h"

namespace nncc::target {

class CppEmitter : public LaunchEmitter {
public:
  explicit CppEmitter(mlir::ModuleOp module, Precision precision = Precision::F32)
      : LaunchEmitter(module, TargetKind::CPU, precision) {}

  /// Only the buffer plan: the launch sequences run (they add the
  /// workspaces) without their comments, and nothing else is printed;
  /// `onlyTraining`: not @forward's sequence either (its workspaces are
  /// missing from the plan), and the module need not have @forward.
  void planBuffersOnly(bool onlyTraining) {
    planOnly = true;
    trainingOnly = onlyTraining;
  }
  mlir::LogicalResult emit(mlir::raw_indented_ostream &os, bool withCuda);

  //===--- target hooks -----------------------------------------------------===//
  std::string checked(const std::string &callExpr) override {
    return "NNCC_GEN_CHECK(" + callExpr + ", " + cString(launchComment(op())) + ");\n";
  }
  /// An arena slot live only during the current launch.
  std::string workspace(const Size &bytes) override {
    return "nncc_ms_buffer_ptr(m, " + std::to_string(addWorkspace(op(), bytes)) + ")";
  }
  mlir::LogicalResult copyNd(const StridedCopy &c) override {
    auto ct = cType(c.elementType);
    if (failed(ct))
      return mlir::failure();
    out() << "{\n  const int64_t shape[] = {" << llvm::join(c.shape, ", ") << "}, ds[] = {"
          << llvm::join(c.dstStrides, ", ") << "}, ss[] = {" << llvm::join(c.srcStrides, ", ")
          << "};\n  nncc_ms_copy_nd(sizeof(" << *ct << "), " << c.shape.size() << ", shape, "
          << c.dst << ", ds, " << c.src << ", ss);\n}\n";
    return mlir::success();
  }
  void copyOne(const std::string &dst, const std::string &src) override {
    out() << "*(" << dst << ") = *(" << src << ");\n";
  }
  mlir::LogicalResult odeSolveLoop(nnk::ODESolveOp o) override { return emitODESolve(out(), o); }
  mlir::LogicalResult odeRNNLoop(nnk::ODERNNOp o) override { return emitODERNN(out(), o); }
  mlir::LogicalResult odeSolveGradLoop(nnk::ODESolveGradOp o) override {
    return emitODESolveGrad(out(), o);
  }
  mlir::LogicalResult odeRNNGradLoop(nnk::ODERNNGradOp o) override {
    return emitODERNNGrad(out(), o);
  }

private:
  bool needsODE = false;
  int regionCounter = 0; // unique names of region lambdas
  /// A region's body as a lambda `name(args...) -> int` (0 or a status);
  /// `prologue` binds the block arguments (C++ statements naming them).
  mlir::LogicalResult emitRegionLambda(mlir::raw_indented_ostream &os, mlir::Region &region,
                                       const std::string &lambda, const std::string &params,
                                       const std::string &prologue);
  mlir::LogicalResult emitODESolve(mlir::raw_indented_ostream &os, nnk::ODESolveOp op);
  mlir::LogicalResult emitODERNN(mlir::raw_indented_ostream &os, nnk::ODERNNOp op);
  mlir::LogicalResult emitODESolveGrad(mlir::raw_indented_ostream &os, nnk::ODESolveGradOp op);
  mlir::LogicalResult emitODERNNGrad(mlir::raw_indented_ostream &os, nnk::ODERNNGradOp op);
  /// The ODE-RNN backward's region lambdas: dynamics, dynvjp and cellvjp.
  mlir::LogicalResult emitODERNNGradLambdas(mlir::raw_indented_ostream &os, nnk::ODERNNGradOp o,
                                            const std::string &p, const std::string &dDests,
                                            const std::string &cDests);
  /// The status check after a solver call that returns rc_ (negative: the
  /// solver's own error, described by `describe`).
  std::string solverFailure(mlir::Operation *op, const char *describe) {
    return "if (rc_ != 0) {\n"
           "  if (rc_ < 0)\n"
           "    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, \"%s: %s\", " +
           cString(launchComment(op)) + ", " + describe +
           "(rc_));\n"
           "  return (nncc_status)rc_;\n"
           "}\n";
  }
  /// The bytes of ode_grad's scratch (nncc_ode_grad_workspace_size) for
  /// `n` state and `P` parameter elements: an evaluable expression.
  static Size odeGradScratch(int method, int64_t steps, int64_t maxSteps, bool adjoint,
                             const Size &n, const Size &P) {
    return Size::call(size_fn::odeGradWorkspace,
                      {Size::constant(method), Size::constant(steps), Size::constant(maxSteps),
                       Size::constant(adjoint ? 1 : 0), n, P, Size::realBytes()});
  }
  std::string odeFailure(mlir::Operation *op) {
    return solverFailure(op, "nncc::kernels::ode_error_string");
  }
};

} // namespace nncc::target

#endif // NNCC_LIB_TARGET_CPP_CPPEMITTER_H
