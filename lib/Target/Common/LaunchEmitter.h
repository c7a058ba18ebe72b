//===- LaunchEmitter.h - the emitter core both targets share ----*- C++ -*-===//
//
// The core that walks an nnk function and prints one launch per compute op.
// What an op launches comes from the op itself (KernelLaunchOpInterface,
// implemented per op family in lib/Target/Launch/); what differs between the
// targets is behind the few virtual hooks below, in the manner of Triton's
// TargetInfoBase: how a status is checked, where workspace comes from, how a
// strided copy runs, and the ODE host loops. CppEmitter and CudaEmitter
// derive from it and add only their prologues (tables, state, headers).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_LIB_TARGET_COMMON_LAUNCHEMITTER_H
#define NNCC_LIB_TARGET_COMMON_LAUNCHEMITTER_H

#include "ModelEmitter.h"

#include "nncc/Interfaces/KernelLaunchOpInterface.h"
#include "nncc/Target/Precision.h"
#include "nncc/Target/TargetKind.h"

#include "mlir/IR/DialectRegistry.h"

#include <functional>
#include <memory>

namespace nncc::target {

/// A kernel call as an op describes it: the callee (a C ABI function of
/// libnncc_kernels, or a launcher of the .cuh kernels) and its arguments in
/// order, each a C++ expression. The emitter adds the target's status check.
struct KernelCall {
  std::string callee;
  llvm::SmallVector<std::string> args;
};

/// One strided copy: `shape` elements from `src` (with `srcStrides`) to
/// `dst` (with `dstStrides`), strides in elements; all C++ expressions.
struct StridedCopy {
  mlir::Type elementType;
  llvm::SmallVector<std::string> shape, dstStrides, srcStrides;
  std::string dst, src;
};

class LaunchEmitter : public ModelEmitter {
public:
  /// Registers the launch descriptions of the nnk ops in the module's
  /// context (a no-op when a tool registered them already).
  LaunchEmitter(mlir::ModuleOp module, TargetKind target, Precision precision = Precision::F32);

  TargetKind getTarget() const { return target; }
  bool isBf16() const { return precision == Precision::BF16; }
  bool isCuda() const { return target == TargetKind::CUDA; }
  llvm::StringRef targetName() const { return isCuda() ? "CUDA" : "CPU"; }

  /// Analyses the module, then prints every launch of its functions with
  /// no prologue (nncc-translate; see emitLaunches in Emitters.h).
  mlir::LogicalResult emitLaunchListing(llvm::raw_ostream &os);

  /// Prints the launch of `op` (nothing for alloc / weight / boundary).
  /// Fails, located at the op, when it has no launch on this target.
  mlir::LogicalResult emitLaunch(mlir::raw_indented_ostream &os, mlir::Operation *op);

  /// Top-level launches per chunk of a generated function (see
  /// emitLaunchSequence).
  static constexpr size_t kLaunchesPerChunk = 64;
  /// Prints the top-level launches `ops` of a generated function returning
  /// nncc_status, each after beginTopLevelLaunch() and followed by
  /// `afterEach()`. Up to kLaunchesPerChunk in place; more in chunks of that
  /// many, each the body of a noinline lambda whose failure the function
  /// returns: host compilers take superlinear time and memory on one
  /// function of thousands of launches (a training step under a small
  /// memory budget), linear time on many bounded ones.
  mlir::LogicalResult emitLaunchSequence(mlir::raw_indented_ostream &os,
                                         llvm::ArrayRef<mlir::Operation *> ops,
                                         llvm::function_ref<void()> afterEach = {});

  //===--- what an op's launch description uses ---------------------------===//
  /// The stream of the launch being printed, and its op.
  mlir::raw_indented_ostream &out() { return *current.os; }
  mlir::Operation *op() { return current.op; }

