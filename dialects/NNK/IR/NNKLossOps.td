//===- NNKLossOps.td - losses and fused output heads -------*- tablegen -*-===//
//
// Losses, the fused linear + cross-entropy and linear + sample heads, and
// the losses' backward.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NNK_IR_NNKLOSSOPS_TD
#define NNCC_DIALECT_NNK_IR_NNKLOSSOPS_TD

include "dialects/NNK/IR/NNKOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NNK_LossOp : NNK_Op<"loss"> {
  let summary = "mean-reduced loss into a scalar buffer";
  let description = [{
    `mse(pred, target)`, `cross_entropy(logits [..., C], target i32/i64
    [...], ignore_index)`, `bce_with_logits(logits, target, pos_weight?
    [C])`; out `[]`. `nncc_mse_loss_*`, `nncc_cross_entropy_*`,
    `nncc_bce_with_logits_*` (i32 targets widened by the emitter).
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$input,
    NNK_In<NNK_Buffer>:$target,
    NNK_In<Optional<NNK_FloatBuffer>>:$pos_weight,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_LossKindAttr:$kind,
    DefaultValuedAttr<NNK_I64Attr, "-100">:$ignore_index
  );
  let assemblyFormat = [{
    `ins` `(` $input `,` $target `)` (`pos_weight` `(` $pos_weight^ `)`)?
    `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_LinearSampleOp : NNK_Op<"linear_sample", [AttrSizedOperandSegments]> {
  let summary = "chunked linear + Gumbel-max sampling of the drawn rows";
  let description = [{
    x `[..., K]` (N rows), weight `[V, K]`, bias `[V]`, rows i1 `[...]`,
    out i32 `[...]`: `nnk.sample` of the logits x weight^T + bias with the
    same `seed` and noise, computed for the drawn rows only, in chunks of
    `nncc_linear_ce_chunk_rows(N, V)` rows through a workspace of
    `nncc_linear_sample_workspace_size(N, K, V, elem)` bytes
    (`nncc_linear_sample_*`). CPU only (training functions).
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$x,
    NNK_In<NNK_FloatBuffer>:$weight,
    NNK_In<Optional<NNK_FloatBuffer>>:$bias,
    NNK_In<Optional<NNK_BoolBuffer>>:$rows,
    NNK_Out<NNK_IndexBuffer>:$out,
    DefaultValuedAttr<NNK_I64Attr, "0">:$seed
  );
  let assemblyFormat = [{
    `ins` `(` $x `,` $weight (`,` `bias` $bias^)? (`,` `rows` $rows^)? `)`
    `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_LinearCrossEntropyOp : NNK_Op<"linear_cross_entropy",
                                      [AttrSizedOperandSegments]> {
  let summary = "chunked linear + softmax cross-entropy with its unit-adjoint gradients";
  let description = [{
    x `[..., K]` (N rows), weight `[V, K]`, target i32/i64 `[...]`, bias
    `[V]`; writes loss `[]` (mean over the targets != `ignore_index`),
    dx `[..., K]`, dweight `[V, K]`, dbias `[V]` (the gradients for a unit
    loss adjoint) and, when present, the logits `[..., V]`. The kernel
    (`nncc_linear_cross_entropy_*`) walks the rows in chunks of
    `nncc_linear_ce_chunk_rows(N, V)`: per chunk one GEMM for the logits
    into a workspace of chunk × V values, the softmax gradient in place,
    then one GEMM for the chunk's dx rows and one accumulating dweight.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$x,
    NNK_In<NNK_FloatBuffer>:$weight,
    NNK_In<NNK_IndexBuffer>:$target,
    NNK_In<Optional<NNK_FloatBuffer>>:$bias,
    NNK_Out<NNK_FloatBuffer>:$loss,
    NNK_Out<NNK_FloatBuffer>:$dx,
    NNK_Out<NNK_FloatBuffer>:$dweight,
    NNK_Out<NNK_FloatBuffer>:$dbias,
    NNK_Out<Optional<NNK_FloatBuffer>>:$logits,
    DefaultValuedAttr<NNK_I64Attr, "-100">:$ignore_index
  );
  let assemblyFormat = [{
    `ins` `(` $x `,` $weight `,` $target `)` (`bias` `(` $bias^ `)`)?
    `outs` `(` $loss `,` $dx `,` $dweight `,` $dbias `)`
    (`logits` `(` $logits^ `)`)? attr-dict `:` qualified(type(operands))
  }];
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NNK_LossGradOp : NNK_GradOp<"loss_grad"> {
  let summary = "d loss / d input of a mean-reduced loss, times dloss";
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$input, NNK_In<NNK_Buffer>:$target,
    NNK_In<NNK_FloatBuffer>:$dloss,
    NNK_In<Optional<NNK_FloatBuffer>>:$pos_weight,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_LossKindAttr:$kind,
    DefaultValuedAttr<NNK_I64Attr, "-100">:$ignore_index);
  let assemblyFormat = [{
    `ins` `(` $input `,` $target `,` $dloss `)` (`pos_weight` `(` $pos_weight^ `)`)?
    `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

#endif // NNCC_DIALECT_NNK_IR_NNKLOSSOPS_TD
