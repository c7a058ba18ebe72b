//===- NNKRecurrentOps.td - recurrent scans and cells ------*- tablegen -*-===//
//
// The recurrent time loop of a layer stack and the single-step cell,
// zoneout, and the training forward (keeping a reserve) and BPTT backward.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NNK_IR_NNKRECURRENTOPS_TD
#define NNCC_DIALECT_NNK_IR_NNKRECURRENTOPS_TD

include "dialects/NNK/IR/NNKOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NNK_ZoneoutOp : NNK_Op<"zoneout"> {
  let summary = "zoneout with Philox randomness (training only)";
  let description = [{
    out = prev where element i's Philox draw for (seed, offset + i) is < p
    (probability p), new_state elsewhere (`nncc_zoneout_*`; the complement
    of `nnk.dropout`'s keep decision for the same draw). Created only in
    training-mode functions; the backward's `nn.zoneout` of the adjoint
    (same seed and step offset) draws the same mask.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$new_state,
                       NNK_In<NNK_FloatBuffer>:$prev,
                       NNK_Out<NNK_FloatBuffer>:$out,
                       NNK_F64Attr:$p, DefaultValuedAttr<NNK_I64Attr, "0">:$seed);
  let assemblyFormat = [{
    `ins` `(` $new_state `,` $prev `)` `outs` `(` $out `)` attr-dict `:`
    qualified(type(operands))
  }];
}

def NNK_RecurrentScanOp : NNK_Op<"recurrent_scan", [AttrSizedOperandSegments]> {
  let summary = "persistent recurrent kernel: one layer, one direction, all steps";
  let description = [{
    Loops over time inside one launch for layer/direction
    `state_index = l·D + d`. `xproj [B, T, G·H]` is the input projection of
    all steps (`x · W_ihᵀ + b_ih`, done by a preceding `nnk.gemm`); each step
    adds `h · W_hhᵀ + b_hh` and applies the gate math of `cell`
    (RecurrentMath.h; G = 1 rnn, 4 lstm i f g o, 3 gru r z n). Writes the
    columns `[d·H, (d+1)·H)` of `y [B, T, D·H]` (D = `num_directions`),
    zero past each sequence's length. `h0`/`c0`, `h_n`/`c_n` are the whole
    `[L·D, B, H]` state buffers; this op reads/writes entry `state_index`
    (h0/c0 absent: zeros). `lengths [B]` (i32/i64): no work past a
    length; `reverse` processes `t = len_b − 1 − s` at step s. `zoneout`
    (lstm, training only: nn-inference-semantics zeroes it in inference) keeps
    h and c of a unit with probability `zoneout` per step, mask from
    Philox(`seed`, step offset + counter of (state_index, t, b, j));
    `nncc_rnn_layer_zoneout_*`. CUDA (zoneout = 0 only):
    `launch_rnn_layer`; CPU: the per-step loop of `nncc_rnn_forward_*`
    (recurrent GEMM over the active rows + one gate pass per step).
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$xproj,
    NNK_In<NNK_FloatBuffer>:$w_hh,
    NNK_In<Optional<NNK_FloatBuffer>>:$b_hh,
    NNK_In<Optional<NNK_FloatBuffer>>:$h0,
    NNK_In<Optional<NNK_FloatBuffer>>:$c0,
    NNK_In<Optional<NNK_IndexBuffer>>:$lengths,
    NNK_Out<NNK_FloatBuffer>:$y,
    NNK_Out<Optional<NNK_FloatBuffer>>:$h_n,
    NNK_Out<Optional<NNK_FloatBuffer>>:$c_n,
    NNK_CellAttr:$cell,
    NNK_I64Attr:$hidden_size,
    DefaultValuedAttr<BoolAttr, "false">:$reverse,
    DefaultValuedAttr<NNK_I64Attr, "1">:$num_directions,
    DefaultValuedAttr<NNK_I64Attr, "0">:$state_index,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$zoneout,
    DefaultValuedAttr<NNK_I64Attr, "0">:$seed
  );
  let assemblyFormat = [{
    `ins` `(` $xproj `,` $w_hh `)` (`bias` `(` $b_hh^ `)`)? (`h0` `(` $h0^ `)`)?
    (`c0` `(` $c0^ `)`)? (`lengths` `(` $lengths^ `)`)?
    `outs` `(` $y `)` (`h_n` `(` $h_n^ `)`)? (`c_n` `(` $c_n^ `)`)?
    attr-dict `:` qualified(type(operands))
  }];
}

def NNK_RecurrentCellOp : NNK_Op<"recurrent_cell", [AttrSizedOperandSegments]> {
  let summary = "one recurrent step: h·W_hhᵀ + gate math (one launch)";
  let description = [{
    `xproj [B, G·H]` (= x · W_ihᵀ + b_ih from a preceding `nnk.gemm`),
    `h [B, H]`, `c [B, H]` (lstm only), `w_hh [G·H, H]`, `b_hh [G·H]`.
    Writes `h_out [B, H]` and, for lstm, `c_out`. Same gate math as
    `nnk.recurrent_scan` for one step.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$xproj,
    NNK_In<NNK_FloatBuffer>:$h,
    NNK_In<Optional<NNK_FloatBuffer>>:$c,
    NNK_In<NNK_FloatBuffer>:$w_hh,
    NNK_In<Optional<NNK_FloatBuffer>>:$b_hh,
    NNK_Out<NNK_FloatBuffer>:$h_out,
    NNK_Out<Optional<NNK_FloatBuffer>>:$c_out,
    NNK_CellAttr:$cell
  );
  let assemblyFormat = [{
    `ins` `(` $xproj `,` $h `,` $w_hh `)` (`c` `(` $c^ `)`)? (`bias` `(` $b_hh^ `)`)?
    `outs` `(` $h_out `)` (`c_out` `(` $c_out^ `)`)? attr-dict `:`
    qualified(type(operands))
  }];
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NNK_RecurrentForwardOp : NNK_GradOp<"recurrent_forward", [AttrSizedOperandSegments]> {
  let summary = "training forward of a whole recurrent stack, keeping a reserve";
  let description = [{
    The forward of nn.rnn / nn.lstm / nn.gru whose `reserve` result its
    gradient op reads (`!nn.reserve`): per layer the input projection and
    the scan, as `nnk.recurrent_scan`, writing y `[B, T, D·H]`, h_n / c_n
    `[L·D, B, H]` (optional) and `reserve` `[B, T, L·D·H·(1 + slots)]`:
    every layer's output, then the saved gates of every layer and direction
    (slots: 5 lstm, 4 gru, 3 gru_cho2014, 1 rnn), which `nnk.recurrent_grad
    reserve(...)` reads instead of running the forward again.
    `nncc_rnn_forward_train_*`. With `checkpoint_every` = k (>= 1; BPTT
    checkpointing, the same on the paired `nnk.recurrent_grad`) the reserve
    is `[B, T, L·D·H + (lstm ? ⌈L·D·H / k⌉ : 0)]`: every layer's output, then
    for the LSTM the cell state entering every k-th step of each layer and
    direction (`nncc_rnn_forward_train_*` with `checkpoint_every`, which uses
    `nncc_rnn_reserve_ckpt_size` bytes of it). With `checkpoint_snapshots`
    = s instead (>= 1; the binomial schedule) the reserve is
    `[B, T, L·D·H]`, every layer's output only
    (`nncc_rnn_forward_train_*` with `checkpoint_snapshots`).
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$x,
    NNK_In<Optional<NNK_FloatBuffer>>:$h0,
    NNK_In<Optional<NNK_FloatBuffer>>:$c0,
    NNK_In<Optional<NNK_IndexBuffer>>:$lengths,
    NNK_In<Variadic<NNK_FloatBuffer>>:$weights,
    NNK_Out<NNK_FloatBuffer>:$y,
    NNK_Out<Optional<NNK_FloatBuffer>>:$h_n,
    NNK_Out<Optional<NNK_FloatBuffer>>:$c_n,
    NNK_Out<NNK_FloatBuffer>:$reserve,
    NNK_CellAttr:$cell,
    NNK_I64Attr:$hidden_size,
    DefaultValuedAttr<NNK_I64Attr, "1">:$num_layers,
    DefaultValuedAttr<BoolAttr, "false">:$bidirectional,
    DefaultValuedAttr<BoolAttr, "true">:$has_bias,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$zoneout,
    DefaultValuedAttr<NNK_I64Attr, "0">:$seed,
    OptionalAttr<NNK_I64Attr>:$checkpoint_every,
    OptionalAttr<NNK_I64Attr>:$checkpoint_snapshots);
  let hasVerifier = 1;
  let assemblyFormat = [{
    `ins` `(` $x `)` (`h0` `(` $h0^ `)`)? (`c0` `(` $c0^ `)`)?
    (`lengths` `(` $lengths^ `)`)? `weights` `(` $weights `)`
    `outs` `(` $y `)` (`h_n` `(` $h_n^ `)`)? (`c_n` `(` $c_n^ `)`)?
    `reserve` `(` $reserve `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_RecurrentGradOp : NNK_GradOp<"recurrent_grad", [AttrSizedOperandSegments]> {
  let summary = "fused BPTT of a whole recurrent stack (all layers, directions)";
  let description = [{
    The backward of nn.rnn / nn.lstm / nn.gru: with `reserve` (the
    `nnk.recurrent_forward` of the same stack) it reads the forward's layer
    outputs and gates from it; without, it recomputes every layer's forward
    scan (gates kept in the launch's workspace). Then it scans back per
    layer (last first) and direction. Operands as `nn.*_grad`; outs dx,
    dh0 `[L·D, B, H]`, dc0 (lstm), then one gradient per weight in
    `_flat_weights` order. Absent dy / dh_n / dc_n are zero. With
    `checkpoint_every` = k (needs `reserve`, from an `nnk.recurrent_forward`
    with the same k) the gates are recomputed one segment of k steps at a
    time (`nncc_rnn_backward_ckpt_*`; the workspace holds k steps). With
    `checkpoint_snapshots` = s (needs `reserve`, from an
    `nnk.recurrent_forward` with the same s) each layer's scan is reversed
    one step at a time by the binomial (Revolve) schedule, keeping at most
    s LSTM cell states in the workspace (`nncc_rnn_backward_revolve_*`).
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$x,
    NNK_In<Optional<NNK_FloatBuffer>>:$h0,
    NNK_In<Optional<NNK_FloatBuffer>>:$c0,
    NNK_In<Optional<NNK_IndexBuffer>>:$lengths,
    NNK_In<Variadic<NNK_FloatBuffer>>:$weights,
    NNK_In<Optional<NNK_FloatBuffer>>:$reserve,
    NNK_In<Optional<NNK_FloatBuffer>>:$dy,
    NNK_In<Optional<NNK_FloatBuffer>>:$dh_n,
    NNK_In<Optional<NNK_FloatBuffer>>:$dc_n,
    NNK_Out<NNK_FloatBuffer>:$dx,
    NNK_Out<NNK_FloatBuffer>:$dh0,
    NNK_Out<Optional<NNK_FloatBuffer>>:$dc0,
    NNK_Out<Variadic<NNK_FloatBuffer>>:$dweights,
    NNK_CellAttr:$cell,
    NNK_I64Attr:$hidden_size,
    DefaultValuedAttr<NNK_I64Attr, "1">:$num_layers,
    DefaultValuedAttr<BoolAttr, "false">:$bidirectional,
    DefaultValuedAttr<BoolAttr, "true">:$has_bias,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$zoneout,
    DefaultValuedAttr<NNK_I64Attr, "0">:$seed,
    OptionalAttr<NNK_I64Attr>:$checkpoint_every,
    OptionalAttr<NNK_I64Attr>:$checkpoint_snapshots);
  let hasVerifier = 1;
  let assemblyFormat = [{
    `ins` `(` $x `)` (`h0` `(` $h0^ `)`)? (`c0` `(` $c0^ `)`)?
    (`lengths` `(` $lengths^ `)`)? `weights` `(` $weights `)`
    (`reserve` `(` $reserve^ `)`)?
    (`dy` `(` $dy^ `)`)? (`dh_n` `(` $dh_n^ `)`)? (`dc_n` `(` $dc_n^ `)`)?
    `outs` `(` $dx `,` $dh0 `)` (`dc0` `(` $dc0^ `)`)? `dweights` `(` $dweights `)`
    attr-dict `:` qualified(type(operands))
  }];
}

def NNK_RecurrentCellGradOp : NNK_GradOp<"recurrent_cell_grad", [AttrSizedOperandSegments]> {
  let summary = "backward of one recurrent cell step (nncc_rnn_cell_backward)";
  let description = [{
    Twin of `nnk.recurrent_cell`: gates recomputed from `xproj [B, G·H]`
    (= x·W_ihᵀ + b_ih), `h` (and `c`). Absent `dh_out` / `dc_out` are zero.
    Overwrites `dxproj [B, G·H]`, `dh`, `dc` (lstm), `dw_hh` and `db_hh`.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$xproj,
    NNK_In<NNK_FloatBuffer>:$h,
    NNK_In<Optional<NNK_FloatBuffer>>:$c,
    NNK_In<NNK_FloatBuffer>:$w_hh,
    NNK_In<Optional<NNK_FloatBuffer>>:$b_hh,
    NNK_In<Optional<NNK_FloatBuffer>>:$dh_out,
    NNK_In<Optional<NNK_FloatBuffer>>:$dc_out,
    NNK_Out<NNK_FloatBuffer>:$dxproj,
    NNK_Out<NNK_FloatBuffer>:$dh,
    NNK_Out<Optional<NNK_FloatBuffer>>:$dc,
    NNK_Out<NNK_FloatBuffer>:$dw_hh,
    NNK_Out<Optional<NNK_FloatBuffer>>:$db_hh,
    NNK_CellAttr:$cell);
  let assemblyFormat = [{
    `ins` `(` $xproj `,` $h `)` (`c` `(` $c^ `)`)? `w_hh` `(` $w_hh `)`
    (`b_hh` `(` $b_hh^ `)`)? (`dh_out` `(` $dh_out^ `)`)?
    (`dc_out` `(` $dc_out^ `)`)? `outs` `(` $dxproj `,` $dh `)`
    (`dc` `(` $dc^ `)`)? `dw_hh` `(` $dw_hh `)` (`db_hh` `(` $db_hh^ `)`)?
    attr-dict `:` qualified(type(operands))
  }];
}

#endif // NNCC_DIALECT_NNK_IR_NNKRECURRENTOPS_TD