  static nnk::BufferType bufferType(mlir::Value v) {
    return llvm::cast<nnk::BufferType>(v.getType());
  }
  /// Size of dim `i` of `v` (negative: from the end), as a C++ expression.
  mlir::FailureOr<std::string> dim(mlir::Value v, int64_t i);
  /// Elements of dims [from, to) of `v` (to = -1: the rank).
  mlir::FailureOr<std::string> numel(mlir::Value v, int64_t from = 0, int64_t to = -1);
  /// dim() and numel() as Sizes (workspace sizes are built from these).
  mlir::FailureOr<Size> dimSize(mlir::Value v, int64_t i);
  mlir::FailureOr<Size> numelSize(mlir::Value v, int64_t from = 0, int64_t to = -1);
  using ModelEmitter::dimSize;
  using ModelEmitter::numelSize;
  using ModelEmitter::numel;
  /// Every dim of `v` (empty for a scalar).
  mlir::FailureOr<llvm::SmallVector<std::string>> shape(mlir::Value v);
  mlir::FailureOr<std::string> cType(mlir::Type elt) { return ModelEmitter::cType(op(), elt); }
  using ModelEmitter::broadcastIndex;
  using ModelEmitter::emitElementwiseBody;
  using ModelEmitter::kRealScalar;
  using ModelEmitter::launchComment;
  using ModelEmitter::name;
  using ModelEmitter::nameOrNull;
  /// Name of v, or a NULL of `pointerType` (CUDA template arguments need
  /// the type; the host C++ does not mind).
  std::string nameOr(mlir::Value v, llvm::StringRef pointerType) const {
    return v ? name(v) : "(" + pointerType.str() + ")NULL";
  }
  /// "1" / "0".
  static std::string flag(bool b) { return b ? "1" : "0"; }
  /// The names of `values`, comma separated.
  std::string commaNames(mlir::ValueRange values) const;
  /// A fresh name for a generated host local.
  std::string local(const std::string &base) { return base + std::to_string(numLocals++); }

