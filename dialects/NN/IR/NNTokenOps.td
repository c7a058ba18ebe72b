//===- NNTokenOps.td - embeddings, positions, tokens -------*- tablegen -*-===//
//
// Token ids in: embedding lookups, sinusoidal / learned / axial positions,
// ELECTRA's token masking and Gumbel-max sampling, with the backward
// helpers of the embedding and the axial positions.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNTOKENOPS_TD
#define NNCC_DIALECT_NN_IR_NNTOKENOPS_TD

include "dialects/NN/IR/NNOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NN_EmbeddingOp : NN_Op<"embedding", [Pure]> {
  let summary = "table lookup";
  let description = [{
    Gathers rows of `table` [V, E] at the integer `indices` [...], giving
    [..., E]. With `padding_idx` p >= 0 (PyTorch's `nn.Embedding(padding_idx=)`,
    Hugging Face's `pad_token_id`), row p gets no gradient: it is looked up
    as any row but stays as it is in training. -1 (the default): none.

    ```mlir
    %e = nn.embedding %ids, %table {padding_idx = 0 : i64} : (!nn.tensor<[B, T], i64>, !nn.tensor<[1000, 64], f32>) -> !nn.tensor<[B, T, 64], f32>
    ```
  }];
  let arguments = (ins NN_IndexTensor:$indices, NN_FloatTensor:$table,
                       DefaultValuedAttr<NN_I64Attr, "-1">:$padding_idx);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
  let hasVerifier = 1;
}

def NN_MaskTokensOp : NN_Op<"mask_tokens", [Pure]> {
  let summary = "masks floor(p * n) random positions of each row of tokens";
  let description = [{
    Token masking of ELECTRA / BERT pretraining (seed thesis §4.4.4,
    Algorithm 2, steps 1-3): in each row (the last dim, n tokens) of
    `tokens`, floor(`p` * n) positions chosen uniformly without replacement
    are replaced by `mask_id` in `masked`; `mask` is true exactly there. The
    choice is a function of `seed` and the training step (Philox, like
    dropout), so a backward pass or a reference can reproduce it; it is made
    in inference as well. No gradient flows through either result.

    ```mlir
    %masked, %mask = nn.mask_tokens %tokens {p = 1.5e-01 : f64, mask_id = 103 : i64, seed = 3 : i64} : (!nn.tensor<[B, T], i32>) -> (!nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i1>)
    ```
  }];
  let arguments = (ins NN_IndexTensor:$tokens, NN_F64Attr:$p,
                       NN_I64Attr:$mask_id,
                       DefaultValuedAttr<NN_I64Attr, "0">:$seed);
  let results = (outs NN_IndexTensor:$masked, NN_BoolTensor:$mask);
  let assemblyFormat = NN_FunctionalFormat;
  let hasVerifier = 1;
}

