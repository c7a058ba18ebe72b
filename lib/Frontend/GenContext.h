//===- GenContext.h - Services shared by MLIRGen and the layer library ----===//
//
// Internal to lib/Frontend. MLIRGen.cpp walks forward bodies; Layers.cpp
// holds, per library layer and per forward function, how it becomes nn ops.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_LIB_FRONTEND_GENCONTEXT_H
#define NNCC_LIB_FRONTEND_GENCONTEXT_H

#include "nncc/Frontend/Library.h"
#include "nncc/Frontend/Sema.h"

#include "dialects/NN/IR/NNOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSet.h"

#include <optional>
#include <string>
#include <vector>

namespace nncc {
namespace frontend {

/// A value in a forward body.
struct FVal {
  enum Kind { None, Tensor, Tuple, Const, Layer } kind = None;
  mlir::Value value;        // Tensor
  std::vector<FVal> elems;  // Tuple
  CValue c;                 // Const (compile-time)
  LayerInstance *layer = nullptr; // Layer
  SrcLoc loc;

  static FVal tensor(mlir::Value v, SrcLoc l) {
    FVal f;
    f.kind = Tensor;
    f.value = v;
    f.loc = l;
    return f;
  }
  static FVal tuple(std::vector<FVal> e, SrcLoc l) {
    FVal f;
    f.kind = Tuple;
    f.elems = std::move(e);
    f.loc = l;
    return f;
  }
  static FVal constant(CValue v, SrcLoc l) {
    FVal f;
    f.kind = Const;
    f.c = std::move(v);
    f.loc = l;
    return f;
  }
  bool isNone() const { return kind == None; }
  std::string describe() const;
};

class Gen;
/// Lowers one application of a library layer; `args` has one entry per
/// LayerSpec::applyParams (FVal::None when not given; tensors otherwise).
using LayerLowerFn = std::optional<FVal> (*)(Gen &, const LayerInstance &,
                                             llvm::ArrayRef<FVal> args,
                                             SrcLoc loc);
/// Lowers one call of a forward function; `args` has one entry per
/// FuncSpec::params (tensors, checked compile-time constants with defaults
/// filled, or layers), `variadic` the positional tensors of concat.
using FuncLowerFn = std::optional<FVal> (*)(Gen &, llvm::ArrayRef<FVal> args,
                                            llvm::ArrayRef<FVal> variadic,
                                            SrcLoc loc);
LayerLowerFn lookupLayerLowering(llvm::StringRef name);
FuncLowerFn lookupFuncLowering(llvm::StringRef name);

/// MLIR generation state and the helpers the layer library uses.
class Gen {
public:
  Gen(mlir::MLIRContext &ctx, DiagEngine &diag, const ModelInfo &model)
      : ctx(ctx), builder(&ctx), diag(diag), model(model) {}

  mlir::MLIRContext &ctx;
  mlir::OpBuilder builder;
  DiagEngine &diag;
  const ModelInfo &model;
  mlir::ModuleOp module;
  mlir::Operation *paramAnchor = nullptr; // nn.parameter go before this
  /// The forward function (its arguments are the model's inputs).
  mlir::FunctionOpInterface forward;

  mlir::Location loc(SrcLoc l) const { return diag.loc(l); }

  /// What a parameter is to its layer; decides its optimizer group
  /// (#nn.param_group): biases and norm parameters get no weight decay,
  /// embedding tables the embedding lr group (docs/training.md).
  enum class ParamRole { Weight, Bias, Norm, Embedding };

  /// The layer stack of layer-wise lr decay: the model's first `repeat`
  /// declaration (null if none), and the index of its member being lowered
  /// (-1 outside it). Parameters created meanwhile are in that layer.
  const LayerInstance *lrStack = nullptr;
  int64_t lrStackLayer = -1;

  /// `nn.get_parameter @inst.path.name`, declaring the `nn.parameter` on first
  /// use (f32, with the given shape, initializer and the group of `role`).
  mlir::Value param(const LayerInstance &inst, llvm::StringRef name,
                    llvm::ArrayRef<int64_t> shape, mlir::Attribute init,
                    SrcLoc l, ParamRole role = ParamRole::Weight);