  /// Prints `c` with the target's status check.
  void call(const KernelCall &c);
  /// The checked statement of a call expression.
  virtual std::string checked(const std::string &callExpr) = 0;
  /// Workspace of `bytes` for the current launch; returns a pointer
  /// expression (an arena slot on the CPU, kernel scratch on CUDA).
  virtual std::string workspace(const Size &bytes) = 0;
  /// A new top-level launch starts: workspace handed out so far is free.
  virtual void beginTopLevelLaunch() {}
  /// The per-launch timer's statements (NNCC_PROFILE, docs/runtime.md)
  /// before and after a launch; `t0` names the value the first defines.
  /// Default: host time (nncc_ms_prof_begin / _end).
  virtual std::string profileBegin(const std::string &t0);
  virtual std::string profileEnd(const std::string &t0, const std::string &launch);
  /// Prints a strided copy (at most 16 dims on CUDA).
  virtual mlir::LogicalResult copyNd(const StridedCopy &c) = 0;
  /// Copies one element (`*dst = *src`).
  virtual void copyOne(const std::string &dst, const std::string &src) = 0;
  /// The target's ODE ops (ODELaunch.cpp; Cpp/CppOdeLoops.cpp,
  /// Cuda/CudaOdeLoops.cpp): the regions' launches as lambdas and one call
  /// of the shared driver that runs them.
  virtual mlir::LogicalResult odeSolveLoop(nnk::ODESolveOp op) = 0;
  virtual mlir::LogicalResult odeRNNLoop(nnk::ODERNNOp op) = 0;
  virtual mlir::LogicalResult odeSolveGradLoop(nnk::ODESolveGradOp op) = 0;
  virtual mlir::LogicalResult odeRNNGradLoop(nnk::ODERNNGradOp op) = 0;
  /// CUDA: records a generated __global__ function; returns its name.
  std::string addGeneratedKernel(const std::string &base,
                                 const std::function<std::string(const std::string &)> &text);
  /// CUDA: the code of the first failing device-side index check.
  int indexCheckCode();
  /// CUDA: a new slot of the state's cuBLASLt plans (one per fused
  /// nnk.gemm site); returns its index.
  int addLtPlan() { return numLtPlans++; }
  //===--- what the ODE gradient loops of both targets share --------------===//
  /// Checks the regions' signatures of an ODE gradient op and names the
  /// arguments every target binds, `prefix` + t, h, dh (dynamics), vt, vh,
  /// va (a dynamics VJP) and cx, ch, ca (the ODE-RNN's cell VJP).
  mlir::LogicalResult nameOdeGradRegions(nnk::ODESolveGradOp o, const std::string &prefix);
  mlir::LogicalResult nameOdeGradRegions(nnk::ODERNNGradOp o, const std::string &prefix);
  /// Names the destination arguments of a VJP region (the arguments from
  /// `nIn` on: the first `direct.size()` are the given lambda parameters,
  /// the parameter gradients point into one concatenated vector `theta` at
  /// running offsets). Returns the C++ statements declaring them and sets
  /// `total` to the concatenated size.
  mlir::FailureOr<std::string> odeVjpDests(mlir::Block &body, unsigned nIn,
                                           llvm::ArrayRef<std::string> direct,
                                           const std::string &theta, std::optional<Size> &total);
  /// One parameter gradient of an ODE gradient op: its buffer and the
  /// offset and size of its slice of the concatenated vector.
  struct OdeParamSlice {
    std::string dest, offset, size;
  };
  /// The slices of `dparams` in order (offsets from 0).
  mlir::FailureOr<llvm::SmallVector<OdeParamSlice>> odeParamSlices(mlir::ValueRange dparams);
  /// The status check after an ODE gradient loop that returned rc_: < 0 is
  /// the solver's error (GradKernels.h's ode_grad_error_string, naming
  /// `maxSteps` when the adaptive solve through the steps exceeded it),
  /// > 0 a region's status. `deviceBranch`: statements run first (CUDA:
  /// the device driver's CUDA error).
  std::string odeGradFailure(int64_t maxSteps, const std::string &deviceBranch = "");
  /// The arguments both targets pass to the shared ODE-RNN drivers after
  /// their own leading ones (ode_rnn_with in ODESolver.h, ode_rnn_grad_with
  /// in GradKernels.h): the op's settings and buffers, then the generated
  /// names of the arrays and region lambdas. `K`: the work buffer's slot
  /// of h; `tcur`: the rows' time buffer, or a null pointer.
  std::string odeRnnArgs(nnk::ODERNNOp o, int64_t K, llvm::StringRef tcur);
  std::string odeRnnGradArgs(nnk::ODERNNGradOp o);

protected:
  TargetKind target;
  Precision precision;
  /// Wrap each top-level launch in the NNCC_PROFILE timer (CPU libraries).
  bool profileLaunches = false;
  int numLocals = 0;
  int numKernels = 0;
  int numLtPlans = 0;
  std::string generatedKernels;                       // CUDA __global__ functions
  std::vector<std::pair<int, std::string>> indexChecks; // CUDA: code, launch

