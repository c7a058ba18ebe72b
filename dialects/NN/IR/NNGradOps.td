//===- NNGradOps.td - nn ops of the backward pass ------------*- tablegen -*-===//
//
// Ops built by `nncc-autodiff` (docs/autodiff.md): the residual marker
// `nn.save`, small helpers for adjoints that existing nn ops cannot express
// (broadcast reduction, slice scatter, activation derivatives, ...), and one
// fused backward op per composite layer (recurrent BPTT, attention, ODE
// adjoint) so that the back ends can emit one kernel family per op.
// Included by NNOps.td; every op infers its result types.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNGRADOPS_TD
#define NNCC_DIALECT_NN_IR_NNGRADOPS_TD

//===----------------------------------------------------------------------===//
// Residuals and helpers
//===----------------------------------------------------------------------===//

def NN_SaveOp : NN_Op<"save", [Pure]> {
  let summary = "a forward value kept for the backward pass (a residual)";
  let description = [{
    Marks `value` as stored between the forward and the backward pass; the
    result is the same tensor and is what the backward pass reads. All
    `nn.save` ops of a function sit at the forward/backward boundary, so the
    set of them is the memory the training step keeps alive across it.
    `index` numbers the residuals of a function; `rule` names the op kind
    whose backward rule needs it. A rematerialisation pass may replace a save
    by recomputing the value inside the backward pass.

    ```mlir
    %s = nn.save %h {index = 0 : i64, rule = "nn.tanh"} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    ```
  }];
  let arguments = (ins NN_TensorType:$value,
                       DefaultValuedAttr<NN_I64Attr, "0">:$index,
                       OptionalAttr<StrAttr>:$rule);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_ZerosOp : NN_Op<"zeros", [Pure]> {
  let summary = "a tensor of zeros of a given type";
  let description = [{
    The zero tensor of `type` (symbolic dims are bound at run time). Used
    for adjoints that are zero but must exist (pieces of `nn.split`,
    parameters that do not reach the loss).

    ```mlir
    %z = nn.zeros !nn.tensor<[B, 4], f32>
    ```
  }];
  let arguments = (ins TypeAttrOf<NN_TensorType>:$type);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = "$type attr-dict";
}

def NN_ReduceToShapeOp : NN_Op<"reduce_to_shape", [Pure]> {
  let summary = "sums an adjoint over the dims a broadcast expanded";
  let description = [{
    The adjoint of NumPy broadcasting: `x` has a shape that `type` broadcasts
    to; the result, of `type`, sums `x` over the leading dims `type` lacks
    and over the dims where `type` has size 1.

    ```mlir
    %db = nn.reduce_to_shape %dy {type = !nn.tensor<[4], f32>} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[4], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, TypeAttrOf<NN_TensorType>:$type);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_ReduceGradOp : NN_Op<"reduce_grad", [Pure]> {
  let summary = "spreads the adjoint of a reduction back over its input";
  let description = [{
    The adjoint of `nn.reduce_sum` / `nn.reduce_mean` (`mean`) of a tensor of
    `type` over `axes` (empty = all) with `keepdim`: `dy` (the reduction's
    shape) is broadcast back to `type`, and divided by the number of reduced
    elements when `mean`.

    ```mlir
    %dx = nn.reduce_grad %dy {axes = array<i64: 1>, mean = true, type = !nn.tensor<[B, 4], f32>} : (!nn.tensor<[B], f32>) -> !nn.tensor<[B, 4], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$dy, TypeAttrOf<NN_TensorType>:$type,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdim,
                       DefaultValuedAttr<BoolAttr, "false">:$mean);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_MaxGradOp : NN_Op<"max_grad", [Pure]> {
  let summary = "routes the adjoint of a max to the selected element";
  let description = [{
    The adjoint of `nn.max` of `x` along `axis` with `keepdim`: a tensor
    of `x`'s type that holds `dy` at the first maximal element of each row
    (the one `nn.argmax` selects; `torch.max(x, dim)`'s rule) and 0
    elsewhere. `dy` has `nn.max`'s result shape.

    ```mlir
    %dx = nn.max_grad %dy, %x {axis = -1 : i64} : (!nn.tensor<[B], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$dy, NN_FloatTensor:$x,
                       DefaultValuedAttr<NN_I64Attr, "-1">:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdim);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_TopkGradOp : NN_Op<"topk_grad", [Pure]> {
  let summary = "scatters the adjoint of topk's values to their indices";
  let description = [{
    The adjoint of `nn.topk`'s values along `axis`: a tensor of `dy`'s
    element type and shape, but `size` along `axis` (the size of topk's
    input there), that holds `dy` at the positions `indices` (topk's i32
    indices, of `dy`'s shape) name and 0 elsewhere.

    ```mlir
    %dx = nn.topk_grad %dy, %i {axis = -1 : i64, size = 10 : i64} : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 3], i32>) -> !nn.tensor<[B, 10], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$dy, NN_IndexTensor:$indices,
                       DefaultValuedAttr<NN_I64Attr, "-1">:$axis,
                       NN_I64Attr:$size);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_SliceGradOp : NN_Op<"slice_grad", [Pure]> {
  let summary = "scatters the adjoint of a slice into zeros";
  let description = [{
    The adjoint of `nn.slice` with the same `starts`, `stops`, `steps` and
    `squeeze` applied to a tensor of `type`: a zero tensor of `type` whose
    sliced positions hold `dy`. `dy` has the rank of the slice's result; its
    extent along each dim gives the number of positions written (so a slice
    of a table [P, E] by a run-time length T can be scattered back).

    ```mlir
    %dx = nn.slice_grad %dy {starts = array<i64: 0, -1>, stops = array<i64: 9223372036854775807, 9223372036854775807>, steps = array<i64: 1, 1>, squeeze = array<i64: 1>, type = !nn.tensor<[B, T], f32>} : (!nn.tensor<[B], f32>) -> !nn.tensor<[B, T], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$dy, TypeAttrOf<NN_TensorType>:$type,
                       DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$stops,
                       DenseI64ArrayAttr:$steps,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$squeeze);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

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

def NN_LayerNormGradOp : NN_Op<"layer_norm_grad", [Pure]> {
  let summary = "adjoint of nn.layer_norm for x and weight";
  let description = [{
    Recomputes the mean and reciprocal deviation of `x` [..., N] (with
    `eps`) and returns dx [..., N] and, when `weight` [N] is given, dweight
    [N] = sum(dy * x̂). (dbias is a plain `nn.reduce_sum` of dy.)

    ```mlir
    %dx, %dg = nn.layer_norm_grad %x weight %g grad %dy : (...) -> (!nn.tensor<[B, 64], f32>, !nn.tensor<[64], f32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, Optional<NN_FloatTensor>:$weight,
                       NN_FloatTensor:$dy,
                       DefaultValuedAttr<NN_F64Attr, "1.0e-5">:$eps);
  let results = (outs NN_FloatTensor:$dx, Variadic<NN_FloatTensor>:$dweight);
  let assemblyFormat = [{
    $x (`weight` $weight^)? `grad` $dy attr-dict `:`
    functional-type(operands, results)
  }];
}

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

//===----------------------------------------------------------------------===//
// Recurrent backward (BPTT), one fused op per layer stack
//===----------------------------------------------------------------------===//

defvar NN_RecurrentGradDoc = [{
    Backpropagation through time over all layers and directions of the
    forward op with the same attributes and forward operands (`x`, `h0`,
    `c0`, `lengths`, `weights`). The adjoints `dy` [B, T, D*H], `dh_n` and
    `dc_n` [L*D, B, H] are optional (absent = zero). With `reserve` (the
    `reserve` result of the paired forward op, which must be `fwd` with
    the same hidden_size, num_layers, bidirectional and has_bias) the
    kernel reads the layer outputs and gate activations that forward kept;
    without it, per layer (last first) and direction it re-runs the forward
    scan to rebuild them in its own workspace. Either way it then runs the
    reverse scan: the per-step gate adjoints
    are accumulated into the weight gradients by GEMMs over all steps, never
    by per-step copies of the weights. With `lengths`, steps at or past a
    sequence's length pass the adjoint of the state through unchanged, as
    the forward passes the state. Results: `dx` (type of x), `dh0` (and
    `dc0`) [L*D, B, H] (the adjoint of the zero initial state when `h0` is
    absent), and one gradient per weight, in `_flat_weights` order.
    `checkpoint_every` (>= 1) must equal the reserve's forward op's: with
    it, the reserve holds the layer outputs and (LSTM) every
    `checkpoint_every`-th cell state, and the gates are recomputed one
    segment of that many steps at a time. `checkpoint_snapshots` (>= 1)
    likewise must equal the forward's: the reserve holds the layer outputs
    only and the gradient reverses the scan step by step by the binomial
    schedule with at most that many cell-state snapshots.
}];

class NN_RecurrentGradOp<string mnemonic, string fwd, dag stateOperands,
                         dag adjointOperands, dag extraAttrs, dag stateResults>
    : NN_Op<mnemonic, [Pure, AttrSizedOperandSegments]> {
  let summary = "fused BPTT backward of " # fwd;
  let description = NN_RecurrentGradDoc;
  let arguments = !con((ins NN_FloatTensor:$x), stateOperands,
      (ins Optional<NN_IndexTensor>:$lengths,
           Variadic<NN_FloatTensor>:$weights),
      adjointOperands,
      (ins Optional<NN_ReserveType>:$reserve),
      (ins NN_I64Attr:$hidden_size,
           DefaultValuedAttr<NN_I64Attr, "1">:$num_layers,
           DefaultValuedAttr<BoolAttr, "false">:$bidirectional,
           DefaultValuedAttr<BoolAttr, "true">:$has_bias),
      extraAttrs,
      (ins OptionalAttr<NN_I64Attr>:$checkpoint_every,
           OptionalAttr<NN_I64Attr>:$checkpoint_snapshots));
  let results = !con((outs NN_FloatTensor:$dx), stateResults,
                     (outs Variadic<NN_FloatTensor>:$dweights));
  let hasVerifier = 1;
}

def NN_RNNGradOp : NN_RecurrentGradOp<"rnn_grad", "nn.rnn",
    (ins Optional<NN_FloatTensor>:$h0),
    (ins Optional<NN_FloatTensor>:$dy, Optional<NN_FloatTensor>:$dh_n),
    (ins DefaultValuedAttr<NN_NonlinearityAttr,
                           "::nncc::nn::Nonlinearity::tanh">:$nonlinearity),
    (outs NN_FloatTensor:$dh0)> {
  let assemblyFormat = [{
    $x (`h0` $h0^)? (`lengths` $lengths^)? `weights` `(` $weights `)`
    (`dy` $dy^)? (`dh_n` $dh_n^)? (`reserve` $reserve^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_LSTMGradOp : NN_RecurrentGradOp<"lstm_grad", "nn.lstm",
    (ins Optional<NN_FloatTensor>:$h0, Optional<NN_FloatTensor>:$c0),
    (ins Optional<NN_FloatTensor>:$dy, Optional<NN_FloatTensor>:$dh_n,
         Optional<NN_FloatTensor>:$dc_n),
    (ins DefaultValuedAttr<NN_F64Attr, "0.0">:$zoneout,
         DefaultValuedAttr<NN_I64Attr, "0">:$seed),
    (outs NN_FloatTensor:$dh0, NN_FloatTensor:$dc0)> {
  let assemblyFormat = [{
    $x (`h0` $h0^)? (`c0` $c0^)? (`lengths` $lengths^)?
    `weights` `(` $weights `)` (`dy` $dy^)? (`dh_n` $dh_n^)? (`dc_n` $dc_n^)?
    (`reserve` $reserve^)? attr-dict `:` functional-type(operands, results)
  }];
}

def NN_GRUGradOp : NN_RecurrentGradOp<"gru_grad", "nn.gru",
    (ins Optional<NN_FloatTensor>:$h0),
    (ins Optional<NN_FloatTensor>:$dy, Optional<NN_FloatTensor>:$dh_n),
    (ins DefaultValuedAttr<NN_GRUVariantAttr,
                           "::nncc::nn::GRUVariant::pytorch">:$variant),
    (outs NN_FloatTensor:$dh0)> {
  let assemblyFormat = [{
    $x (`h0` $h0^)? (`lengths` $lengths^)? `weights` `(` $weights `)`
    (`dy` $dy^)? (`dh_n` $dh_n^)? (`reserve` $reserve^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

defvar NN_CellGradDoc = [{
    Backward of one recurrent cell step: recomputes the gates from the
    forward operands and returns dx [B, I], dh [B, H] (and dc), then the
    gradients of w_ih, w_hh (and b_ih, b_hh when given). The adjoints of the
    new states are optional (absent = zero).
}];

class NN_CellGradOp<string mnemonic, string fwd, dag stateOperands,
                    dag adjointOperands, dag extraAttrs, dag stateResults>
    : NN_Op<mnemonic, [Pure, AttrSizedOperandSegments]> {
  let summary = "backward of one " # fwd # " step";
  let description = NN_CellGradDoc;
  let arguments = !con((ins NN_FloatTensor:$x), stateOperands,
      (ins NN_FloatTensor:$w_ih, NN_FloatTensor:$w_hh,
           Optional<NN_FloatTensor>:$b_ih, Optional<NN_FloatTensor>:$b_hh),
      adjointOperands, extraAttrs);
  let results = !con((outs NN_FloatTensor:$dx), stateResults,
                     (outs Variadic<NN_FloatTensor>:$dweights));
}

def NN_RNNCellGradOp : NN_CellGradOp<"rnn_cell_grad", "nn.rnn_cell",
    (ins NN_FloatTensor:$h), (ins Optional<NN_FloatTensor>:$dh_next),
    (ins DefaultValuedAttr<NN_NonlinearityAttr,
                           "::nncc::nn::Nonlinearity::tanh">:$nonlinearity),
    (outs NN_FloatTensor:$dh)> {
  let assemblyFormat = [{
    $x `,` $h `,` $w_ih `,` $w_hh (`bias` `(` $b_ih^ `,` $b_hh `)`)?
    (`dh_next` $dh_next^)? attr-dict `:` functional-type(operands, results)
  }];
}
def NN_LSTMCellGradOp : NN_CellGradOp<"lstm_cell_grad", "nn.lstm_cell",
    (ins NN_FloatTensor:$h, NN_FloatTensor:$c),
    (ins Optional<NN_FloatTensor>:$dh_next, Optional<NN_FloatTensor>:$dc_next),
    (ins), (outs NN_FloatTensor:$dh, NN_FloatTensor:$dc)> {
  let assemblyFormat = [{
    $x `,` $h `,` $c `,` $w_ih `,` $w_hh (`bias` `(` $b_ih^ `,` $b_hh `)`)?
    (`dh_next` $dh_next^)? (`dc_next` $dc_next^)? attr-dict `:`
    functional-type(operands, results)
  }];
}
def NN_GRUCellGradOp : NN_CellGradOp<"gru_cell_grad", "nn.gru_cell",
    (ins NN_FloatTensor:$h), (ins Optional<NN_FloatTensor>:$dh_next),
    (ins DefaultValuedAttr<NN_GRUVariantAttr,
                           "::nncc::nn::GRUVariant::pytorch">:$variant),
    (outs NN_FloatTensor:$dh)> {
  let assemblyFormat = [{
    $x `,` $h `,` $w_ih `,` $w_hh (`bias` `(` $b_ih^ `,` $b_hh `)`)?
    (`dh_next` $dh_next^)? attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Attention backward
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

//===----------------------------------------------------------------------===//
// ODE backward
//===----------------------------------------------------------------------===//

def NN_ODESolveGradOp : NN_Op<"odesolve_grad", [
    RecursiveMemoryEffects, RecursivelySpeculatable]> {
  let summary = "backward of nn.odesolve (adjoint method or through the steps)";
  let description = [{
    Gradients of an `nn.odesolve` from t0 to t1 (same `method`, `steps`,
    `rtol`, `atol`) given `a1` = dL/dh(t1).

    Region `dynamics` (t, h) -> f(t, h) is a copy of the forward dynamics.
    Region `vjp` (t, h, a) -> (a^T ∂f/∂h, a^T ∂f/∂θ_1, ..., a^T ∂f/∂θ_k) is
    its vector–Jacobian product, derived by differentiating the dynamics
    with the same per-op rules; θ_i are the parameters named by `params`
    (read inside the dynamics), in that order.

    - `adjoint = true` (Chen et al. 2018): `h` is the saved final state
      h(t1). The augmented state [h, a, a_θ] starts at [h(t1), a1, 0] and is
      integrated from t1 back to t0 with dh/dt = f, da/dt = -a^T ∂f/∂h,
      da_θ/dt = -a^T ∂f/∂θ: memory O(1) in the number of steps.
    - `adjoint = false`: `h` is the saved initial state h(t0). The forward
      steps are recomputed (states kept in the op's workspace) and the
      adjoint is propagated back through each solver step and stage: the
      exact gradient of the discretisation. Adaptive dopri5 keeps at most
      `max_steps` accepted steps (the forward's bound; more is a runtime
      error).

    Results: dh0 = a(t0) (type of `h`), then one gradient per `params`
    entry (types of the `vjp` yields after the first).
  }];
  let arguments = (ins
    NN_FloatTensor:$h, NN_FloatTensor:$t0, NN_FloatTensor:$t1,
    NN_FloatTensor:$a1,
    NN_ODEMethodAttr:$method,
    DefaultValuedAttr<NN_I64Attr, "0">:$steps,
    DefaultValuedAttr<NN_F64Attr, "1.0e-7">:$rtol,
    DefaultValuedAttr<NN_F64Attr, "1.0e-9">:$atol,
    DefaultValuedAttr<BoolAttr, "false">:$adjoint,
    DefaultValuedAttr<ConfinedAttr<NN_I64Attr, [IntPositive]>, "1000">:$max_steps,
    DefaultValuedAttr<ArrayAttr, "{}">:$params
  );
  let results = (outs NN_FloatTensor:$dh0, Variadic<NN_FloatTensor>:$dparams);
  let regions = (region SizedRegion<1>:$dynamics, SizedRegion<1>:$vjp);
  let assemblyFormat = [{
    `` $method $h `,` $t0 `,` $t1 `,` $a1 attr-dict `:`
    functional-type(operands, results) `dynamics` $dynamics `vjp` $vjp
  }];
  let hasRegionVerifier = 1;
}

def NN_ODERNNGradOp : NN_Op<"ode_rnn_grad", [
    RecursiveMemoryEffects, RecursivelySpeculatable]> {
  let summary = "backward of nn.ode_rnn (BPTT composed with the ODE rule)";
  let description = [{
    Backpropagation through time over the observations of an `nn.ode_rnn`
    (same attributes) given `dhs` [B, T, H] = dL/dhs. `hs` is the saved
    forward result. For t = T-1 down to 0: the cell's VJP at (x_t, h̃_t)
    (h̃_t, the state after the ODE segment, is recomputed by solving
    `dynamics` from hs[t-1], or h0 / zeros), then the segment's backward as
    in `nn.odesolve_grad` (`adjoint` selects the adjoint method or the
    solver steps) from times[t] back to times[t-1].

    Regions: `dynamics` (t, h) -> f (copy of the forward dynamics);
    `dynamics_vjp` (t, h, a) -> (a^T ∂f/∂h, a^T ∂f/∂θ for `dynamics_params`);
    `cell_vjp` (x_t, h, a) -> (a^T ∂c/∂x_t, a^T ∂c/∂h, a^T ∂c/∂φ for
    `cell_params`). Results: dx (type of x), dh0 [B, H], then the gradients
    of `dynamics_params`, then of `cell_params`.
  }];
  let arguments = (ins
    NN_FloatTensor:$x, NN_FloatTensor:$times, Optional<NN_FloatTensor>:$h0,
    NN_FloatTensor:$hs, NN_FloatTensor:$dhs,
    NN_I64Attr:$hidden_size,
    NN_ODEMethodAttr:$method,
    DefaultValuedAttr<NN_I64Attr, "0">:$steps,
    DefaultValuedAttr<NN_F64Attr, "1.0e-7">:$rtol,
    DefaultValuedAttr<NN_F64Attr, "1.0e-9">:$atol,
    DefaultValuedAttr<BoolAttr, "false">:$adjoint,
    DefaultValuedAttr<ConfinedAttr<NN_I64Attr, [IntPositive]>, "1000">:$max_steps,
    DefaultValuedAttr<ArrayAttr, "{}">:$dynamics_params,
    DefaultValuedAttr<ArrayAttr, "{}">:$cell_params
  );
  let results = (outs NN_FloatTensor:$dx, NN_FloatTensor:$dh0,
                      Variadic<NN_FloatTensor>:$dparams);
  let regions = (region SizedRegion<1>:$dynamics,
                        SizedRegion<1>:$dynamics_vjp,
                        SizedRegion<1>:$cell_vjp);
  let assemblyFormat = [{
    `` $method $x `,` $times (`h0` $h0^)? `hs` $hs `grad` $dhs attr-dict `:`
    functional-type(operands, results) `dynamics` $dynamics
    `dynamics_vjp` $dynamics_vjp `cell_vjp` $cell_vjp
  }];
  let hasRegionVerifier = 1;
}

#endif // NNCC_DIALECT_NN_IR_NNGRADOPS_TD