  /// Creates an `OpTy` from operands and attributes (generically, so that a
  /// malformed one is a located error, not an assertion). With `infer`, the
  /// result types are then inferred by the dialect (null is returned after
  /// its located error).
  template <typename OpTy>
  mlir::Operation *create(SrcLoc l, mlir::ValueRange operands,
                          llvm::ArrayRef<mlir::NamedAttribute> attrs, unsigned numResults,
                          llvm::ArrayRef<int32_t> segments = {}, unsigned numRegions = 0,
                          bool infer = true) {
    return createNamed(OpTy::getOperationName(), l, operands, attrs, numResults, segments,
                       numRegions, infer);
  }
  bool infer(mlir::Operation *op);
  /// Marks the model inputs that reach a role operand of `op` (embedding
  /// indices, loss targets, recurrent lengths, ode_rnn times, attention
  /// key-padding mask) with `nn.role` (#nn.role<...>); the first role wins.
  void recordInputRoles(mlir::Operation *op);
  /// Single-result convenience; null after an error.
  template <typename OpTy>
  mlir::Value op1(SrcLoc l, mlir::ValueRange operands,
                  llvm::ArrayRef<mlir::NamedAttribute> attrs = {},
                  llvm::ArrayRef<int32_t> segments = {}) {
    mlir::Operation *op = create<OpTy>(l, operands, attrs, 1, segments);
    return op ? op->getResult(0) : mlir::Value();
  }

  /// Applies a layer instance to run-time arguments (used for nested layers:
  /// repeat members, residual/reversible bodies, ODE dynamics, blocks).
  std::optional<FVal>
  apply(LayerInstance &inst, std::vector<FVal> positional,
        std::vector<std::pair<std::string, FVal>> keywords, SrcLoc l);
  /// Number of run-time inputs a layer's application takes (blocks: forward
  /// parameters; library layers: required tensors).
  size_t arity(const LayerInstance &inst) const;

  /// A tensor for `v`: tensors as is; numbers become `nn.constant` scalars
  /// of `like`'s element type (f32 when `like` is null). Reports other kinds.
  mlir::Value asTensor(const FVal &v, mlir::Type like, SrcLoc l,
                       llvm::StringRef what);

  nncc::nn::TensorType tensorType(mlir::Value v) const {
    return llvm::dyn_cast<nncc::nn::TensorType>(v.getType());
  }
  nncc::nn::TensorType scalarType(mlir::Type elt) const {
    return nncc::nn::TensorType::get(&ctx, {}, elt);
  }

  mlir::NamedAttribute attrI64(llvm::StringRef n, int64_t v) {
    return builder.getNamedAttr(n, builder.getI64IntegerAttr(v));
  }
  mlir::NamedAttribute attrF64(llvm::StringRef n, double v) {
    return builder.getNamedAttr(n, builder.getF64FloatAttr(v));
  }
  mlir::NamedAttribute attrBool(llvm::StringRef n, bool v) {
    return builder.getNamedAttr(n, builder.getBoolAttr(v));
  }
  mlir::NamedAttribute attrI64s(llvm::StringRef n,
                                llvm::ArrayRef<int64_t> v) {
    return builder.getNamedAttr(n, builder.getDenseI64ArrayAttr(v));
  }
  mlir::NamedAttribute attr(llvm::StringRef n, mlir::Attribute a) {
    return builder.getNamedAttr(n, a);
  }
  int64_t nextSeed() { return seedCounter++; }

  /// Implemented in MLIRGen.cpp: runs a block's forward body.
  std::optional<FVal> applyBlock(LayerInstance &inst,
                                 std::vector<FVal> positional,
                                 std::vector<std::pair<std::string, FVal>> kw,
                                 SrcLoc l);

  /// Bound on the size of the generated IR, so that no input can make the
  /// compiler run for long or exhaust memory.
  static constexpr int64_t kMaxOps = 500000;

private:
  llvm::StringMap<mlir::Type> declaredParams;
  int64_t opCount = 0;
  bool reportedTooLarge = false;
  int64_t seedCounter = 1;

  /// create<OpTy>'s body: ops are built by type, never by a name string.
  mlir::Operation *createNamed(llvm::StringRef opName, SrcLoc l, mlir::ValueRange operands,
                               llvm::ArrayRef<mlir::NamedAttribute> attrs, unsigned numResults,
                               llvm::ArrayRef<int32_t> segments, unsigned numRegions,
                               bool infer);
};

} // namespace frontend
} // namespace nncc

#endif
