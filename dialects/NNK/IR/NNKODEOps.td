//===- NNKODEOps.td - ODE solver loops ---------------------*- tablegen -*-===//
//
// nnk.ode_solve and nnk.ode_rnn (host-side loops of the launches of their
// regions) and their backward loops.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NNK_IR_NNKODEOPS_TD
#define NNCC_DIALECT_NNK_IR_NNKODEOPS_TD

include "dialects/NNK/IR/NNKOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NNK_ODESolveOp : NNK_Op<"ode_solve"> {
  let summary = "fixed-step or adaptive ODE solve; body = one dynamics evaluation";
  let description = [{
    Integrates dh/dt = f(t, h) from t0 to t1 (`[]` buffers) starting at h0,
    writing h(t1) to `out`. The `dynamics` region has arguments
    `(t : [] buffer, h : state buffer, dh : state buffer)`, evaluates f once
    into `dh` with nnk ops and ends with `nnk.yield`. The emitter runs a
    host-side loop: per RK stage, one evaluation of the body, then ONE fused
    elementwise kernel forming the next stage input
    `h + dt·Σ a_sj k_j` (and after the last stage the update
    `h + dt·Σ b_j k_j`). Euler: 1 stage; rk4: 4 (classic 1/6, 1/3, 1/3,
    1/6); dopri5: 7 (Dormand–Prince 5(4)), with `steps = 0` an adaptive
    host loop on the error-norm scalar
    `sqrt(mean((err / (atol + rtol·max(|h|,|h_new|)))²))` (accept if ≤ 1;
    step factor 0.9·e^(−1/5) clamped to [0.2, 10]).
    `work [K, ...state dims]` holds the stage slots: K = 2 (euler: k1,
    stage input), 5 (rk4: k1..k4, stage input), 9 (dopri5: k1..k7, stage
    input, error). `adjoint` is kept for training.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$h0,
    NNK_In<NNK_FloatBuffer>:$t0,
    NNK_In<NNK_FloatBuffer>:$t1,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_Out<NNK_FloatBuffer>:$work,
    NNK_ODEMethodAttr:$method,
    DefaultValuedAttr<NNK_I64Attr, "0">:$steps,
    DefaultValuedAttr<NNK_F64Attr, "1.0e-7">:$rtol,
    DefaultValuedAttr<NNK_F64Attr, "1.0e-9">:$atol,
    DefaultValuedAttr<BoolAttr, "false">:$adjoint
  );
  let regions = (region SizedRegion<1>:$dynamics);
  let assemblyFormat = [{
    `ins` `(` $h0 `,` $t0 `,` $t1 `)` `outs` `(` $out `)` `work` `(` $work `)`
    attr-dict `:` qualified(type(operands)) $dynamics
  }];
}

def NNK_ODERNNOp : NNK_Op<"ode_rnn"> {
  let summary = "ODE-RNN: per time step an ODE solve between observations, then the cell";
  let description = [{
    x `[B, T, I]`, times `[B, T]`, h0 `[B, H]` (absent: zeros), out
    `hs [B, T, H]`. For i = 0..T−1: per row b, h ← ODESolve(f, h,
    t_{i−1,b}, t_{i,b}) with t_{−1} = t_0 (so step 0 does not evolve),
    using the per-row time deltas `[B, 1]`; then h ← cell(x[:, i], h) and
    hs[:, i] = h. Region `dynamics (t : [B, 1], h : [B, H], dh : [B, H])`
    (t is each row's time), region `cell (x_t : [B, I], h : [B, H],
    h_out : [B, H])`; both end with `nnk.yield`. Stage combinations as in
    `nnk.ode_solve` (one fused elementwise kernel per stage, per-row dt).
    `work [K + 2, B, H]` (the solver's K slots, then the current h and the
    cell's output h_next); `xt [B, I]` receives x[:, i] before the cell runs.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$x,
    NNK_In<NNK_FloatBuffer>:$times,
    NNK_In<Optional<NNK_FloatBuffer>>:$h0,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_Out<NNK_FloatBuffer>:$work,
    NNK_Out<NNK_FloatBuffer>:$xt,
    NNK_I64Attr:$hidden_size,
    NNK_ODEMethodAttr:$method,
    DefaultValuedAttr<NNK_I64Attr, "0">:$steps,
    DefaultValuedAttr<NNK_F64Attr, "1.0e-7">:$rtol,
    DefaultValuedAttr<NNK_F64Attr, "1.0e-9">:$atol,
    DefaultValuedAttr<BoolAttr, "false">:$adjoint
  );
  let regions = (region SizedRegion<1>:$dynamics, SizedRegion<1>:$cell);
  let assemblyFormat = [{
    `ins` `(` $x `,` $times (`,` $h0^)? `)` `outs` `(` $out `)`
    `work` `(` $work `,` $xt `)` attr-dict `:` qualified(type(operands))
    `dynamics` $dynamics `cell` $cell
  }];
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

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

#endif // NNCC_DIALECT_NNK_IR_NNKODEOPS_TD
