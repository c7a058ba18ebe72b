//===- NNKLinearOps.td - GEMMs and matmuls -----------------*- tablegen -*-===//
//
// GEMMs with fused epilogues, batched matmuls and the weight gradient of a
// linear layer.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NNK_IR_NNKLINEAROPS_TD
#define NNCC_DIALECT_NNK_IR_NNKLINEAROPS_TD

include "dialects/NNK/IR/NNKOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NNK_GemmOp : NNK_Op<"gemm", [AttrSizedOperandSegments]> {
  let summary = "y = act(x · wᵀ + bias) + residual: one GEMM + fused epilogue";
  let description = [{
    PyTorch `Linear` convention: x `[..., K]` (all leading dims flattened to
    M rows), w `[N, K]`, bias `[N]`, residual and out `[..., N]` (out's
    leading dims equal x's). The residual is added after the activation.
    `alpha` is the negative slope of leaky_relu. Implemented by
    `nncc_linear_{f32,f64}` (cblas + one epilogue pass) on the CPU and
    cuBLAS + `linear_epilogue_kernel` on CUDA.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$x,
    NNK_In<NNK_FloatBuffer>:$weight,
    NNK_In<Optional<NNK_FloatBuffer>>:$bias,
    NNK_In<Optional<NNK_FloatBuffer>>:$residual,
    NNK_Out<NNK_FloatBuffer>:$out,
    DefaultValuedAttr<NNK_ActivationAttr, "::nncc::nnk::Activation::none">:$activation,
    DefaultValuedAttr<NNK_F64Attr, "0.01">:$alpha
  );
  let assemblyFormat = [{
    `ins` `(` $x `,` $weight `)` (`bias` `(` $bias^ `)`)?
    (`residual` `(` $residual^ `)`)? `outs` `(` $out `)` attr-dict `:`
    qualified(type(operands))
  }];
}

def NNK_MatmulOp : NNK_Op<"matmul"> {
  let summary = "batched matrix product c = a · b";
  let description = [{
    a `[..., M, K]`, b `[..., K, N]`, out `[..., M, N]`; batch dims
    broadcast (NumPy). One `nncc_gemm_*` call per batch entry (strided
    batched cuBLAS on CUDA).
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$lhs,
                       NNK_In<NNK_FloatBuffer>:$rhs,
                       NNK_Out<NNK_FloatBuffer>:$out);
  let assemblyFormat = [{
    `ins` `(` $lhs `,` $rhs `)` `outs` `(` $out `)` attr-dict `:`
    qualified(type(operands))
  }];
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NNK_LinearWeightGradOp : NNK_GradOp<"linear_weight_grad"> {
  let summary = "dw [N, K] = dyᵀ · x over all leading rows (one GEMM)";
  let description = [{
    dy `[..., N]`, x `[..., K]` (same leading dims), out `[N, K]`:
    `nncc_gemm_S(1, 0, N, K, rows, 1, dy, N, x, K, 0, out, K)`.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$dy, NNK_In<NNK_FloatBuffer>:$x,
                       NNK_Out<NNK_FloatBuffer>:$out);
  let assemblyFormat = [{
    `ins` `(` $dy `,` $x `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

#endif // NNCC_DIALECT_NNK_IR_NNKLINEAROPS_TD
