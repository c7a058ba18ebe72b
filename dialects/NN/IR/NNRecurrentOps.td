//===- NNRecurrentOps.td - recurrent layers and cells ------*- tablegen -*-===//
//
// The recurrent layers (PyTorch's conventions and _flat_weights layout),
// their single-step cells, zoneout, and one fused BPTT backward op per
// layer stack and per cell.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNRECURRENTOPS_TD
#define NNCC_DIALECT_NN_IR_NNRECURRENTOPS_TD

include "dialects/NN/IR/NNOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NN_ZoneoutOp : NN_Op<"zoneout", [Pure]> {
  let summary = "zoneout regularisation of a recurrent state";
  let description = [{
    In training, keeps each element of `prev_state` with probability `p`
    (in [0, 1)) instead of taking `new_state`; at inference (and in
    `nn.eval_mode` training functions) zoneout is off: the result is
    `new_state`. Both states have the same type, which is the result type.
    The mask is a function of `seed` and the training step (Philox, the
    same draw in the backward).

    ```mlir
    %h = nn.zoneout %new, %prev {p = 1.0e-01 : f64} : (!nn.tensor<[B, 8], f32>, !nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$new_state, NN_FloatTensor:$prev_state,
                       DefaultValuedAttr<NN_F64Attr, "0.0">:$p,
                       DefaultValuedAttr<NN_I64Attr, "0">:$seed);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
  let hasVerifier = 1;
}

defvar NN_RecurrentWeightsDoc = [{
    PyTorch conventions: `x` is [B, T, I] (batch first), states are
    [L*D, B, H] with D = 2 if `bidirectional` else 1 and L = `num_layers`.
    `lengths` (i32/i64 [B]) gives each sequence's true length (packed
    sequences). `weights` follow PyTorch's `_flat_weights` order: for each
    layer l and direction d, `weight_ih` [G*H, in_l], `weight_hh` [G*H, H]
    and, with `has_bias`, `bias_ih` [G*H] and `bias_hh` [G*H]; in_0 = I and
    in_l = D*H for l > 0. Results: `y` [B, T, D*H] and `h_n` [L*D, B, H].
}];

defvar NN_CheckpointDoc = [{

    `checkpoint_every` (optional, >= 1; the same on this op and its gradient
    op when they share a reserve) asks for BPTT checkpointing: the reserve
    keeps each layer's output sequence and, for the LSTM, the cell state
    every `checkpoint_every` steps instead of every step's gates, and the
    gradient recomputes the gates one segment of that many steps at a time.
    Without a reserve it has no effect. Absent: every step's gates are kept.

    `checkpoint_snapshots` (optional, >= 1; exclusive with
    `checkpoint_every`, the same on this op and its gradient op) asks for
    the binomial (Griewank-Walther Revolve) schedule instead: the reserve
    keeps only each layer's output sequence, and the gradient reverses each
    layer's scan one step at a time, keeping at most that many LSTM cell
    states and recomputing the forward steps between them by the binomial
    schedule (T <= C(s + 1 + r, s + 1) steps with r recomputation sweeps).
}];

def NN_RNNOp : NN_ReserveOp<"rnn", [Pure, AttrSizedOperandSegments]> {
  let summary = "multi-layer Elman RNN (torch.nn.RNN)";
  let description = [{
    h_t = nonlinearity(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh) with G = 1.
  }] # NN_RecurrentWeightsDoc # NN_ReserveDoc # NN_CheckpointDoc # [{
    ```mlir
    %y, %hn = nn.rnn %x weights(%wih, %whh, %bih, %bhh) {hidden_size = 16 : i64} : (...) -> (!nn.tensor<[B, T, 16], f32>, !nn.tensor<[1, B, 16], f32>)
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x,
    Optional<NN_FloatTensor>:$h0,
    Optional<NN_IndexTensor>:$lengths,
    Variadic<NN_FloatTensor>:$weights,
    NN_I64Attr:$hidden_size,
    DefaultValuedAttr<NN_I64Attr, "1">:$num_layers,
    DefaultValuedAttr<BoolAttr, "false">:$bidirectional,
    DefaultValuedAttr<BoolAttr, "true">:$has_bias,
    DefaultValuedAttr<NN_NonlinearityAttr,
                      "::nncc::nn::Nonlinearity::tanh">:$nonlinearity
,
    OptionalAttr<NN_I64Attr>:$checkpoint_every,
    OptionalAttr<NN_I64Attr>:$checkpoint_snapshots
  );
  let results = (outs NN_FloatTensor:$y, NN_FloatTensor:$h_n,
                      Optional<NN_ReserveType>:$reserve);
  let assemblyFormat = [{
    $x (`h0` $h0^)? (`lengths` $lengths^)? `weights` `(` $weights `)`
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_LSTMOp : NN_ReserveOp<"lstm", [Pure, AttrSizedOperandSegments]> {
  let summary = "multi-layer LSTM (torch.nn.LSTM), optionally with zoneout";
  let description = [{
    Gates i, f, g, o (G = 4). `c0` and the result `c_n` are the cell states,
    shaped like the hidden states. `zoneout` in [0, 1) applies zoneout with
    that probability to both states at each step (0 = off), in training-mode
    functions only (inference: off): per unit and step one Bernoulli(p)
    mask m keeps h and c, h_t = m h_{t-1} + (1 - m) h~_t, c_t likewise; m is
    drawn from Philox(`seed`, step offset + counter of (layer, direction,
    t, b, j)), so the backward regenerates the same masks.
  }] # NN_RecurrentWeightsDoc # NN_ReserveDoc # NN_CheckpointDoc # [{
    ```mlir
    %y, %hn, %cn = nn.lstm %x h0 %h0 c0 %c0 weights(%wih, %whh, %bih, %bhh) {hidden_size = 16 : i64} : (...) -> (...)
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x,
    Optional<NN_FloatTensor>:$h0,
    Optional<NN_FloatTensor>:$c0,
    Optional<NN_IndexTensor>:$lengths,
    Variadic<NN_FloatTensor>:$weights,
    NN_I64Attr:$hidden_size,
    DefaultValuedAttr<NN_I64Attr, "1">:$num_layers,
    DefaultValuedAttr<BoolAttr, "false">:$bidirectional,
    DefaultValuedAttr<BoolAttr, "true">:$has_bias,
    DefaultValuedAttr<NN_F64Attr, "0.0">:$zoneout,
    DefaultValuedAttr<NN_I64Attr, "0">:$seed
,
    OptionalAttr<NN_I64Attr>:$checkpoint_every,
    OptionalAttr<NN_I64Attr>:$checkpoint_snapshots
  );
  let results = (outs NN_FloatTensor:$y, NN_FloatTensor:$h_n,
                      NN_FloatTensor:$c_n, Optional<NN_ReserveType>:$reserve);
  let assemblyFormat = [{
    $x (`h0` $h0^)? (`c0` $c0^)? (`lengths` $lengths^)?
    `weights` `(` $weights `)` attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_GRUOp : NN_ReserveOp<"gru", [Pure, AttrSizedOperandSegments]> {
  let summary = "multi-layer GRU (torch.nn.GRU or Cho et al. 2014)";
  let description = [{
    Gates r, z, n (G = 3); `variant` selects the cell equations.
  }] # NN_RecurrentWeightsDoc # NN_ReserveDoc # NN_CheckpointDoc # [{
    ```mlir
    %y, %hn = nn.gru %x weights(%wih, %whh, %bih, %bhh) {hidden_size = 16 : i64} : (...) -> (...)
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x,
    Optional<NN_FloatTensor>:$h0,
    Optional<NN_IndexTensor>:$lengths,
    Variadic<NN_FloatTensor>:$weights,
    NN_I64Attr:$hidden_size,
    DefaultValuedAttr<NN_I64Attr, "1">:$num_layers,
    DefaultValuedAttr<BoolAttr, "false">:$bidirectional,
    DefaultValuedAttr<BoolAttr, "true">:$has_bias,
    DefaultValuedAttr<NN_GRUVariantAttr,
                      "::nncc::nn::GRUVariant::pytorch">:$variant
,
    OptionalAttr<NN_I64Attr>:$checkpoint_every,
    OptionalAttr<NN_I64Attr>:$checkpoint_snapshots
  );
  let results = (outs NN_FloatTensor:$y, NN_FloatTensor:$h_n,
                      Optional<NN_ReserveType>:$reserve);
  let assemblyFormat = [{
    $x (`h0` $h0^)? (`lengths` $lengths^)? `weights` `(` $weights `)`
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

defvar NN_CellDoc = [{
    `x` is [B, I] and `h` [B, H]; `w_ih` is [G*H, I], `w_hh` [G*H, H] and the
    optional biases `b_ih`, `b_hh` are [G*H] (both or neither).
}];

def NN_RNNCellOp : NN_Op<"rnn_cell", [Pure, AttrSizedOperandSegments]> {
  let summary = "one step of an Elman RNN (torch.nn.RNNCell)";
  let description = [{
    h' = nonlinearity(W_ih x + b_ih + W_hh h + b_hh), G = 1.
  }] # NN_CellDoc # [{
    ```mlir
    %h1 = nn.rnn_cell %x, %h, %wih, %whh bias(%bih, %bhh) : (...) -> !nn.tensor<[B, 16], f32>
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x, NN_FloatTensor:$h,
    NN_FloatTensor:$w_ih, NN_FloatTensor:$w_hh,
    Optional<NN_FloatTensor>:$b_ih, Optional<NN_FloatTensor>:$b_hh,
    DefaultValuedAttr<NN_NonlinearityAttr,
                      "::nncc::nn::Nonlinearity::tanh">:$nonlinearity
  );
  let results = (outs NN_FloatTensor:$h_next);
  let assemblyFormat = [{
    $x `,` $h `,` $w_ih `,` $w_hh (`bias` `(` $b_ih^ `,` $b_hh `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def NN_LSTMCellOp : NN_Op<"lstm_cell", [Pure, AttrSizedOperandSegments]> {
  let summary = "one step of an LSTM (torch.nn.LSTMCell)";
  let description = [{
    Gates i, f, g, o (G = 4); `c` [B, H] is the cell state. Results: the new
    hidden and cell states.
  }] # NN_CellDoc # [{
    ```mlir
    %h1, %c1 = nn.lstm_cell %x, %h, %c, %wih, %whh : (...) -> (...)
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x, NN_FloatTensor:$h, NN_FloatTensor:$c,
    NN_FloatTensor:$w_ih, NN_FloatTensor:$w_hh,
    Optional<NN_FloatTensor>:$b_ih, Optional<NN_FloatTensor>:$b_hh
  );
  let results = (outs NN_FloatTensor:$h_next, NN_FloatTensor:$c_next);
  let assemblyFormat = [{
    $x `,` $h `,` $c `,` $w_ih `,` $w_hh (`bias` `(` $b_ih^ `,` $b_hh `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def NN_GRUCellOp : NN_Op<"gru_cell", [Pure, AttrSizedOperandSegments]> {
  let summary = "one step of a GRU (torch.nn.GRUCell or Cho et al. 2014)";
  let description = [{
    Gates r, z, n (G = 3); `variant` selects the cell equations.
  }] # NN_CellDoc # [{
    ```mlir
    %h1 = nn.gru_cell %x, %h, %wih, %whh {variant = #nn<gru_variant cho2014>} : (...) -> !nn.tensor<[B, 16], f32>
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x, NN_FloatTensor:$h,
    NN_FloatTensor:$w_ih, NN_FloatTensor:$w_hh,
    Optional<NN_FloatTensor>:$b_ih, Optional<NN_FloatTensor>:$b_hh,
    DefaultValuedAttr<NN_GRUVariantAttr,
                      "::nncc::nn::GRUVariant::pytorch">:$variant
  );
  let results = (outs NN_FloatTensor:$h_next);
  let assemblyFormat = [{
    $x `,` $h `,` $w_ih `,` $w_hh (`bias` `(` $b_ih^ `,` $b_hh `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
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

#endif // NNCC_DIALECT_NN_IR_NNRECURRENTOPS_TD
