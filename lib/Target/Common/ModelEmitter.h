//===- ModelEmitter.h - what the C++ and CUDA emitters share ----*- C++ -*-===//
//
// Analysis of an `nnk` module (model name, dims, inputs, outputs,
// parameters, the buffer plan) and the printing helpers both emitters use:
// C++ names of buffers, size expressions from the bound dims, the signature
// tables and the elementwise body printer.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_LIB_TARGET_COMMON_MODELEMITTER_H
#define NNCC_LIB_TARGET_COMMON_MODELEMITTER_H

#include "dialects/NNK/IR/NNKOps.h"
#include "dialects/NN/IR/NNOps.h"
#include "Escape.h"
#include "SizeExpr.h"
#include "nncc/Target/Compile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/IndentedOstream.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace nncc::target {

struct TensorSig {
  std::string name;
  nnk::BufferType type;
};

struct ParamSig {
  std::string name;
  nn::TensorType type;
  nn::InitAttr init;
  bool decay = true;   // #nn.param_group: weight decay applies
  int64_t lrDepth = 0; // lr multiplier = layer_decay^lrDepth
};

/// One arena slot: an nnk.alloc, or a per-launch workspace (sized by an
/// expression of the bound dims, which the generated code and the memory
/// plan both evaluate).
struct PlannedBuffer {
  std::string name;
  nnk::BufferType type;               // null for workspaces
  std::optional<Size> workspaceBytes; // for workspaces
  int first = 0, last = 0;
  mlir::Operation *owner = nullptr; // the nnk.alloc, or the launch of a workspace
};

class ModelEmitter {
public:
  explicit ModelEmitter(mlir::ModuleOp module) : module(module) {}
  virtual ~ModelEmitter() = default;

  /// Collects the model's signature and buffer plan; errors are located.
  mlir::LogicalResult analyze();

  std::string modelName;                 // C identifier
  std::vector<std::string> dims;         // symbolic dims, in order
  std::vector<DimRange> dimRanges;       // per dims entry (analyzeDimRanges)
  std::vector<TensorSig> inputs, outputs;
  std::vector<ParamSig> params;
  std::vector<PlannedBuffer> buffers;
  mlir::func::FuncOp forward;
  /// @forward_backward (training: forward_train then backward), if present.
  mlir::func::FuncOp train;
  /// Its nnk.boundary (null: everything is forward_train).
  mlir::Operation *boundary = nullptr;
  /// Its arguments that are the model's outputs (not gradients): the copies
  /// into them after the boundary still belong to forward_train.
  llvm::DenseSet<mlir::Value> trainOutputs;
  std::vector<TensorSig> grads; // "grad.<param>" outputs of train
  // VJP builds (nncc-autodiff vjp): the "cotangent.<output>" arguments of
  // train after its inputs, and its "grad.<input>" outputs after grads.
  std::vector<TensorSig> cotangents, inputGrads;
  /// The top-level ops of forward_train (before the boundary, plus the
  /// copies into the model's outputs) and of backward (the rest).
  std::pair<std::vector<mlir::Operation *>, std::vector<mlir::Operation *>> trainHalves() const;
  /// Launch indices: forward [0, trainBegin), forward_train [trainBegin,
  /// boundaryIndex), backward (boundaryIndex, numLaunches).
  int trainBegin = 0, boundaryIndex = 0, numLaunches = 0;
  /// The top-level op of each launch index.
  std::vector<mlir::Operation *> launchOps;
  /// Serving without targets (analyzeInference): per `inputs` entry, whether
  /// @forward needs it for an output other than the loss; the top-level ops
  /// of @forward that only the loss needs (run only when every input is
  /// set); the index of the loss in `outputs` (-1: none).
  std::vector<bool> inferenceInputs;
  llvm::DenseSet<mlir::Operation *> lossOnlyOps;
  int lossOutput = -1;

protected:
  mlir::ModuleOp module;
  /// Printing only to plan the buffers (withCpuBufferPlan): the text is
  /// discarded, so launch comments are left empty.
  bool planOnly = false;
  /// Planning only the training step: @forward is neither emitted nor
  /// required (the search's clones drop it; the signature tables, which
  /// need it, are not printed).
  bool trainingOnly = false;
  llvm::DenseMap<mlir::Value, std::string> names;  // C++ variable of a buffer
  llvm::DenseMap<mlir::Operation *, int> launchIndex;
  llvm::StringMap<int> paramIndex;

  //===--- helpers ---------------------------------------------------------===//
  /// The size of `d`, printed "d_B" / "256LL"; fails (located at `op`) on
  /// `?`.
  mlir::FailureOr<Size> dimSize(mlir::Operation *op, nncc::Dim d);
  /// Elements of dims [from, to) of `t` (to = -1: the rank), printed
  /// "(4LL * d_B * d_T)" (the static dims folded) or "(int64_t)N".
  mlir::FailureOr<Size> numelSize(mlir::Operation *op, nnk::BufferType t, int64_t from = 0,
                                  int64_t to = -1);
  /// Their C++ text.
  mlir::FailureOr<std::string> dimExpr(mlir::Operation *op, nncc::Dim d);
  mlir::FailureOr<std::string> numel(mlir::Operation *op, nnk::BufferType t,
                                     int64_t from = 0, int64_t to = -1);
  /// C++ element type: real_t, int32_t, int64_t, uint8_t.
  mlir::FailureOr<std::string> cType(mlir::Operation *op, mlir::Type elt);
  /// NNCC_REAL_DTYPE, NNCC_DTYPE_I32, ...
  mlir::FailureOr<std::string> dtypeEnum(mlir::Location loc, mlir::Type elt);
  std::string name(mlir::Value v) const { return names.lookup(v); }
  /// Name of v, or "NULL" for an absent optional operand.
  std::string nameOrNull(mlir::Value v) const { return v ? name(v) : "NULL"; }
  /// Index of a new workspace buffer live only at `op`.
  int addWorkspace(mlir::Operation *op, const Size &bytes);

