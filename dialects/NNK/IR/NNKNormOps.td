//===- NNKNormOps.td - layer norm and softmax kernels ------*- tablegen -*-===//
//
// Layer norm (forward and fused backward) and softmax.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NNK_IR_NNKNORMOPS_TD
#define NNCC_DIALECT_NNK_IR_NNKNORMOPS_TD

include "dialects/NNK/IR/NNKOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NNK_LayerNormOp : NNK_Op<"layer_norm", [AttrSizedOperandSegments]> {
  let summary = "y = LN(x + residual)·γ + β over the last dim, one pass";
  let description = [{
    Normalises `x + residual` (residual optional, same shape as x) over the
    last dim N with PyTorch's biased variance and `eps` inside the sqrt;
    weight γ and bias β `[N]` optional. The optional `sum` output receives
    `x + residual` (the residual stream). `nncc_layer_norm_*` on the CPU,
    `launch_layer_norm` on CUDA.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$x,
    NNK_In<Optional<NNK_FloatBuffer>>:$residual,
    NNK_In<Optional<NNK_FloatBuffer>>:$weight,
    NNK_In<Optional<NNK_FloatBuffer>>:$bias,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_Out<Optional<NNK_FloatBuffer>>:$sum,
    DefaultValuedAttr<NNK_F64Attr, "1.0e-5">:$eps
  );
  let assemblyFormat = [{
    `ins` `(` $x `)` (`residual` `(` $residual^ `)`)? (`weight` `(` $weight^ `)`)?
    (`bias` `(` $bias^ `)`)? `outs` `(` $out `)` (`sum` `(` $sum^ `)`)?
    attr-dict `:` qualified(type(operands))
  }];
}

def NNK_SoftmaxOp : NNK_Op<"softmax"> {
  let summary = "softmax along one axis";
  let description = [{
    out = softmax(x) along `axis` (normalised to [0, rank)); x viewed as
    `[outer, N, inner]`. `nncc_softmax_*`.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$x, NNK_Out<NNK_FloatBuffer>:$out,
                       NNK_I64Attr:$axis);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NNK_LayerNormGradOp : NNK_GradOp<"layer_norm_grad", [AttrSizedOperandSegments]> {
  let summary = "dx (and dweight) of layer norm over the last dim";
  let description = [{
    Recomputes mean and 1/std of x `[..., N]`; dx = rstd·(ĝ − mean(ĝ) −
    x̂·mean(ĝ·x̂)) with ĝ = dy·weight; dweight = Σ dy·x̂.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$x, NNK_In<NNK_FloatBuffer>:$dy,
                       NNK_In<Optional<NNK_FloatBuffer>>:$weight,
                       NNK_Out<NNK_FloatBuffer>:$dx,
                       NNK_Out<Optional<NNK_FloatBuffer>>:$dweight,
                       DefaultValuedAttr<NNK_F64Attr, "1.0e-5">:$eps);
  let assemblyFormat = [{
    `ins` `(` $x `,` $dy `)` (`weight` `(` $weight^ `)`)? `outs` `(` $dx `)`
    (`dweight` `(` $dweight^ `)`)? attr-dict `:` qualified(type(operands))
  }];
}

#endif // NNCC_DIALECT_NNK_IR_NNKNORMOPS_TD
