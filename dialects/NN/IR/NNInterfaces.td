//===- NNInterfaces.td - nn dialect interfaces ---------------*- tablegen -*-===//

#ifndef NNCC_DIALECT_NN_IR_NNINTERFACES_TD
#define NNCC_DIALECT_NN_IR_NNINTERFACES_TD

include "mlir/IR/OpBase.td"

def NN_AttentionKindAttrInterface
    : AttrInterface<"AttentionKindAttrInterface"> {
  let cppNamespace = "::nncc::nn";
  let description = [{
    Implemented by the attributes that select the attention pattern of
    `nn.attention` (`#nn.dense`, `#nn.dilated<...>`, `#nn.lsh<...>`). It tells
    the op how its input projection is laid out.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/[{Number of E-row blocks stacked in `in_proj_weight`: 3 for
                 separate query, key and value projections, 2 when queries
                 and keys share one projection (LSH).}],
      /*retTy=*/"int64_t",
      /*methodName=*/"getNumInputProjections">,
  ];
}

#endif // NNCC_DIALECT_NN_IR_NNINTERFACES_TD
