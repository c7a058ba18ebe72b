//===- NNReversibleOps.td - reversible residual blocks -----*- tablegen -*-===//
//
// nn.reversible (RevNet coupling): the backward reconstructs the input
// from the output instead of storing it (ExpandReversible, the gradient
// rule).
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNREVERSIBLEOPS_TD
#define NNCC_DIALECT_NN_IR_NNREVERSIBLEOPS_TD

include "dialects/NN/IR/NNOpBase.td"

def NN_ReversibleOp : NN_Op<"reversible", [
    RecursiveMemoryEffects, RecursivelySpeculatable,
    DeclareOpInterfaceMethods<NN_RegionSignatureOpInterface>]> {
  let summary = "reversible residual block (RevNet / Reformer)";
  let description = [{
    Splits `x` [..., 2F] into halves x1, x2 along the last dim and returns
    concat(y1, y2) with y1 = x1 + f(x2) and y2 = x2 + g(y1). Regions `f` and
    `g` each have one block taking one [..., F] tensor and yielding one
    [..., F] tensor (F is `?` when the last dim is not static).

    ```mlir
    %y = nn.reversible %x : (!nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32> f {
    ^bb0(%x2: !nn.tensor<[B, 4], f32>):
      nn.yield %x2 : !nn.tensor<[B, 4], f32>
    } g {
    ^bb0(%y1: !nn.tensor<[B, 4], f32>):
      nn.yield %y1 : !nn.tensor<[B, 4], f32>
    }
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x);
  let results = (outs NN_FloatTensor:$result);
  let regions = (region SizedRegion<1>:$f, SizedRegion<1>:$g);
  let assemblyFormat = [{
    $x attr-dict `:` functional-type(operands, results) `f` $f `g` $g
  }];
  let hasRegionVerifier = 1;
}

#endif // NNCC_DIALECT_NN_IR_NNREVERSIBLEOPS_TD
