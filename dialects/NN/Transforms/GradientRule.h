//===- GradientRule.h - how an nn op family states its rules ----*- C++ -*-===//
//
// A reverse-mode rule is two plain functions of the op (docs/autodiff.md):
// which forward values the backward reads (`saved`) and how the adjoints of
// the operands are built from those of the results (`gradient`). Each op
// family's <Family>Gradients.cpp defines them and attaches them with
// attachGradientRule; GradientRules.cpp registers every family. Simple ops
// are differentiated with nn ops (plus the helpers below); composite layers
// build one fused backward op.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_DIALECT_NN_TRANSFORMS_GRADIENTRULE_H
#define NNCC_DIALECT_NN_TRANSFORMS_GRADIENTRULE_H

#include "dialects/NN/IR/NNOps.h"
#include "nncc/Interfaces/GradientOpInterface.h"

namespace nncc::nn::gradients {

using NNTensor = nncc::nn::TensorType;

/// The GradientOpInterface model of `OpTy` made of its rule's functions.
/// `ReconstructsInput`: the backward rebuilds operand 0 from the saved
/// values (reversible blocks) instead of reading it.
template <typename OpTy, void (*Saved)(OpTy, llvm::SmallVectorImpl<mlir::Value> &),
          mlir::LogicalResult (*Gradient)(OpTy, GradientBuilder &, llvm::ArrayRef<mlir::Value>,
                                          llvm::SmallVectorImpl<mlir::Value> &),
          bool ReconstructsInput>
struct GradientRuleModel : public GradientOpInterface::ExternalModel<
                               GradientRuleModel<OpTy, Saved, Gradient, ReconstructsInput>, OpTy> {
  void getSavedValues(mlir::Operation *op, llvm::SmallVectorImpl<mlir::Value> &saved) const {
    Saved(llvm::cast<OpTy>(op), saved);
  }
  void getReconstructedOperands(mlir::Operation *op,
                                llvm::SmallVectorImpl<mlir::Value> &values) const {
    if constexpr (ReconstructsInput)
      values.push_back(op->getOperand(0));
  }
  mlir::LogicalResult buildGradient(mlir::Operation *op, GradientBuilder &gb,
                                    llvm::ArrayRef<mlir::Value> resultAdjoints,
                                    llvm::SmallVectorImpl<mlir::Value> &operandAdjoints) const {
    return Gradient(llvm::cast<OpTy>(op), gb, resultAdjoints, operandAdjoints);
  }
};

template <typename OpTy, void (*Saved)(OpTy, llvm::SmallVectorImpl<mlir::Value> &),
          mlir::LogicalResult (*Gradient)(OpTy, GradientBuilder &, llvm::ArrayRef<mlir::Value>,
                                          llvm::SmallVectorImpl<mlir::Value> &),
          bool ReconstructsInput = false>
void attachGradientRule(mlir::MLIRContext &ctx) {
  OpTy::template attachInterface<GradientRuleModel<OpTy, Saved, Gradient, ReconstructsInput>>(ctx);
}

/// `saved` of rules that read no forward value.
template <typename OpTy> void savesNothing(OpTy, llvm::SmallVectorImpl<mlir::Value> &) {}
/// `saved` of rules whose derivative is a function of the op's result
/// (tanh, sigmoid, exp, softmax): the result is the one value kept.
template <typename OpTy> void savesResult(OpTy op, llvm::SmallVectorImpl<mlir::Value> &s) {
  s.push_back(op.getResult());
}

/// `saved` of rules that keep every operand (cells, attention: their
/// weights are parameters, free to keep).
template <typename OpTy> void savedAll(OpTy op, llvm::SmallVectorImpl<mlir::Value> &s) {
  llvm::append_range(s, op->getOperands());
}

//===--- helpers the families share (GradientRules.cpp) -------------------===//

NNTensor tensorType(mlir::Value v);
bool isFloatTensor(mlir::Value v);
mlir::Value scalar(mlir::OpBuilder &b, mlir::Location loc, double value, mlir::Type elementType);
mlir::Value add(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value sub(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value mul(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value div(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value zeros(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type);
/// The adjoint `adjoint` of a broadcast result, summed back to the shape of
/// `type` (the operand's) when the broadcast expanded it.
mlir::Value unbroadcast(mlir::OpBuilder &b, mlir::Location loc, mlir::Value adjoint,
                        mlir::Type type);
mlir::Value transposeLastTwo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// reduce_sum over all dims but the last.
mlir::Value sumLeading(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// nn.split of `x` into `sizes` along `axis` (results typed by inference).
llvm::SmallVector<mlir::Value> split(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                                     int64_t axis, llvm::ArrayRef<int64_t> sizes);
/// Values defined outside `op` that its regions read (captures).
void appendCaptures(mlir::Operation *op, llvm::SmallVectorImpl<mlir::Value> &values);
/// The reserve the gradient op of `op` (a recurrent stack or attention)
/// reads: the forward keeps what the backward needs (a stack's layer
/// outputs and gates; attention's packed projection, output and
/// log-sum-exp) instead of the backward running it again. Null (recompute)
/// for ops inside regions.
mlir::Value keepReserve(GradientBuilder &gb, mlir::Operation *op);
/// Backward-side copies of `values`.
llvm::SmallVector<mlir::Value> getAll(GradientBuilder &gb, mlir::ValueRange values);
/// The backward-side copy of `v`, or null when `v` is.
mlir::Value getOpt(GradientBuilder &gb, mlir::Value v);

//===--- the families (<Family>Gradients.cpp) -----------------------------===//

void attachElementwiseGradientRules(mlir::MLIRContext &ctx);
void attachNormGradientRules(mlir::MLIRContext &ctx);
void attachLinearGradientRules(mlir::MLIRContext &ctx);
void attachTokenGradientRules(mlir::MLIRContext &ctx);
void attachTensorGradientRules(mlir::MLIRContext &ctx);
void attachLossGradientRules(mlir::MLIRContext &ctx);
void attachRecurrentGradientRules(mlir::MLIRContext &ctx);
void attachAttentionGradientRules(mlir::MLIRContext &ctx);
void attachReversibleGradientRules(mlir::MLIRContext &ctx);
void attachODEGradientRules(mlir::MLIRContext &ctx);

} // namespace nncc::nn::gradients

#endif // NNCC_DIALECT_NN_TRANSFORMS_GRADIENTRULE_H