def NN_SampleOp : NN_Op<"sample", [Pure]> {
  let summary = "draws a class from softmax(logits) by the Gumbel-max trick";
  let description = [{
    For each row of `logits` [..., V], the index argmax_v (logits[v] + g_v)
    with independent Gumbel noise g_v (seeded Philox, a function of `seed`
    and the training step): a sample from softmax(logits) (ELECTRA's
    generator sample, seed thesis Algorithm 2 step 5). The result [...] is
    i32 and carries no gradient. With the optional `rows` mask [...] only the
    rows where it is true are drawn; the others hold 0.

    ```mlir
    %s = nn.sample %logits {seed = 4 : i64} : (!nn.tensor<[B, T, 1000], f32>) -> !nn.tensor<[B, T], i32>
    %t = nn.sample %logits, %mask {seed = 5 : i64} : (!nn.tensor<[B, T, 1000], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], i32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, Optional<NN_BoolTensor>:$rows,
                       DefaultValuedAttr<NN_I64Attr, "0">:$seed);
  let results = (outs NN_IndexTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_SinusoidalPositionOp : NN_Op<"sinusoidal_position", [Pure]> {
  let summary = "adds the sinusoidal position encoding";
  let description = [{
    `x` [B, T, E] (E even) plus the fixed encoding of Vaswani et al.:
    PE(t, 2i) = sin(t / 10000^(2i/E)), PE(t, 2i+1) = cos(t / 10000^(2i/E)).

    ```mlir
    %y = nn.sinusoidal_position %x : (!nn.tensor<[B, T, 64], f32>) -> !nn.tensor<[B, T, 64], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_LearnedPositionOp : NN_Op<"learned_position", [Pure]> {
  let summary = "adds a learned position embedding";
  let description = [{
    `x` [B, T, E] plus the first T rows of `table` [P, E] (T <= P when both
    are static).

    ```mlir
    %y = nn.learned_position %x, %pos : (!nn.tensor<[B, T, 64], f32>, !nn.tensor<[512, 64], f32>) -> !nn.tensor<[B, T, 64], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$table);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_AxialPositionOp : NN_Op<"axial_position", [Pure]> {
  let summary = "adds an axial position embedding (Reformer, Kitaev et al.)";
  let description = [{
    `x` [B, T, E] plus the embedding of position t on an (n1, n2) grid:
    the concatenation of `rows[t / n2]` (d1 values) and `cols[t % n2]`
    (d2 values), E = d1 + d2, T <= n1 * n2 (seed thesis §5.3.2). `rows` is
    [n1, 1, d1] and `cols` [1, n2, d2], as Hugging Face's
    `ReformerAxialPositionEmbeddings` stores them; both must be static.

    ```mlir
    %y = nn.axial_position %x, %rows, %cols : (!nn.tensor<[B, T, 64], f32>, !nn.tensor<[8, 1, 16], f32>, !nn.tensor<[1, 16, 48], f32>) -> !nn.tensor<[B, T, 64], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$rows,
                       NN_FloatTensor:$cols);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NN_EmbeddingGradOp : NN_Op<"embedding_grad", [Pure]> {
  let summary = "table adjoint of nn.embedding (scatter-add of rows)";
  let description = [{
    A zero table [`num_embeddings`, E] to which row `dy[p]` is added at
    `indices[p]` for every position p (indices [...], dy [..., E]), except
    at row `padding_idx` when it is >= 0 (that row stays zero).

    ```mlir
    %dt = nn.embedding_grad %ids, %dy {num_embeddings = 1000 : i64} : (!nn.tensor<[B, T], i64>, !nn.tensor<[B, T, 64], f32>) -> !nn.tensor<[1000, 64], f32>
    ```
  }];
  let arguments = (ins NN_IndexTensor:$indices, NN_FloatTensor:$dy,
                       NN_I64Attr:$num_embeddings,
                       DefaultValuedAttr<NN_I64Attr, "-1">:$padding_idx);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
  let hasVerifier = 1;
}

def NN_AxialPositionGradOp : NN_Op<"axial_position_grad", [Pure]> {
  let summary = "parameter adjoints of nn.axial_position";
  let description = [{
    For `dy` [B, T, d1 + d2] and an (n1, n2) = `shape` grid: `drows`
    [n1, 1, d1], row i the sum of dy[b, t, :d1] over b and t < T with
    t / n2 = i, and `dcols` [1, n2, d2], row j the sum of dy[b, t, d1:] over
    t % n2 = j.

    ```mlir
    %dr, %dc = nn.axial_position_grad %dy {shape = array<i64: 8, 16>, d1 = 16 : i64} : (!nn.tensor<[B, T, 64], f32>) -> (!nn.tensor<[8, 1, 16], f32>, !nn.tensor<[1, 16, 48], f32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$dy, DenseI64ArrayAttr:$shape,
                       NN_I64Attr:$d1);
  let results = (outs NN_FloatTensor:$drows, NN_FloatTensor:$dcols);
  let assemblyFormat = NN_FunctionalFormat;
}

#endif // NNCC_DIALECT_NN_IR_NNTOKENOPS_TD
