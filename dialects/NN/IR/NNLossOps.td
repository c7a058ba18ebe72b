//===- NNLossOps.td - losses and fused output heads --------*- tablegen -*-===//
//
// MSE, cross-entropy and BCE-with-logits, the fused linear +
// cross-entropy and linear + sample heads, and the losses' backward ops.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNLOSSOPS_TD
#define NNCC_DIALECT_NN_IR_NNLOSSOPS_TD

include "dialects/NN/IR/NNOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NN_MSEOp : NN_Op<"mse", [Pure]> {
  let summary = "mean squared error";
  let description = [{
    mean((pred - target)^2) over all elements; `pred` and `target` have
    compatible types. The result is a scalar [] of their element type.

    ```mlir
    %l = nn.mse %p, %t : (!nn.tensor<[B, 1], f32>, !nn.tensor<[B, 1], f32>) -> !nn.tensor<[], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$pred, NN_FloatTensor:$target);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_CrossEntropyOp : NN_Op<"cross_entropy", [Pure]> {
  let summary = "softmax cross-entropy over the last dim";
  let description = [{
    `logits` [..., C] against integer class indices `target` [...]; targets
    equal to `ignore_index` do not count. Mean over the counted positions:
    a scalar [] of the logits' element type.

    ```mlir
    %l = nn.cross_entropy %logits, %t : (!nn.tensor<[B, T, 100], f32>, !nn.tensor<[B, T], i64>) -> !nn.tensor<[], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IndexTensor:$target,
                       DefaultValuedAttr<NN_I64Attr, "-100">:$ignore_index);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_LinearCrossEntropyOp : NN_Op<"linear_cross_entropy", [Pure]> {
  let summary = "fused language-model head: linear map, softmax cross-entropy and its gradients";
  let description = [{
    The loss of `nn.cross_entropy(nn.linear(x, weight, bias), target)`
    (`ignore_index`, mean over the counted positions) together with its
    gradients for a unit loss adjoint: `dx` (type of `x` [..., K]),
    `dweight` [V, K] and `dbias` [V] (also when `bias` is absent). The
    [..., V] logits and their gradient are never materialised: the kernel
    computes them a bounded chunk of rows at a time (one GEMM for the
    chunk's logits, one each for its dx rows and its dweight update). With
    `with_logits` the op also writes the logits (a training function that
    returns them) as the optional last result.

    Formed by nncc-autodiff (`fuse-loss-heads`) in @forward_backward, where
    a linear's result feeds only a cross_entropy (and the return); its
    gradient rule scales `dx`, `dweight` and `dbias` by the loss adjoint.

    ```mlir
    %l, %dx, %dw, %db = nn.linear_cross_entropy %x, %w, %t bias %b : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[B, T], i32>, !nn.tensor<[100], f32>) -> (!nn.tensor<[], f32>, !nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$weight,
                       NN_IndexTensor:$target,
                       Optional<NN_FloatTensor>:$bias,
                       DefaultValuedAttr<NN_I64Attr, "-100">:$ignore_index,
                       UnitAttr:$with_logits);
  let results = (outs NN_FloatTensor:$loss, NN_FloatTensor:$dx,
                      NN_FloatTensor:$dweight, NN_FloatTensor:$dbias,
                      Optional<NN_FloatTensor>:$logits);
  let assemblyFormat = [{
    $x `,` $weight `,` $target (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_LinearSampleOp : NN_Op<"linear_sample", [Pure, AttrSizedOperandSegments]> {
  let summary = "fused sampling head: Gumbel-max draws from a linear map's logits";
  let description = [{
    `nn.sample(nn.linear(x, weight, bias), rows)` with the same `seed` and
    the same draws, without the [..., V] logits: the kernel computes the
    logits of the drawn rows only (those where `rows` is true, all without
    it), a bounded chunk of rows at a time. x [..., K], weight [V, K], bias
    [V]; the result is i32 [...] (0 in rows not drawn) and carries no
    gradient.

    Formed by nncc-autodiff (`fuse-loss-heads`) in @forward_backward, where
    a linear's result feeds one cross_entropy, which becomes
    `nn.linear_cross_entropy`, and samples (ELECTRA's generator).

    ```mlir
    %s = nn.linear_sample %x, %w bias %b rows %m {seed = 4 : i64} : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], i32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$weight,
                       Optional<NN_FloatTensor>:$bias,
                       Optional<NN_BoolTensor>:$rows,
                       DefaultValuedAttr<NN_I64Attr, "0">:$seed);
  let results = (outs NN_IndexTensor:$result);
  let assemblyFormat = [{
    $x `,` $weight (`bias` $bias^)? (`rows` $rows^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_BCEWithLogitsOp : NN_Op<"bce_with_logits", [Pure]> {
  let summary = "binary cross-entropy on logits";
  let description = [{
    As `torch.nn.BCEWithLogitsLoss`: `logits` and `target` have compatible
    float types; the optional `pos_weight` [C] weights positives per class
    of the last dim. Mean reduction to a scalar [].

    ```mlir
    %l = nn.bce_with_logits %z, %t : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 3], f32>) -> !nn.tensor<[], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_FloatTensor:$target,
                       Optional<NN_FloatTensor>:$pos_weight);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NN_MSEGradOp : NN_Op<"mse_grad", [Pure]> {
  let summary = "adjoint of nn.mse with respect to pred";
  let description = [{
    `dloss * 2 (pred - target) / numel(pred)`; `dloss` is the scalar
    adjoint of the loss. (The target's adjoint is its negation.)

    ```mlir
    %dp = nn.mse_grad %p, %t, %dl : (!nn.tensor<[B, 1], f32>, !nn.tensor<[B, 1], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 1], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$pred, NN_FloatTensor:$target,
                       NN_FloatTensor:$dloss);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_CrossEntropyGradOp : NN_Op<"cross_entropy_grad", [Pure]> {
  let summary = "adjoint of nn.cross_entropy with respect to the logits";
  let description = [{
    `dloss * (softmax(logits) - onehot(target)) / count` at counted
    positions, zero where `target == ignore_index`; count = number of
    counted positions. Recomputes the softmax.

    ```mlir
    %dz = nn.cross_entropy_grad %z, %t, %dl : (!nn.tensor<[B, 10], f32>, !nn.tensor<[B], i64>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 10], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IndexTensor:$target,
                       NN_FloatTensor:$dloss,
                       DefaultValuedAttr<NN_I64Attr, "-100">:$ignore_index);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_BCEWithLogitsGradOp : NN_Op<"bce_with_logits_grad", [Pure]> {
  let summary = "adjoint of nn.bce_with_logits with respect to the logits";
  let description = [{
    `dloss * ((1 + (w - 1) t) σ(z) - w t) / numel(z)` with w = `pos_weight`
    (1 when absent), broadcast over the last dim.

    ```mlir
    %dz = nn.bce_with_logits_grad %z, %t grad %dl : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 3], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 3], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_FloatTensor:$target,
                       Optional<NN_FloatTensor>:$pos_weight,
                       NN_FloatTensor:$dloss);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $target (`pos_weight` $pos_weight^)? `grad` $dloss attr-dict
    `:` functional-type(operands, results)
  }];
}

#endif // NNCC_DIALECT_NN_IR_NNLOSSOPS_TD
