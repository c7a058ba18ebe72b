//===- NNODEOps.td - neural ODE solves and ODE-RNNs --------*- tablegen -*-===//
//
// nn.odesolve and nn.ode_rnn with their dynamics regions, and their
// backward ops (adjoint or backpropagation through the solver).
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNODEOPS_TD
#define NNCC_DIALECT_NN_IR_NNODEOPS_TD

include "dialects/NN/IR/NNOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NN_ODESolveOp : NN_Op<"odesolve", [
    RecursiveMemoryEffects, RecursivelySpeculatable,
    DeclareOpInterfaceMethods<NN_RegionSignatureOpInterface>]> {
  let summary = "integrates an ODE dh/dt = f(t, h) from t0 to t1";
  let description = [{
    Returns h(t1) for h(t0) = `h0`, where the single-block region `dynamics`
    takes (t: float scalar [] of `t0`'s element type, h: type of `h0`) and
    yields dh/dt of `h0`'s type. `t0`, `t1` are float scalars. `method`
    selects the scheme: `euler` and `rk4` need `steps` >= 1; `dopri5` is
    adaptive with tolerances `rtol`, `atol` (> 0) when `steps` = 0. With
    `adjoint`, gradients use the adjoint method (torchdiffeq's
    `odeint_adjoint`). `max_steps` (>= 1, default 1000) bounds the accepted
    steps of an adaptive dopri5 solve differentiated through the steps
    (`adjoint` false): the backward keeps one state per accepted step in a
    workspace sized for `max_steps`; more is a runtime error.

    ```mlir
    %h1 = nn.odesolve rk4 %h0, %t0, %t1 {steps = 10 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 4], f32> {
    ^bb0(%t: !nn.tensor<[], f32>, %h: !nn.tensor<[B, 4], f32>):
      %dh = nn.tanh %h : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
      nn.yield %dh : !nn.tensor<[B, 4], f32>
    }
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$h0, NN_FloatTensor:$t0, NN_FloatTensor:$t1,
    NN_ODEMethodAttr:$method,
    DefaultValuedAttr<NN_I64Attr, "0">:$steps,
    DefaultValuedAttr<NN_F64Attr, "1.0e-7">:$rtol,
    DefaultValuedAttr<NN_F64Attr, "1.0e-9">:$atol,
    DefaultValuedAttr<BoolAttr, "false">:$adjoint,
    DefaultValuedAttr<NN_I64Attr, "1000">:$max_steps
  );
  let results = (outs NN_FloatTensor:$result);
  let regions = (region SizedRegion<1>:$dynamics);
  let assemblyFormat = [{
    `` $method $h0 `,` $t0 `,` $t1 attr-dict `:` functional-type(operands, results)
    $dynamics
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def NN_ODERNNOp : NN_Op<"ode_rnn", [
    RecursiveMemoryEffects, RecursivelySpeculatable,
    DeclareOpInterfaceMethods<NN_RegionSignatureOpInterface>]> {
  let summary = "ODE-RNN over irregularly sampled sequences (Rubanova 2019)";
  let description = [{
    For each step t of `x` [B, T, I] at `times` [B, T] (float), evolves the
    hidden state [B, H] (H = `hidden_size`; initially `h0` or zeros) with the
    ODE `dynamics` from the previous time to the current one, then applies
    `cell` to (x_t, h). Region `dynamics` takes (t [B, 1], h [B, H]) and
    yields [B, H]: every sequence has its own observation times, so t holds
    each row's current time (use it broadcast, e.g. `t * h`); region `cell`
    takes (x_t [B, I], h [B, H]) and yields [B, H]. The
    result stacks the hidden states: [B, T, H]. `method`, `steps`, `rtol`,
    `atol`, `adjoint` and `max_steps` are as in `nn.odesolve` (per segment).

    ```mlir
    %hs = nn.ode_rnn euler %x, %times {hidden_size = 8 : i64, steps = 1 : i64} : (...) -> !nn.tensor<[B, T, 8], f32> dynamics {
    ^bb0(%t: !nn.tensor<[B, 1], f32>, %h: !nn.tensor<[B, 8], f32>):
      nn.yield %h : !nn.tensor<[B, 8], f32>
    } cell {
    ^bb0(%xt: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 8], f32>):
      nn.yield %h : !nn.tensor<[B, 8], f32>
    }
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x, NN_FloatTensor:$times, Optional<NN_FloatTensor>:$h0,
    NN_I64Attr:$hidden_size,
    NN_ODEMethodAttr:$method,
    DefaultValuedAttr<NN_I64Attr, "0">:$steps,
    DefaultValuedAttr<NN_F64Attr, "1.0e-7">:$rtol,
    DefaultValuedAttr<NN_F64Attr, "1.0e-9">:$atol,
    DefaultValuedAttr<BoolAttr, "false">:$adjoint,
    DefaultValuedAttr<NN_I64Attr, "1000">:$max_steps
  );
  let results = (outs NN_FloatTensor:$result);
  let regions = (region SizedRegion<1>:$dynamics, SizedRegion<1>:$cell);
  let assemblyFormat = [{
    `` $method $x `,` $times (`,` $h0^)? attr-dict `:`
    functional-type(operands, results) `dynamics` $dynamics `cell` $cell
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
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

#endif // NNCC_DIALECT_NN_IR_NNODEOPS_TD
