//===- NNLinearOps.td - matmul and linear layers -----------*- tablegen -*-===//
//
// Batched matrix products and the dense layer; linear_weight_grad is the
// weight (and bias) gradient of the backward pass.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNLINEAROPS_TD
#define NNCC_DIALECT_NN_IR_NNLINEAROPS_TD

include "dialects/NN/IR/NNOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NN_MatmulOp : NN_Op<"matmul", [Pure]> {
  let summary = "batched matrix product";
  let description = [{
    `lhs` [..., M, K] times `rhs` [..., K, N] gives [..., M, N]; both have
    rank >= 2 and the same element type, and the batch dims broadcast.

    ```mlir
    %c = nn.matmul %a, %b : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[8, 4], f32>) -> !nn.tensor<[B, T, 4], f32>
    ```
  }];
  let arguments = (ins NN_TensorType:$lhs, NN_TensorType:$rhs);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_LinearOp : NN_Op<"linear", [Pure]> {
  let summary = "affine map x W^T + b over the last dim";
  let description = [{
    As `torch.nn.functional.linear`: `x` [..., in], `weight` [out, in] and the
    optional `bias` [out] give [..., out].

    ```mlir
    %y = nn.linear %x, %w, %b : (!nn.tensor<[B, 20], f32>, !nn.tensor<[10, 20], f32>, !nn.tensor<[10], f32>) -> !nn.tensor<[B, 10], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$weight,
                       Optional<NN_FloatTensor>:$bias);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NN_LinearWeightGradOp : NN_Op<"linear_weight_grad", [Pure]> {
  let summary = "weight adjoint of nn.linear: sum over rows of dy^T x";
  let description = [{
    `dy` [..., out] and `x` [..., in] (same leading dims) give
    [out, in] = sum over all leading positions of dy ⊗ x: one GEMM with the
    leading dims flattened.

    ```mlir
    %dw = nn.linear_weight_grad %dy, %x : (!nn.tensor<[B, 10], f32>, !nn.tensor<[B, 20], f32>) -> !nn.tensor<[10, 20], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$dy, NN_FloatTensor:$x);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

#endif // NNCC_DIALECT_NN_IR_NNLINEAROPS_TD
