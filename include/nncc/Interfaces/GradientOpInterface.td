//===- GradientOpInterface.td - reverse-mode rules on ops ----*- tablegen -*-===//
//
// The per-op rules of `nncc-autodiff` (docs/autodiff.md). In the spirit of
// Enzyme-MLIR's ReverseAutoDiffOpInterface: each op says which forward values
// its backward rule reads (so the pass can record them explicitly as
// `nn.save` residuals, and a rematerialisation pass can change that choice),
// which of its operands the rule reconstructs from its results (reversible
// blocks), and builds the adjoints of its operands from the adjoints of its
// results.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_INTERFACES_GRADIENTOPINTERFACE_TD
#define NNCC_INTERFACES_GRADIENTOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::nncc";
  let description = [{
    Reverse-mode differentiation rule of one op. The autodiff pass visits the
    active ops of a function in reverse order and, for each, calls
    `buildGradient` with the adjoints of the op's results (null = zero) and a
    `GradientBuilder` that hands out the backward-side copies of forward
    values (`gb.get(v)`: a saved residual, a reconstructed value, or a
    re-read parameter / constant / argument). The rule appends one adjoint
    per operand (null = no contribution, e.g. for integer operands).

    `getSavedValues` lists the forward values (operands or results of this
    op, or values captured by its regions) that `buildGradient` reads through
    `gb.get`; the pass turns each into an explicit `nn.save` at the
    forward/backward boundary unless it is free (arguments, parameters,
    constants) or reconstructed by a later reversible block.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/[{Appends the forward values the backward rule reads.}],
      /*retTy=*/"void", /*methodName=*/"getSavedValues",
      /*args=*/(ins "::llvm::SmallVectorImpl<::mlir::Value> &":$saved),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        for (::mlir::Value v : $_op->getOperands()) saved.push_back(v);
      }]>,
    InterfaceMethod<
      /*desc=*/[{Appends the operands that `buildGradient` reconstructs from
                 the op's results (`gb.setReconstructed`) so that they need
                 not be saved (reversible blocks, seed thesis §4.3.5).}],
      /*retTy=*/"void", /*methodName=*/"getReconstructedOperands",
      /*args=*/(ins "::llvm::SmallVectorImpl<::mlir::Value> &":$values),
      /*methodBody=*/"", /*defaultImplementation=*/"">,
    InterfaceMethod<
      /*desc=*/[{Builds, at the builder's insertion point, the adjoints of
                 the operands given the adjoints of the results (null =
                 zero; at least one is non-null). `operandAdjoints` receives
                 exactly one entry per operand (null = none). Errors are
                 emitted at the op's location.}],
      /*retTy=*/"::llvm::LogicalResult", /*methodName=*/"buildGradient",
      /*args=*/(ins "::nncc::GradientBuilder &":$gb,
                    "::llvm::ArrayRef<::mlir::Value>":$resultAdjoints,
                    "::llvm::SmallVectorImpl<::mlir::Value> &":$operandAdjoints)>,
  ];
}

#endif // NNCC_INTERFACES_GRADIENTOPINTERFACE_TD
