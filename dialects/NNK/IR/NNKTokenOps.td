//===- NNKTokenOps.td - embeddings, positions, tokens ------*- tablegen -*-===//
//
// Embedding lookups and their backward, sinusoidal and axial positions,
// token masking and sampling.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NNK_IR_NNKTOKENOPS_TD
#define NNCC_DIALECT_NNK_IR_NNKTOKENOPS_TD

include "dialects/NNK/IR/NNKOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NNK_EmbeddingOp : NNK_Op<"embedding"> {
  let summary = "row gather from a table";
  let description = [{
    out[..., :] = table[indices[...], :]; indices i32 or i64 `[...]`,
    table `[V, E]`, out `[..., E]`. An index outside [0, V) is an error
    (`NNCC_K_ERANGE`), nothing is written. `nncc_embedding{,_i32}_*`.
  }];
  let arguments = (ins NNK_In<NNK_IndexBuffer>:$indices,
                       NNK_In<NNK_FloatBuffer>:$table,
                       NNK_Out<NNK_FloatBuffer>:$out);
  let assemblyFormat = [{
    `ins` `(` $indices `,` $table `)` `outs` `(` $out `)` attr-dict `:`
    qualified(type(operands))
  }];
}

def NNK_SinusoidalPositionOp : NNK_Op<"sinusoidal_position"> {
  let summary = "out = x + PE(T, E) (Vaswani et al.)";
  let description = [{
    x and out `[B, T, E]`, E even. `nncc_sinusoidal_position_*`.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$x, NNK_Out<NNK_FloatBuffer>:$out);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_AxialPositionOp : NNK_Op<"axial_position"> {
  let summary = "out = x + the axial position embedding of rows and cols";
  let description = [{
    x and out `[B, T, d1 + d2]`, rows `[n1, 1, d1]`, cols `[1, n2, d2]`,
    T <= n1 * n2: out[b, t] = x[b, t] + [rows[t / n2], cols[t % n2]]
    (`nncc_axial_position_*`).
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$x, NNK_In<NNK_FloatBuffer>:$rows,
                       NNK_In<NNK_FloatBuffer>:$cols,
                       NNK_Out<NNK_FloatBuffer>:$out);
  let assemblyFormat = [{
    `ins` `(` $x `,` $rows `,` $cols `)` `outs` `(` $out `)` attr-dict `:`
    qualified(type(operands))
  }];
}

def NNK_AxialPositionGradOp : NNK_Op<"axial_position_grad"> {
  let summary = "the axial tables' adjoints: sums of dy per grid row and column";
  let description = [{
    dy `[B, T, d1 + d2]`; drows `[n1, 1, d1]` and dcols `[1, n2, d2]` are
    overwritten with the sums of dy's first d1 (last d2) columns over the
    batch and the positions t < T with t / n2 (t % n2) equal to the row
    (`nncc_axial_position_backward_*`).
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$dy,
                       NNK_Out<NNK_FloatBuffer>:$drows,
                       NNK_Out<NNK_FloatBuffer>:$dcols);
  let assemblyFormat = [{
    `ins` `(` $dy `)` `outs` `(` $drows `,` $dcols `)` attr-dict `:`
    qualified(type(operands))
  }];
}

def NNK_MaskTokensOp : NNK_Op<"mask_tokens"> {
  let summary = "masks floor(p * n) Philox-chosen positions of each token row";
  let description = [{
    tokens, masked and mask share the shape `[..., n]`: per row, the
    floor(p * n) positions with the smallest Philox keys (seed, step
    offset) hold `mask_id` in masked and 1 in mask; the rest copy tokens
    and hold 0 (`nncc_mask_tokens_i32/i64`; nncc/Kernels/TokenMath.h).
  }];
  let arguments = (ins NNK_In<NNK_IndexBuffer>:$tokens,
                       NNK_Out<NNK_IndexBuffer>:$masked,
                       NNK_Out<NNK_BoolBuffer>:$mask,
                       NNK_F64Attr:$p, NNK_I64Attr:$mask_id,
                       DefaultValuedAttr<NNK_I64Attr, "0">:$seed);
  let assemblyFormat = [{
    `ins` `(` $tokens `)` `outs` `(` $masked `,` $mask `)` attr-dict `:`
    qualified(type(operands))
  }];
}

def NNK_SampleOp : NNK_Op<"sample"> {
  let summary = "Gumbel-max draw of one class per row of logits";
  let description = [{
    logits `[..., V]`, out `[...]` (i32): out = argmax_v (logits[v] + g_v)
    with the Gumbel noise of (seed, step offset, row * V + v); rows where
    the optional `rows` mask `[...]` is 0 are not drawn and get 0
    (`nncc_sample_*`; nncc/Kernels/TokenMath.h).
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$logits,
                       NNK_In<Optional<NNK_BoolBuffer>>:$rows,
                       NNK_Out<NNK_IndexBuffer>:$out,
                       DefaultValuedAttr<NNK_I64Attr, "0">:$seed);
  let assemblyFormat = [{
    `ins` `(` $logits (`,` $rows^)? `)` `outs` `(` $out `)` attr-dict `:`
    qualified(type(operands))
  }];
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NNK_EmbeddingGradOp : NNK_GradOp<"embedding_grad"> {
  let summary = "scatter-add of dy rows into a zeroed table";
  let description = [{
    out [V, E] = 0, then dy's row p added at row indices[p], except at row
    `padding_idx` when it is >= 0 (PyTorch's padding_idx: that row gets no
    gradient).
  }];
  let arguments = (ins NNK_In<NNK_IndexBuffer>:$indices, NNK_In<NNK_FloatBuffer>:$dy,
                       NNK_Out<NNK_FloatBuffer>:$out,
                       DefaultValuedAttr<I64Attr, "-1">:$padding_idx);
  let assemblyFormat = [{
    `ins` `(` $indices `,` $dy `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
  let hasVerifier = 1;
}

#endif // NNCC_DIALECT_NNK_IR_NNKTOKENOPS_TD