  /// The signature tables, init table, buffer plan and the ABI object.
  mlir::LogicalResult emitTables(mlir::raw_indented_ostream &os, bool withCuda);
  /// kDimNames, kDimRanges and the tensor tables of inputs, outputs,
  /// gradients, cotangents and input gradients; kInferenceInputs.
  mlir::LogicalResult emitSignatureTables(mlir::raw_indented_ostream &os);
  /// kParams, their inits (kInits) and optimizer groups (kParamGroups).
  mlir::LogicalResult emitParamTables(mlir::raw_indented_ostream &os);
  /// kBuffers and workspace_bytes; returns whether any buffer is a workspace.
  mlir::FailureOr<bool> emitBufferPlan(mlir::raw_indented_ostream &os);
  /// kTrainConfig: the model's #nn.train (defaults filled; docs/training.md).
  void emitTrainConfig(mlir::raw_indented_ostream &os);
  /// The launch functions' declarations and the nncc_model_abi object.
  void emitAbi(mlir::raw_indented_ostream &os, bool withCuda);
  /// kDef (nncc_ms_model_def), create and the exported get_abi functions.
  void emitModelDef(mlir::raw_indented_ostream &os, bool withCuda, bool anyWorkspace);
  /// Declarations at the top of a forward function: dims, inputs, outputs,
  /// parameters and planned buffers as typed pointers.
  mlir::LogicalResult emitForwardPrologue(mlir::raw_indented_ostream &os,
                                          mlir::func::FuncOp fn = nullptr);
  mlir::LogicalResult analyzeFunction(mlir::func::FuncOp fn, int &index, int &weights);
  /// Fills inferenceInputs / lossOnlyOps / lossOutput: the ops of @forward
  /// that write, transitively, an output other than the loss are needed for
  /// inference, and so is every input they read.
  void analyzeInference();
  /// Narrows dimRanges by the windows of nnk.slice / nnk.slice_grad and
  /// the grids of nnk.axial_position.
  void analyzeDimRanges();
  /// The C type of float scalars in generated code: real_t's arithmetic
  /// type (Bf16.h's acc_t: float for a bf16 library, real_t otherwise).
  static inline const std::string kRealScalar = "acc_t<real_t>";
  /// The C type of an elementwise scalar of type `t`: kRealScalar for a
  /// float, bool (i1), int32_t or int64_t.
  static std::string elementwiseScalarType(mlir::Type t);
  /// An arith.constant of an elementwise body as (C type, C expression).
  static mlir::FailureOr<std::pair<std::string, std::string>>
  elementwiseConstant(mlir::arith::ConstantOp c);
  /// The body of nnk.elementwise at flat index `idx` (float inputs already
  /// loaded into a0, a1, ... as kRealScalar); writes `<out>[idx] = ...`,
  /// a float result rounded to real_t by store_acc.
  mlir::LogicalResult emitElementwiseBody(mlir::raw_indented_ostream &os,
                                          nnk::ElementwiseOp op,
                                          const std::string &out,
                                          const std::string &idx);
  /// Index expression of input `in` broadcast to `outType` at flat index i.
  /// With `indexType` (a C type narrower than the sizes' int64_t), every
  /// size in it is cast to that type, so the divisions are done in it.
  mlir::FailureOr<std::string> broadcastIndex(mlir::Operation *op, nnk::BufferType in,
                                              nnk::BufferType outType,
                                              const std::string &i,
                                              const std::string &indexType = "");
  /// The shared prelude of elementwise math (nncc_tanh, ...), `qual` is the
  /// function qualifier (static inline / __device__ __forceinline__).
  /// `hostPolynomials`: float exp/tanh/erf are nncc::kernels' vectorisable
  /// polynomials (Common.h; host code), else the math library's.
  static void emitMathPrelude(mlir::raw_indented_ostream &os, llvm::StringRef qual,
                              bool hostPolynomials);
  static std::string locString(mlir::Location loc);
  std::string launchComment(mlir::Operation *op);
};

/// Runs the CPU emitter's launch sequences over `module` (output
/// discarded; no tables, preludes or comments) and hands `use` the analysis
/// with every buffer of the plan, workspaces included; `trainingOnly`: not
/// the workspaces of @forward (the inference function's launches).
mlir::LogicalResult
withCpuBufferPlan(mlir::ModuleOp module,
                  llvm::function_ref<mlir::LogicalResult(const ModelEmitter &)> use,
                  bool trainingOnly = false);

std::string fmtDouble(double v);

} // namespace nncc::target

#endif
