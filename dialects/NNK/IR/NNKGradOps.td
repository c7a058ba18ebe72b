//===- NNKGradOps.td - nnk ops of the backward pass ----------*- tablegen -*-===//
//
// Kernel-level ops produced from the backward ops of `@forward_backward`
// (docs/autodiff.md, "Execution"). Same conventions as NNKOps.td:
// destination passing, outs fully overwritten. Included by NNKOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_KERNEL_IR_NNKGRADOPS_TD
#define NNCC_DIALECT_KERNEL_IR_NNKGRADOPS_TD

class NNK_GradOp<string mnemonic, list<Trait> traits = []>
    : NNK_Op<mnemonic, traits> {
  let hasVerifier = 0;
}

def NNK_BoundaryOp : NNK_GradOp<"boundary"> {
  let summary = "end of the training forward in a forward_backward function";
  let description = [{
    Marks where the forward half of a training function ends (after its
    residuals, the `nn.save`s, are computed). Ops before it form
    `forward_train`, ops after it `backward`; the residuals stay in the
    arena between the two calls.
  }];
  let assemblyFormat = "attr-dict";
}

def NNK_ReduceToShapeOp : NNK_GradOp<"reduce_to_shape"> {
  let summary = "sum over the dims a NumPy broadcast expanded";
  let description = [{
    `out` broadcasts to `x` (right-aligned); out = sum of x over the leading
    dims out lacks and the dims where out has size 1.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$x, NNK_Out<NNK_FloatBuffer>:$out);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_BroadcastAxesOp : NNK_GradOp<"broadcast_axes"> {
  let summary = "out = dy broadcast back over reduced axes (÷ count if mean)";
  let description = [{
    The adjoint of `nnk.reduce`: `dy` holds out's shape without `axes`
    (or with them of size 1); out[i] = dy[i without axes], divided by
    numel(out) / numel(dy) when `mean`.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$dy, NNK_Out<NNK_FloatBuffer>:$out,
                       DenseI64ArrayAttr:$axes, DefaultValuedAttr<BoolAttr, "false">:$mean);
  let assemblyFormat = [{
    `ins` `(` $dy `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_MaxGradOp : NNK_GradOp<"max_grad"> {
  let summary = "dx = dy at each row's first maximum along one axis, 0 elsewhere";
  let description = [{
    The adjoint of `nnk.max`: x and dx `[outer, N, inner]` around `axis`,
    dy `[outer, inner]` (nnk.max's out); dx is overwritten with dy at the
    element `nnk.argmax` selects and 0 at the others.
    `nncc_max_axis_backward_*`; CPU only.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$dy, NNK_In<NNK_FloatBuffer>:$x,
                       NNK_Out<NNK_FloatBuffer>:$dx, NNK_I64Attr:$axis);
  let assemblyFormat = [{
    `ins` `(` $dy `,` $x `)` `outs` `(` $dx `)` attr-dict `:` qualified(type(operands))
  }];
  let hasVerifier = 1;
}

def NNK_TopkGradOp : NNK_GradOp<"topk_grad"> {
  let summary = "dx = dy scattered to topk's indices along one axis, 0 elsewhere";
  let description = [{
    The adjoint of `nnk.topk`'s values: dy and indices `[outer, k, inner]`
    around `axis`, dx `[outer, N, inner]` (dy's dims with N at `axis`); dx
    is overwritten with 0, then dy at the positions indices name.
    `nncc_topk_axis_backward_*`; CPU only.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$dy,
                       NNK_In<NNK_IndexBuffer>:$indices,
                       NNK_Out<NNK_FloatBuffer>:$dx, NNK_I64Attr:$axis);
  let assemblyFormat = [{
    `ins` `(` $dy `,` $indices `)` `outs` `(` $dx `)` attr-dict `:` qualified(type(operands))
  }];
  let hasVerifier = 1;
}

def NNK_SliceGradOp : NNK_GradOp<"slice_grad"> {
  let summary = "zero out, then scatter dy at the positions nnk.slice reads";
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$dy, NNK_Out<NNK_FloatBuffer>:$out,
                       DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$steps,
                       DenseI64ArrayAttr:$squeeze);
  let assemblyFormat = [{
    `ins` `(` $dy `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

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
    direction (`nncc_rnn_forward_train_ckpt_*`, which uses
    `nncc_rnn_reserve_ckpt_size` bytes of it). With `checkpoint_snapshots`
    = s instead (>= 1; the binomial schedule) the reserve is
    `[B, T, L·D·H]`, every layer's output only
    (`nncc_rnn_forward_train_revolve_*`).
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

def NNK_ODESolveGradOp : NNK_GradOp<"ode_solve_grad"> {
  let summary = "backward of nnk.ode_solve: adjoint method or through the steps";
  let description = [{
    Given `a1` = dL/dh(t1), writes `dh0` = dL/dh(t0) and `dparams` (one per
    parameter θ_i read by the dynamics, overwritten). Regions:
    `dynamics (t, h, dh)` as in `nnk.ode_solve`; `vjp (t, h, a, dh_out,
    dθ_1 ... dθ_k)` writes aᵀ∂f/∂h and aᵀ∂f/∂θ_i into its destination
    arguments. `adjoint = true`: `h` is h(t1); the augmented state
    [h, a, a_θ] is integrated from t1 back to t0 with the forward's method
    and steps (dh/dt = f, da/dt = −aᵀ∂f/∂h, da_θ/dt = −aᵀ∂f/∂θ).
    `adjoint = false`: `h` is h(t0); the fixed steps are recomputed and the
    adjoint is propagated back through every step and stage (the exact
    gradient of the discrete solve). Scratch: one workspace of
    `nncc_ode_grad_workspace_size` bytes in the buffer plan; through the
    steps it holds the states, for adaptive dopri5 at most `max_steps`
    accepted steps (more fails at run time naming the op and the bound).
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$h,
    NNK_In<NNK_FloatBuffer>:$t0,
    NNK_In<NNK_FloatBuffer>:$t1,
    NNK_In<NNK_FloatBuffer>:$a1,
    NNK_Out<NNK_FloatBuffer>:$dh0,
    NNK_Out<Variadic<NNK_FloatBuffer>>:$dparams,
    NNK_ODEMethodAttr:$method,
    DefaultValuedAttr<NNK_I64Attr, "0">:$steps,
    DefaultValuedAttr<NNK_F64Attr, "1.0e-7">:$rtol,
    DefaultValuedAttr<NNK_F64Attr, "1.0e-9">:$atol,
    DefaultValuedAttr<BoolAttr, "false">:$adjoint,
    DefaultValuedAttr<ConfinedAttr<NNK_I64Attr, [IntPositive]>, "1000">:$max_steps);
  let regions = (region SizedRegion<1>:$dynamics, SizedRegion<1>:$vjp);
  let assemblyFormat = [{
    `ins` `(` $h `,` $t0 `,` $t1 `,` $a1 `)` `outs` `(` $dh0 `)`
    (`dparams` `(` $dparams^ `)`)? attr-dict `:` qualified(type(operands))
    `dynamics` $dynamics `vjp` $vjp
  }];
}

def NNK_ODERNNGradOp : NNK_GradOp<"ode_rnn_grad", [AttrSizedOperandSegments]> {
  let summary = "backward of nnk.ode_rnn: BPTT over observations, ODE segments";
  let description = [{
    Given the saved `hs [B, T, H]` and `dhs`, for t = T−1 down to 0: the
    state before the cell (h̃_t) is recomputed by solving the dynamics from
    hs[t−1] (h0 / zeros at t = 0, no evolution there); the cell's VJP
    (`cell_vjp (x_t, h, a, dx_t, dh, dφ_1 ...)`) gives dx_t, dh̃_t and
    cell parameter gradients; then the segment's backward as in
    `nnk.ode_solve_grad` (`dynamics`, `dynamics_vjp (t, h, a, dh, dθ ...)`,
    per-row time scale t_i − t_{i−1}; `max_steps` per segment). `dparams`: the first
    `num_dynamics_params` belong to the dynamics, the rest to the cell
    (all overwritten).
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$x,
    NNK_In<NNK_FloatBuffer>:$times,
    NNK_In<Optional<NNK_FloatBuffer>>:$h0,
    NNK_In<NNK_FloatBuffer>:$hs,
    NNK_In<NNK_FloatBuffer>:$dhs,
    NNK_Out<NNK_FloatBuffer>:$dx,
    NNK_Out<NNK_FloatBuffer>:$dh0,
    NNK_Out<Variadic<NNK_FloatBuffer>>:$dparams,
    NNK_I64Attr:$hidden_size,
    NNK_I64Attr:$num_dynamics_params,
    NNK_ODEMethodAttr:$method,
    DefaultValuedAttr<NNK_I64Attr, "0">:$steps,
    DefaultValuedAttr<NNK_F64Attr, "1.0e-7">:$rtol,
    DefaultValuedAttr<NNK_F64Attr, "1.0e-9">:$atol,
    DefaultValuedAttr<BoolAttr, "false">:$adjoint,
    DefaultValuedAttr<ConfinedAttr<NNK_I64Attr, [IntPositive]>, "1000">:$max_steps);
  let regions = (region SizedRegion<1>:$dynamics, SizedRegion<1>:$dynamics_vjp,
                        SizedRegion<1>:$cell_vjp);
  let assemblyFormat = [{
    `ins` `(` $x `,` $times (`,` $h0^)? `,` $hs `,` $dhs `)`
    `outs` `(` $dx `,` $dh0 `)` (`dparams` `(` $dparams^ `)`)?
    attr-dict `:` qualified(type(operands))
    `dynamics` $dynamics `dynamics_vjp` $dynamics_vjp `cell_vjp` $cell_vjp
  }];
}

#endif
