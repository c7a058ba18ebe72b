//===- NNOpsCommon.h - Shared checks for nn op inference --------*- C++ -*-===//
//
// Internal to the dialect library: diagnostics helpers used by the
// inferReturnTypes and verifiers of the nn ops.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNOPSCOMMON_H
#define NNCC_DIALECT_NN_IR_NNOPSCOMMON_H

#include "dialects/NN/IR/NNOps.h"

namespace nncc::nn::detail {

/// Verifies the optional `reserve` result of a forward op: every use is the
/// `reserve` operand of a `GradOp` (the only operand that takes one).
template <typename GradOp>
mlir::LogicalResult verifyReserveUsers(mlir::Operation *op,
                                       mlir::Value reserve) {
  if (!reserve)
    return mlir::success();
  for (mlir::Operation *user : reserve.getUsers())
    if (!mlir::isa<GradOp>(user))
      return op->emitOpError("'reserve' may only be read by '")
             << GradOp::getOperationName() << "', not by '" << user->getName()
             << "'";
  return mlir::success();
}

/// Verifies the optional `reserve` operand of a gradient op: it is the
/// `reserve` result of a `FwdOp` for which `matches` holds (the attributes
/// that decide what the forward kept are the gradient's).
template <typename FwdOp, typename GradOp, typename Pred>
mlir::LogicalResult verifyReserveProducer(GradOp op, Pred matches) {
  mlir::Value reserve = op.getReserve();
  if (!reserve)
    return mlir::success();
  auto forward = reserve.template getDefiningOp<FwdOp>();
  if (!forward)
    return op.emitOpError("'reserve' must be the reserve result of an '")
           << FwdOp::getOperationName() << "'";
  if (!matches(forward))
    return op.emitOpError("'reserve' comes from an '")
           << FwdOp::getOperationName()
           << "' with other attributes than this gradient's";
  return mlir::success();
}

/// Verifies a recurrent op's optional `checkpoint_every` and
/// `checkpoint_snapshots`: each at least 1, not both.
template <typename Op> mlir::LogicalResult verifyCheckpointEvery(Op op) {
  std::optional<int64_t> every = op.getCheckpointEvery();
  if (every && *every < 1)
    return op.emitOpError("'checkpoint_every' must be at least 1, got ")
           << *every;
  std::optional<int64_t> snapshots = op.getCheckpointSnapshots();
  if (snapshots && *snapshots < 1)
    return op.emitOpError("'checkpoint_snapshots' must be at least 1, got ")
           << *snapshots;
  if (every && snapshots)
    return op.emitOpError("'checkpoint_every' and 'checkpoint_snapshots' "
                          "are exclusive");
  return mlir::success();
}

/// Reports errors found while inferring result types, as
/// `'nn.op' op <message>` at the given location (nothing is emitted when the
/// location is absent), and offers the operand checks most ops share. Every
/// check returns failure after emitting its error.
class InferDiagnostics {
public:
  InferDiagnostics(std::optional<mlir::Location> loc, llvm::StringRef opName)
      : loc(loc), opName(opName) {}

  template <typename... Args>
  mlir::LogicalResult error(Args &&...args) const {
    return mlir::emitOptionalError(loc, "'", opName, "' op ",
                                   std::forward<Args>(args)...);
  }

  /// The nn tensor type of `value` (`what` names it in the error).
  mlir::FailureOr<TensorType> tensor(mlir::Value value,
                                     llvm::StringRef what) const;
  /// As tensor(), also requiring exactly `rank` dims.
  mlir::FailureOr<TensorType> tensorOfRank(mlir::Value value,
                                           llvm::StringRef what,
                                           int64_t rank) const;
  /// As tensor(), also requiring at least `rank` dims.
  mlir::FailureOr<TensorType> tensorOfMinRank(mlir::Value value,
                                              llvm::StringRef what,
                                              int64_t rank) const;

  /// Requires `type` to have exactly the dims `expected`, up to
  /// compatibility (a `?` on either side matches).
  mlir::LogicalResult expectShape(TensorType type,
                                  llvm::ArrayRef<Dim> expected,
                                  const llvm::Twine &what) const;
  /// Requires `type` to have the element type `expected`.
  mlir::LogicalResult expectElementType(TensorType type, mlir::Type expected,
                                        const llvm::Twine &what) const;
  /// Requires a floating-point element type.
  mlir::LogicalResult expectFloat(TensorType type,
                                  const llvm::Twine &what) const;
  /// Requires an i32 or i64 element type.
  mlir::LogicalResult expectIndex(TensorType type,
                                  const llvm::Twine &what) const;

private:
  std::optional<mlir::Location> loc;
  llvm::StringRef opName;
};

/// The dims of `x` with `axis` (negative counts from the end) removed, or
/// kept as size 1 when `keepdim`: the result shape of nn.argmax / nn.max.
/// Fails with an error when `axis` is out of range for `x`.
mlir::FailureOr<llvm::SmallVector<Dim>>
inferAxisReduced(const InferDiagnostics &diag, TensorType x, int64_t axis,
                 bool keepdim);

/// The more precise of two compatible shapes, dim by dim (a `?` yields to
/// the other dim).
llvm::SmallVector<Dim> refineShape(llvm::ArrayRef<Dim> lhs,
                                   llvm::ArrayRef<Dim> rhs);

/// Result = the type of a float `x` (unary elementwise ops and the like).
mlir::LogicalResult inferSameAsOperand(const InferDiagnostics &diag, mlir::Value x,
                                       llvm::SmallVectorImpl<mlir::Type> &inferred);
/// The scalar `[]` of `elementType`.
TensorType getScalarType(mlir::Type elementType);
/// Probabilities of dropout-like ops lie in [0, 1).
mlir::LogicalResult verifyProbability(mlir::Operation *op, double p, llvm::StringRef name);
/// The operands of a linear map: x (at least `minRank` dims, [..., K]),
/// weight [V, K] and, when present, bias [V], of one element type; returns
/// x's type and V. The `what`s name them in the errors.
mlir::FailureOr<std::pair<TensorType, Dim>>
inferLinearOperands(InferDiagnostics &diag, mlir::Value xValue, mlir::Value weightValue,
                    mlir::Value biasValue, int64_t minRank, llvm::StringRef xWhat,
                    llvm::StringRef weightWhat, llvm::StringRef biasWhat);
/// Appends the type of each value (all must be nn tensors).
mlir::LogicalResult appendTypes(const InferDiagnostics &diag, mlir::ValueRange values,
                                llvm::StringRef what, llvm::SmallVectorImpl<mlir::Type> &inferred);
/// `adjoint` must be compatible with `expected` when present.
mlir::LogicalResult expectAdjoint(const InferDiagnostics &diag, mlir::Value adjoint,
                                  mlir::Type expected, llvm::StringRef what);
/// Checks every region of `op` against its RegionSignatureOpInterface: one
/// block whose arguments are compatible with the expected argument types and
/// that ends in an nn.yield of values compatible with the expected yield
/// types. `names` names the regions in diagnostics. Robust to any malformed
/// region.
mlir::LogicalResult verifyRegionSignatures(RegionSignatureOpInterface op,
                                           llvm::ArrayRef<llvm::StringRef> names);

} // namespace nncc::nn::detail

#endif // NNCC_DIALECT_NN_IR_NNOPSCOMMON_H
