//===- NNInterfaces.td - nn dialect interfaces ---------------*- tablegen -*-===//

#ifndef NNCC_DIALECT_NN_IR_NNINTERFACES_TD
#define NNCC_DIALECT_NN_IR_NNINTERFACES_TD

include "mlir/IR/OpBase.td"

def NN_AttentionKindAttrInterface
    : AttrInterface<"AttentionKindAttrInterface"> {
  let cppNamespace = "::nncc::nn";
  let description = [{
    Implemented by the attributes that select the attention pattern of
    `nn.attention` (`#nn.dense`, `#nn.dilated<...>`, `#nn.lsh<...>`,
    `#nn.local<...>`). It tells
    the op how its input projection is laid out.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/[{Number of E-row blocks stacked in `in_proj_weight`: 3 for
                 separate query, key and value projections, 2 when queries
                 and keys share one projection (LSH), 6 when global queries
                 have their own (Longformer's convention).}],
      /*retTy=*/"int64_t",
      /*methodName=*/"getNumInputProjections">,
  ];
}

def NN_RegionSignatureOpInterface
    : OpInterface<"RegionSignatureOpInterface"> {
  let cppNamespace = "::nncc::nn";
  let description = [{
    Implemented by the nn ops with regions. Gives, from the op's operands and
    attributes, the types each region's block arguments and `nn.yield` must
    have. The region verifiers and `nn-infer-shapes` (which refines block
    argument types) share this single definition.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/[{Fills the expected block argument and yield types of region
                 `index`. Fails, without a diagnostic, when the operands are
                 not well-formed enough to tell.}],
      /*retTy=*/"::llvm::LogicalResult",
      /*methodName=*/"getRegionSignature",
      /*args=*/(ins "unsigned":$index,
                    "::llvm::SmallVectorImpl<::mlir::Type> &":$argTypes,
                    "::llvm::SmallVectorImpl<::mlir::Type> &":$yieldTypes)>,
  ];
}

#endif // NNCC_DIALECT_NN_IR_NNINTERFACES_TD
