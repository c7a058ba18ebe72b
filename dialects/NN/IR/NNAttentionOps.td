//===- NNAttentionOps.td - multi-head attention ------------*- tablegen -*-===//
//
// nn.attention with its dense, dilated sliding-window (+ global tokens),
// local and LSH patterns, and its fused backward.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNATTENTIONOPS_TD
#define NNCC_DIALECT_NN_IR_NNATTENTIONOPS_TD

include "dialects/NN/IR/NNOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NN_AttentionOp : NN_ReserveOp<"attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "multi-head self-attention (dense, dilated or LSH)";
  let description = [{
    Self-attention over `x` [B, T, E] with `num_heads` heads, as
    `torch.nn.MultiheadAttention` with `batch_first`. `kind` selects the
    pattern (`#nn.dense`, `#nn.dilated<...>`, `#nn.lsh<...>`,
    `#nn.local<...>`). The heads together are A wide (A = num_heads x head
    size, divisible by num_heads), the out-projection's input width: A = E
    as in PyTorch, or another width (Hugging Face's Reformer,
    `num_attention_heads x attention_head_size` != `hidden_size`).

    - `in_proj_weight` is [3A, E] (query, key, value) or, for LSH, [2A, E]
      (shared query/key, value), [6A, E] for Longformer's convention;
      `in_proj_bias` is [3A], [2A] or [6A].
    - `out_proj_weight` [E, A], `out_proj_bias` [E].
    - `key_padding_mask` (i1 [B, T]) marks padded keys.
    - `rotations` (float [num_heads, A / num_heads, hashes, buckets / 2] in
      convention hf, [hashes, A / num_heads, buckets / 2] in convention
      nncc) fixes the random LSH rotations; only with `#nn.lsh`.
    - `global_mask` (i1 [B, T]; only with `#nn.dilated` and no `global`
      list) marks each example's global tokens (Hugging Face's
      `global_attention_mask`); a padded position is never global.

    `causal` masks future keys; `dropout` (in [0, 1)) applies to attention
    weights with `seed`. The result is [B, T, E].
  }] # NN_ReserveDoc # [{

    ```mlir
    %y = nn.attention %x, %w_in in_bias %b_in out %w_out out_bias %b_out {kind = #nn.dense, num_heads = 4 : i64} : (...) -> !nn.tensor<[B, T, 64], f32>
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x,
    NN_FloatTensor:$in_proj_weight,
    Optional<NN_FloatTensor>:$in_proj_bias,
    NN_FloatTensor:$out_proj_weight,
    Optional<NN_FloatTensor>:$out_proj_bias,
    Optional<NN_BoolTensor>:$key_padding_mask,
    Optional<NN_FloatTensor>:$rotations,
    Optional<NN_BoolTensor>:$global_mask,
    NN_I64Attr:$num_heads,
    NN_AttentionKindAttrInterface:$kind,
    DefaultValuedAttr<BoolAttr, "false">:$causal,
    DefaultValuedAttr<NN_F64Attr, "0.0">:$dropout,
    DefaultValuedAttr<NN_I64Attr, "0">:$seed
  );
  let results = (outs NN_FloatTensor:$result,
                      Optional<NN_ReserveType>:$reserve);
  let assemblyFormat = [{
    $x `,` $in_proj_weight (`in_bias` $in_proj_bias^)?
    `out` $out_proj_weight (`out_bias` $out_proj_bias^)?
    (`mask` $key_padding_mask^)? (`rotations` $rotations^)?
    (`global_mask` $global_mask^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// A, the heads' total width (out_proj_weight's columns).
    ::nncc::Dim getHeadsWidth() {
      return ::llvm::cast<::nncc::nn::TensorType>(getOutProjWeight().getType()).getDim(1);
    }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NN_AttentionGradOp : NN_Op<"attention_grad", [
    Pure, AttrSizedOperandSegments]> {
  let summary = "fused backward of nn.attention";
  let description = [{
    Backward of `nn.attention` with the same operands and attributes, given
    `dy` [B, T, E]. With `reserve` (the `reserve` result of the paired
    `nn.attention`, which must have the same kind, num_heads, causal,
    dropout and seed) the backward reads what that forward kept (its packed
    projection, output and log-sum-exp). Without it only `x` is kept from
    the forward pass: the kernel recomputes the projections and, block by
    block, the attention
    probabilities in the forward's pattern — flash-style for `#nn.dense`
    (never an N x N matrix), banded for `#nn.dilated` (plus the global
    rows/columns), and for `#nn.lsh` within the same buckets and chunks as
    the forward (the hash assignment, from `rotations` or the seeded
    generator, is a constant: no gradient flows through it, as in Reformer);
    gradients flow through the attention weights. Attention dropout reuses
    the forward's mask (same `seed`). Results: `dx`, then the gradients of
    `in_proj_weight`, `in_proj_bias` (if given), `out_proj_weight`,
    `out_proj_bias` (if given), in that order.

    ```mlir
    %dx, %dwin, %dwout = nn.attention_grad %x, %w_in out %w_out grad %dy {kind = #nn.dense, num_heads = 4 : i64} : (...) -> (...)
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x,
    NN_FloatTensor:$in_proj_weight,
    Optional<NN_FloatTensor>:$in_proj_bias,
    NN_FloatTensor:$out_proj_weight,
    Optional<NN_FloatTensor>:$out_proj_bias,
    Optional<NN_BoolTensor>:$key_padding_mask,
    Optional<NN_FloatTensor>:$rotations,
    Optional<NN_BoolTensor>:$global_mask,
    NN_FloatTensor:$dy,
    Optional<NN_ReserveType>:$reserve,
    NN_I64Attr:$num_heads,
    NN_AttentionKindAttrInterface:$kind,
    DefaultValuedAttr<BoolAttr, "false">:$causal,
    DefaultValuedAttr<NN_F64Attr, "0.0">:$dropout,
    DefaultValuedAttr<NN_I64Attr, "0">:$seed
  );
  let results = (outs NN_FloatTensor:$dx, Variadic<NN_FloatTensor>:$dparams);
  let assemblyFormat = [{
    $x `,` $in_proj_weight (`in_bias` $in_proj_bias^)?
    `out` $out_proj_weight (`out_bias` $out_proj_bias^)?
    (`mask` $key_padding_mask^)? (`rotations` $rotations^)?
    (`global_mask` $global_mask^)? `grad` $dy
    (`reserve` $reserve^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// A, the heads' total width (out_proj_weight's columns).
    ::nncc::Dim getHeadsWidth() {
      return ::llvm::cast<::nncc::nn::TensorType>(getOutProjWeight().getType()).getDim(1);
    }
  }];
  let hasVerifier = 1;
}

#endif // NNCC_DIALECT_NN_IR_NNATTENTIONOPS_TD