  /// Statements every generated translation unit shares: the bucket count
  /// of LSH attention without given rotations (HuggingFace's rule).
  static void emitSharedHelpers(mlir::raw_indented_ostream &os, llvm::StringRef qual);

private:
  struct Current {
    mlir::raw_indented_ostream *os = nullptr;
    mlir::Operation *op = nullptr;
  } current;
};

/// Runs `emit` into a buffer and copies it to `os` only when it succeeds
/// (a failed emission writes nothing).
mlir::LogicalResult
printIfEmitted(llvm::raw_ostream &os,
               llvm::function_ref<mlir::LogicalResult(mlir::raw_indented_ostream &)> emit);

/// The two targets' emitters (CppEmitter.cpp, CudaEmitter.cpp).
std::unique_ptr<LaunchEmitter> createCppLaunchEmitter(mlir::ModuleOp module);
std::unique_ptr<LaunchEmitter> createCudaLaunchEmitter(mlir::ModuleOp module);

/// Attaches KernelLaunchOpInterface to every nnk compute op.
void registerKernelLaunchInterfaces(mlir::DialectRegistry &registry);

// Per op family (lib/Target/Launch/*.cpp).
void attachTensorLaunches(mlir::MLIRContext &ctx);
void attachTokenLaunches(mlir::MLIRContext &ctx);
void attachLinearLaunches(mlir::MLIRContext &ctx);
void attachNormLaunches(mlir::MLIRContext &ctx);
void attachLossLaunches(mlir::MLIRContext &ctx);
void attachAttentionLaunches(mlir::MLIRContext &ctx);
void attachRecurrentLaunches(mlir::MLIRContext &ctx);
void attachElementwiseLaunches(mlir::MLIRContext &ctx);
void attachODELaunches(mlir::MLIRContext &ctx);

/// The key and counter offset of a random op drawing `draws` values from
/// batch-major rows (docs/training.md, "Random streams"): the op's seed
/// mixed with the run seed (nncc_ms_rng_key), and the step's offset plus the
/// micro-batch's first sample times the draws per sample
/// (nncc_ms_rng_offset). Every training step draws anew, the backward the
/// same, on both targets alike (the same masks on the CPU and on CUDA).
llvm::SmallVector<std::string> seedAndOffset(LaunchEmitter &e, int64_t seed,
                                             const std::string &draws);
/// A mask's drop probability `p` followed by seedAndOffset.
llvm::SmallVector<std::string> maskStream(LaunchEmitter &e, double p, int64_t seed,
                                          const std::string &draws);

/// Whether an op's launch has a bf16 kernel (bf16 storage, fp32 math) on
/// CUDA; without one, a bf16 library cannot contain the op.
enum class Bf16Kernel { No, Yes };

/// The CUDA kernel headers (nncc/Kernels/CUDA/) a launch's code needs
/// beyond the ones every generated .cu includes (Elementwise, Tensor, Blas;
/// Optim with a training step): bits of the launch interface's
/// getCudaHeaders, so that a model's .cu parses the kernels it uses only.
/// One bit per family header, forward and backward apart.
enum CudaHeader : unsigned {
  CudaHeaderNone = 0,
  CudaAttention = 1u << 0,
  CudaLshAttention = 1u << 1,
  CudaAttentionBackward = 1u << 2,
  CudaRecurrent = 1u << 3,
  CudaRecurrentBackward = 1u << 4,
  CudaToken = 1u << 5,
  CudaLossHead = 1u << 6,
  CudaODE = 1u << 7,
  CudaNorm = 1u << 8,
  CudaNormBackward = 1u << 9,
  CudaLoss = 1u << 10,
  CudaLossBackward = 1u << 11,
  CudaTokenBackward = 1u << 12,
  CudaTensorBackward = 1u << 13,
};
/// The include path of each CudaHeader bit, in include order.
llvm::ArrayRef<std::pair<CudaHeader, const char *>> cudaHeaderPaths();

/// Shorthand for the per-family files: an external model whose launch is
/// the static function `Fn(LaunchEmitter &, OpT)`.
template <typename OpT, mlir::LogicalResult (*Fn)(LaunchEmitter &, OpT), Bf16Kernel Bf16,
          unsigned Headers>
struct LaunchModel
    : public KernelLaunchOpInterface::ExternalModel<LaunchModel<OpT, Fn, Bf16, Headers>, OpT> {
  mlir::LogicalResult emitLaunch(mlir::Operation *op, LaunchEmitter &e) const {
    return Fn(e, llvm::cast<OpT>(op));
  }
  bool hasBf16Kernel(mlir::Operation *) const { return Bf16 == Bf16Kernel::Yes; }
  unsigned getCudaHeaders(mlir::Operation *) const { return Headers; }
};
template <typename OpT, mlir::LogicalResult (*Fn)(LaunchEmitter &, OpT),
          Bf16Kernel Bf16 = Bf16Kernel::No, unsigned Headers = CudaHeaderNone>
void attachLaunch(mlir::MLIRContext &ctx) {
  OpT::template attachInterface<LaunchModel<OpT, Fn, Bf16, Headers>>(ctx);
}

} // namespace nncc::target

#endif // NNCC_LIB_TARGET_COMMON_LAUNCHEMITTER_H
