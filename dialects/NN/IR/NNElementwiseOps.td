//===- NNElementwiseOps.td - elementwise nn ops ------------*- tablegen -*-===//
//
// Broadcasting binary arithmetic, comparisons, select, casts, activations,
// dropout and stop_gradient; activation_grad is the derivative helper of
// the backward pass.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNELEMENTWISEOPS_TD
#define NNCC_DIALECT_NN_IR_NNELEMENTWISEOPS_TD

include "dialects/NN/IR/NNOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NN_AddOp : NN_BinaryOp<"add", "sum">;

def NN_SubOp : NN_BinaryOp<"sub", "difference">;

def NN_MulOp : NN_BinaryOp<"mul", "product">;

def NN_DivOp : NN_BinaryOp<"div", "quotient">;

def NN_CompareOp : NN_Op<"compare", [Pure]> {
  let summary = "elementwise comparison into an i1 tensor, NumPy broadcasting";
  let description = [{
    `predicate`(`lhs`, `rhs`) per element: `lhs` and `rhs` have the same
    element type (integer or float) and broadcastable shapes; the result is
    an i1 tensor of the broadcast shape. It has no gradient.

    ```mlir
    %c = nn.compare %x, %y {predicate = #nn<cmp ne>} : (!nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>) -> !nn.tensor<[B, T], i1>
    ```
  }];
  let arguments = (ins NN_TensorType:$lhs, NN_TensorType:$rhs,
                       NN_ComparePredicateAttr:$predicate);
  let results = (outs NN_BoolTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_SelectOp : NN_Op<"select", [Pure]> {
  let summary = "elementwise choice cond ? a : b, NumPy broadcasting";
  let description = [{
    Per element, `a` where the i1 `cond` is true and `b` where it is false.
    `a` and `b` have the same element type, which is the result's; the three
    shapes broadcast to the result's. The gradient of a float select routes
    the result's adjoint to `a` where `cond` holds and to `b` elsewhere.

    ```mlir
    %t = nn.select %mask, %tokens, %ignore : (!nn.tensor<[B, T], i1>, !nn.tensor<[B, T], i32>, !nn.tensor<[], i32>) -> !nn.tensor<[B, T], i32>
    ```
  }];
  let arguments = (ins NN_BoolTensor:$cond, NN_TensorType:$a,
                       NN_TensorType:$b);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_CastOp : NN_Op<"cast", [Pure]> {
  let summary = "elementwise conversion to another element type";
  let description = [{
    Converts `x` to the element type `to` (f32, f64, i32, i64 or i1); the
    shape is kept. i1 becomes 0 or 1; a float or integer becomes i1 as
    `x != 0`; a float becomes an integer by truncation toward zero. Only
    float-to-float casts carry a gradient (the adjoint cast back).

    ```mlir
    %f = nn.cast %mask {to = f32} : (!nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], f32>
    ```
  }];
  let arguments = (ins NN_TensorType:$x, TypeAttr:$to);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_NegOp : NN_UnaryOp<"neg", "negation">;

def NN_ReluOp : NN_UnaryOp<"relu", "the rectified linear unit max(x, 0)">;

def NN_TanhOp : NN_UnaryOp<"tanh", "the hyperbolic tangent">;

def NN_SigmoidOp : NN_UnaryOp<"sigmoid", "the logistic sigmoid 1 / (1 + e^-x)">;

def NN_ExpOp : NN_UnaryOp<"exp", "the exponential">;

def NN_LogOp : NN_UnaryOp<"log", "the natural logarithm">;

def NN_LeakyReluOp : NN_UnaryOp<"leaky_relu",
    "the leaky ReLU max(x, 0) + alpha * min(x, 0)",
    (ins DefaultValuedAttr<NN_F64Attr, "0.01">:$alpha)>;

def NN_GeluOp : NN_UnaryOp<"gelu",
    "the Gaussian error linear unit (exact or tanh-approximated)",
    (ins DefaultValuedAttr<NN_GeluApproximationAttr,
                           "::nncc::nn::GeluApproximation::none">:$approximate)>;

def NN_DropoutOp : NN_Op<"dropout", [Pure]> {
  let summary = "inverted dropout with a fixed seed";
  let description = [{
    In training, zeroes each element of `x` with probability `p` (in [0, 1))
    and scales the rest by 1 / (1 - p); the mask is a function of `seed`, so
    the op is deterministic. Result type = type of `x`.

    ```mlir
    %y = nn.dropout %x {p = 1.0e-01 : f64, seed = 7 : i64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x,
                       DefaultValuedAttr<NN_F64Attr, "0.5">:$p,
                       DefaultValuedAttr<NN_I64Attr, "0">:$seed);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
  let hasVerifier = 1;
}

def NN_StopGradientOp : NN_Op<"stop_gradient", [Pure]> {
  let summary = "the identity, through which no gradient flows";
  let description = [{
    Returns `x` unchanged; `nncc-autodiff` gives `x` no adjoint from this
    use (JAX's `lax.stop_gradient`, PyTorch's `detach`).

    ```mlir
    %y = nn.stop_gradient %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    ```
  }];
  let arguments = (ins NN_TensorType:$x);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NN_ActivationGradOp : NN_Op<"activation_grad", [Pure]> {
  let summary = "adjoint of a piecewise or non-closed-form activation";
  let description = [{
    `dy * f'(x)` for the activation `kind`: `"relu"` (f' = [x > 0]),
    `"leaky_relu"` (1 or `alpha`), `"gelu"` (exact, or the tanh form with
    `approximate`). `x` is the activation's input; `dy` has its type.

    ```mlir
    %dx = nn.activation_grad %x, %dy {kind = "relu"} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$dy, StrAttr:$kind,
                       DefaultValuedAttr<NN_F64Attr, "0.01">:$alpha,
                       DefaultValuedAttr<NN_GeluApproximationAttr,
                           "::nncc::nn::GeluApproximation::none">:$approximate);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
  let hasVerifier = 1;
}

#endif // NNCC_DIALECT_NN_IR_NNELEMENTWISEOPS_TD
