//===- NNNormOps.td - layer norm and softmax ---------------*- tablegen -*-===//
//
// Row normalisations: layer norm (with its fused backward) and softmax.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNNORMOPS_TD
#define NNCC_DIALECT_NN_IR_NNNORMOPS_TD

include "dialects/NN/IR/NNOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NN_SoftmaxOp : NN_UnaryOp<"softmax",
    "softmax along `axis` (negative counts from the end)",
    (ins DefaultValuedAttr<NN_I64Attr, "-1">:$axis)> {
  let hasVerifier = 1;
}

def NN_LayerNormOp : NN_Op<"layer_norm", [Pure, AttrSizedOperandSegments]> {
  let summary = "layer normalisation over the last dim";
  let description = [{
    Normalises `x` [..., N] over its last dim with epsilon `eps` (> 0), then
    scales by the optional `weight` [N] and shifts by the optional `bias`
    [N]. The result has the type of `x`.

    ```mlir
    %y = nn.layer_norm %x weight %g bias %b {eps = 1.0e-05 : f64} : (!nn.tensor<[B, 64], f32>, !nn.tensor<[64], f32>, !nn.tensor<[64], f32>) -> !nn.tensor<[B, 64], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x,
                       Optional<NN_FloatTensor>:$weight,
                       Optional<NN_FloatTensor>:$bias,
                       DefaultValuedAttr<NN_F64Attr, "1.0e-5">:$eps);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $x (`weight` $weight^)? (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NN_LayerNormGradOp : NN_Op<"layer_norm_grad", [Pure]> {
  let summary = "adjoint of nn.layer_norm for x and weight";
  let description = [{
    Recomputes the mean and reciprocal deviation of `x` [..., N] (with
    `eps`) and returns dx [..., N] and, when `weight` [N] is given, dweight
    [N] = sum(dy * x̂). (dbias is a plain `nn.reduce_sum` of dy.)

    ```mlir
    %dx, %dg = nn.layer_norm_grad %x weight %g grad %dy : (...) -> (!nn.tensor<[B, 64], f32>, !nn.tensor<[64], f32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, Optional<NN_FloatTensor>:$weight,
                       NN_FloatTensor:$dy,
                       DefaultValuedAttr<NN_F64Attr, "1.0e-5">:$eps);
  let results = (outs NN_FloatTensor:$dx, Variadic<NN_FloatTensor>:$dweight);
  let assemblyFormat = [{
    $x (`weight` $weight^)? `grad` $dy attr-dict `:`
    functional-type(operands, results)
  }];
}

#endif // NNCC_DIALECT_NN_IR_NNNORMOPS_TD
