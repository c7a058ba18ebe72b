//===- NNKAttentionOps.td - attention cores ----------------*- tablegen -*-===//
//
// The attention cores on a packed projection (dense flash, banded, LSH,
// local; docs/nnk-spec.md) and their fused backward.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NNK_IR_NNKATTENTIONOPS_TD
#define NNCC_DIALECT_NNK_IR_NNKATTENTIONOPS_TD

include "dialects/NNK/IR/NNKOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NNK_FlashAttentionOp : NNK_Op<"flash_attention", [AttrSizedOperandSegments]> {
  let summary = "dense attention, flash-style (online softmax, no T×T buffer)";
  let description = [{
    `qkv [B, T, 3E]` packs q, k, v in columns `[0,E)`, `[E,2E)`, `[2E,3E)`
    (the in-projection's output); head h owns columns `[h·dh, (h+1)·dh)`
    of each, dh = E / num_heads. `out [B, T, E]`. `mask [B, T]` (i1, true =
    padded key), `causal` masks keys j > i; `scale` 0 means 1/√dh.
    `dropout` > 0 (training functions only) drops attention weights with
    Philox(`seed`, step offset) and the counters of `nncc_attention_params`.
    The optional `lse` `[B, num_heads, T]` receives each query's
    log-sum-exp (training forwards whose gradient reuses them).
    `nncc_attention_*` with `NNCC_ATTN_DENSE` (ld_in = 3E) /
    `launch_flash_attention`.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$qkv,
    NNK_In<Optional<NNK_BoolBuffer>>:$mask,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_Out<Optional<NNK_FloatBuffer>>:$lse,
    NNK_I64Attr:$num_heads,
    DefaultValuedAttr<BoolAttr, "false">:$causal,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$scale,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$dropout,
    DefaultValuedAttr<NNK_I64Attr, "0">:$seed
  );
  let assemblyFormat = [{
    `ins` `(` $qkv `)` (`mask` `(` $mask^ `)`)? `outs` `(` $out `)`
    (`lse` `(` $lse^ `)`)? attr-dict `:` qualified(type(operands))
  }];
}

def NNK_BandedAttentionOp : NNK_Op<"banded_attention", [AttrSizedOperandSegments]> {
  let summary = "dilated sliding-window + global-token attention, O(T·w)";
  let description = [{
    Same packing as `nnk.flash_attention`. Query i attends key j iff
    `|i−j| ≤ (window/2)·dilation` and `(i−j) mod dilation = 0`, or i or j
    is global: in `global` (positions ≥ T ignored) or, per example, marked
    by `global_mask` `[B, T]` (not padded), intersected with causal/padding.
    `dropout`, `seed` and `lse` as for `nnk.flash_attention`.
    `convention` `"hf"` (nn.dilated's; Hugging Face's
    LongformerSelfAttention): `qkv` is `[B, T, 6E]`, the global queries'
    rows attend with the projections in columns `[3E, 6E)`, and a padded
    query's row is zero.
    `nncc_attention_*` with `NNCC_ATTN_DILATED` / `launch_dilated_attention_dyn`.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$qkv,
    NNK_In<Optional<NNK_BoolBuffer>>:$mask,
    NNK_In<Optional<NNK_BoolBuffer>>:$global_mask,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_Out<Optional<NNK_FloatBuffer>>:$lse,
    NNK_I64Attr:$num_heads,
    NNK_I64Attr:$window,
    DefaultValuedAttr<NNK_I64Attr, "1">:$dilation,
    DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$global,
    DefaultValuedAttr<BoolAttr, "false">:$causal,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$scale,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$dropout,
    DefaultValuedAttr<NNK_I64Attr, "0">:$seed,
    DefaultValuedAttr<StrAttr, "\"nncc\"">:$convention
  );
  let assemblyFormat = [{
    `ins` `(` $qkv `)` (`mask` `(` $mask^ `)`)? (`global_mask` `(` $global_mask^ `)`)?
    `outs` `(` $out `)` (`lse` `(` $lse^ `)`)? attr-dict `:` qualified(type(operands))
  }];
  let hasVerifier = 1;
}

def NNK_LSHAttentionOp : NNK_Op<"lsh_attention", [AttrSizedOperandSegments]> {
  let summary = "Reformer LSH attention: hash, sort, chunked attention, logsumexp";
  let description = [{
    `qkv [B, T, 2E]`: shared query/key in columns `[0,E)`, values in
    `[E,2E)`. Per hash round: bucket = argmax([xR; −xR]) with
    `rotations [hashes, dh, n_buckets/2]`, stable sort by (bucket,
    position), chunks of `chunk`, attention to own + previous chunk with
    unit-normalised keys and no self-attention unless nothing else is
    admissible; rounds combined by logsumexp (Reformer masking; see
    docs/kernels.md). Without `rotations` the op draws them N(0,1) from
    Philox(`seed`) with `n_buckets = 2^bitlength(2·(T/chunk)) / 2`
    (HuggingFace's rule, at least 2) into its workspace. `dropout` drops
    attention weights per hash round (counters of `nncc_attention_params`)
    with the same `seed`. `lse` (optional) receives the log-sum-exp of each
    query's combined weights (over the rounds). `nncc_attention_*` with
    `NNCC_ATTN_LSH`.

    `convention` is nn.lsh's: `"hf"` (the default; `NNCC_LSH_HF`: Hugging
    Face's `LSHSelfAttention`, rotations
    `[num_heads, dh, hashes, n_buckets/2]` per head, drawn that size when
    not given; one sorted sequence over the rounds with look-back across
    them, `scale` 0 meaning 1) or `"nncc"` (`NNCC_LSH_NNCC`: the semantics
    above, rotations shared by the heads). docs/kernels.md, "LSH".
    `pad_to_multiple` / `pad_above` (hf only) are nn.lsh's: ReformerModel's
    padding of T.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$qkv,
    NNK_In<Optional<NNK_BoolBuffer>>:$mask,
    NNK_In<Optional<NNK_FloatBuffer>>:$rotations,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_Out<Optional<NNK_FloatBuffer>>:$lse,
    NNK_I64Attr:$num_heads,
    NNK_I64Attr:$hashes,
    NNK_I64Attr:$chunk,
    DefaultValuedAttr<BoolAttr, "false">:$causal,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$scale,
    DefaultValuedAttr<NNK_I64Attr, "0">:$seed,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$dropout,
    DefaultValuedAttr<StrAttr, "\"hf\"">:$convention,
    DefaultValuedAttr<NNK_I64Attr, "0">:$pad_to_multiple,
    DefaultValuedAttr<NNK_I64Attr, "0">:$pad_above
  );
  let assemblyFormat = [{
    `ins` `(` $qkv `)` (`mask` `(` $mask^ `)`)? (`rotations` `(` $rotations^ `)`)?
    `outs` `(` $out `)` (`lse` `(` $lse^ `)`)? attr-dict `:`
    qualified(type(operands))
  }];
}

def NNK_LocalAttentionOp : NNK_Op<"local_attention", [AttrSizedOperandSegments]> {
  let summary = "chunked local attention (Reformer's LocalSelfAttention)";
  let description = [{
    Same packing as `nnk.flash_attention` (`qkv [B, T, 3E]`). With T >
    `chunk`, the queries of chunk c attend to the keys of chunks
    c − `chunks_before` … c + `chunks_after`, chunk indices wrapping around
    the sequence; with T ≤ `chunk`, to all T keys. Masked keys (`mask`,
    `causal` by absolute index) score −1e9. `scale` 0 means 1/√dh;
    `dropout`, `seed` and `lse` as for `nnk.flash_attention`;
    `pad_to_multiple` / `pad_above` as nnk.lsh_attention's.
    `nncc_attention_*` with `NNCC_ATTN_LOCAL`; CPU only.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$qkv,
    NNK_In<Optional<NNK_BoolBuffer>>:$mask,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_Out<Optional<NNK_FloatBuffer>>:$lse,
    NNK_I64Attr:$num_heads,
    NNK_I64Attr:$chunk,
    DefaultValuedAttr<NNK_I64Attr, "1">:$chunks_before,
    DefaultValuedAttr<NNK_I64Attr, "0">:$chunks_after,
    DefaultValuedAttr<NNK_I64Attr, "0">:$pad_to_multiple,
    DefaultValuedAttr<NNK_I64Attr, "0">:$pad_above,
    DefaultValuedAttr<BoolAttr, "false">:$causal,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$scale,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$dropout,
    DefaultValuedAttr<NNK_I64Attr, "0">:$seed
  );
  let assemblyFormat = [{
    `ins` `(` $qkv `)` (`mask` `(` $mask^ `)`)? `outs` `(` $out `)`
    (`lse` `(` $lse^ `)`)? attr-dict `:` qualified(type(operands))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NNK_AttentionGradOp : NNK_GradOp<"attention_grad", [AttrSizedOperandSegments]> {
  let summary = "backward of an attention core: d(packed projection)";
  let description = [{
    Given the packed in-projection `qkv` (as the forward core reads it) and
    `dout` `[B, T, E]` (adjoint of the core's output), writes `dqkv` (type
    of qkv). `kind` names the forward core (dense = flash, dilated =
    banded, lsh); the other attributes are the forward core op's. Recomputes the probabilities; with `dropout`
    the forward's mask (same `seed` and step offset). With `saved_out` and
    `saved_lse` (the forward core's output and log-sum-exp, kept by a
    training forward) nothing of the forward is recomputed; otherwise the
    optional `core` output `[B, T, E]` receives the forward core's output,
    recomputed on the way (what the out-projection's weight gradient needs).
    `convention` (kind lsh only) is the forward's: `"hf"` or `"nncc"`, and
    sets the rotations' layout as nnk.lsh_attention's. `global_mask` and
    `dilated_convention` (kind dilated only) are nnk.banded_attention's
    `global_mask` and `convention` (`"hf"`: `dqkv` also receives the
    gradients of the global projections, columns `[3E, 6E)`). `chunk`,
    `chunks_before` and `chunks_after` (kind local) are
    nnk.local_attention's; `chunk` is also kind lsh's, and so are
    `pad_to_multiple` and `pad_above` (nnk.lsh_attention's).
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$qkv,
    NNK_In<Optional<NNK_BoolBuffer>>:$mask,
    NNK_In<Optional<NNK_FloatBuffer>>:$rotations,
    NNK_In<Optional<NNK_BoolBuffer>>:$global_mask,
    NNK_In<NNK_FloatBuffer>:$dout,
    NNK_In<Optional<NNK_FloatBuffer>>:$saved_out,
    NNK_In<Optional<NNK_FloatBuffer>>:$saved_lse,
    NNK_Out<NNK_FloatBuffer>:$dqkv,
    NNK_Out<Optional<NNK_FloatBuffer>>:$core,
    NNK_AttentionKindAttr:$kind,
    NNK_I64Attr:$num_heads,
    DefaultValuedAttr<BoolAttr, "false">:$causal,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$scale,
    DefaultValuedAttr<NNK_I64Attr, "0">:$window,
    DefaultValuedAttr<NNK_I64Attr, "1">:$dilation,
    DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$global,
    DefaultValuedAttr<NNK_I64Attr, "0">:$hashes,
    DefaultValuedAttr<NNK_I64Attr, "0">:$chunk,
    DefaultValuedAttr<NNK_I64Attr, "0">:$seed,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$dropout,
    DefaultValuedAttr<StrAttr, "\"hf\"">:$convention,
    DefaultValuedAttr<StrAttr, "\"nncc\"">:$dilated_convention,
    DefaultValuedAttr<NNK_I64Attr, "1">:$chunks_before,
    DefaultValuedAttr<NNK_I64Attr, "0">:$chunks_after,
    DefaultValuedAttr<NNK_I64Attr, "0">:$pad_to_multiple,
    DefaultValuedAttr<NNK_I64Attr, "0">:$pad_above);
  let hasVerifier = 1;
  let assemblyFormat = [{
    `ins` `(` $qkv `,` $dout `)` (`mask` `(` $mask^ `)`)?
    (`rotations` `(` $rotations^ `)`)? (`global_mask` `(` $global_mask^ `)`)?
    (`saved` `(` $saved_out^ `,` $saved_lse `)`)? `outs` `(` $dqkv `)`
    (`core` `(` $core^ `)`)? attr-dict `:`
    qualified(type(operands))
  }];
}

#endif // NNCC_DIALECT_NNK_IR_NNKATTENTIONOPS_TD
