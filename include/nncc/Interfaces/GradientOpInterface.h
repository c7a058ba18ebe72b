//===- GradientOpInterface.h - reverse-mode rules on ops --------*- C++ -*-===//
//
// GradientOpInterface (GradientOpInterface.td) and the services a rule gets
// from the autodiff pass through `GradientBuilder`. See docs/autodiff.md.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_INTERFACES_GRADIENTOPINTERFACE_H
#define NNCC_INTERFACES_GRADIENTOPINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/MapVector.h"

namespace nncc {

/// Parameter gradients collected while differentiating a region in a
/// nested context (e.g. the dynamics of an ODE for its adjoint op), keyed by
/// the parameter's symbol name, in first-use order.
using ParameterGradients = llvm::MapVector<mlir::StringAttr, mlir::Value>;

/// A copy of a single-block region's body placed in the backward pass
/// (recomputation), as made by GradientBuilder::cloneRegion.
struct RegionClone {
  /// The cloned ops in program order (without the terminator).
  llvm::SmallVector<mlir::Operation *> ops;
  /// The values the copy yields (the clone of the region's nn.yield
  /// operands).
  llvm::SmallVector<mlir::Value> results;
  /// Values defined outside the region that the body reads: (the outer
  /// value, its backward-side value used by the copy).
  llvm::SmallVector<std::pair<mlir::Value, mlir::Value>> captures;
};

/// What the autodiff pass offers a rule while it builds the backward pass.
/// Everything is built at `getBuilder()`'s insertion point.
class GradientBuilder {
public:
  explicit GradientBuilder(mlir::OpBuilder &builder) : builder(builder) {}
  virtual ~GradientBuilder();

  mlir::OpBuilder &getBuilder() { return builder; }

  /// The backward-side value of `value`: the saved residual (`nn.save`) of a
  /// forward value, its reconstruction (reversible blocks), a fresh
  /// `nn.get_parameter` / `nn.constant` / the function argument for free
  /// values, or `value` itself when it was built by the backward pass.
  virtual mlir::Value get(mlir::Value value) = 0;

  /// Whether the adjoint of forward operand `value` is needed (it depends on
  /// a parameter or a differentiated input). Rules may skip work for the
  /// others; returning adjoints for them anyway is harmless.
  virtual bool needsAdjoint(mlir::Value value) = 0;

  /// Records that forward value `value` has been rebuilt in the backward as
  /// `reconstruction`; later `get(value)` return it (no save needed).
  virtual void setReconstructed(mlir::Value value,
                                mlir::Value reconstruction) = 0;

  /// Adds `adjoint` to the adjoint of a value that is not an operand of the
  /// op being differentiated (a value captured by one of its regions).
  virtual void addAdjoint(mlir::Value value, mlir::Value adjoint) = 0;

  /// Adds `gradient` to the gradient of parameter `name` in the current
  /// context (the function's `grad.<name>` result, or the parameter
  /// gradients of the region being differentiated).
  virtual void addParameterGradient(mlir::StringAttr name,
                                    mlir::Value gradient) = 0;

  /// The value through which the gradient op being built reads what
  /// `forward` (the op being differentiated) keeps for it instead of
  /// recomputing it: `forward` is rebuilt with one more result, of
  /// `reserveType`, which is returned. Null (the gradient recomputes) when
  /// `forward` or the insertion point is not at the top level of the
  /// function. The pass removes the edge again when the forward would
  /// survive only for it (a reconstruction nothing else reads).
  virtual mlir::Value keepReserve(mlir::Operation *forward,
                                  mlir::Type reserveType) = 0;
  /// Clones the body of single-block `region` at the insertion point, block
  /// arguments replaced by `args`, values from outside the region by
  /// `get()`. Fails (with an error) on a malformed region.
  virtual mlir::FailureOr<RegionClone> cloneRegion(mlir::Region &region,
                                                   mlir::ValueRange args) = 0;

  /// Reverse sweep over `clone`'s ops given adjoints of its results (null =
  /// zero). Appends to `wrtAdjoints` the adjoint of each of `wrt` (values
  /// the copy reads, usually the `args` of cloneRegion; null = zero).
  /// Parameter gradients go to `parameters` when given, otherwise to the
  /// function's `grad.<param>` results; adjoints of captured values go to
  /// addAdjoint() (only when `parameters` is null; otherwise a differentiable
  /// capture is an error).
  virtual mlir::LogicalResult
  differentiate(const RegionClone &clone, llvm::ArrayRef<mlir::Value> seeds,
                llvm::ArrayRef<mlir::Value> wrt,
                llvm::SmallVectorImpl<mlir::Value> &wrtAdjoints,
                ParameterGradients *parameters) = 0;

protected:
  mlir::OpBuilder &builder;
};

} // namespace nncc

#include "nncc/Interfaces/GradientOpInterface.h.inc"

#endif // NNCC_INTERFACES_GRADIENTOPINTERFACE_H
