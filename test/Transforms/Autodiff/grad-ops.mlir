// RUN: nncc-opt %s --split-input-file --verify-diagnostics

// Verifier errors of the backward ops.

func.func @f(%dy: !nn.tensor<[B, 4], f32>) -> !nn.tensor<[3], f32> {
  // expected-error @+2 {{type '!nn.tensor<[3], f32>' does not broadcast to x '!nn.tensor<[B, 4], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = nn.reduce_to_shape %dy {type = !nn.tensor<[3], f32>} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[3], f32>
  return %r : !nn.tensor<[3], f32>
}

// -----

func.func @f(%x: !nn.tensor<[B, 4], f32>, %dy: !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> {
  // expected-error @+1 {{kind must be "relu", "leaky_relu" or "gelu", got "tanh"}}
  %r = nn.activation_grad %x, %dy {kind = "tanh"} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return %r : !nn.tensor<[B, 4], f32>
}

// -----

func.func @f(%dy: !nn.tensor<[B, 4], f32>, %x: !nn.tensor<[T, 3], f32>) -> !nn.tensor<[4, 3], f32> {
  // expected-error @+2 {{must have the same leading dims}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = nn.linear_weight_grad %dy, %x : (!nn.tensor<[B, 4], f32>, !nn.tensor<[T, 3], f32>) -> !nn.tensor<[4, 3], f32>
  return %r : !nn.tensor<[4, 3], f32>
}

// -----

func.func @f(%x: !nn.tensor<[B, T, 4], f32>, %w: !nn.tensor<[8, 4], f32>, %dy: !nn.tensor<[B, T, 2], f32>) {
  // expected-error @+1 {{expected 4 weights, got 1}}
  %dx, %dh0, %dw = nn.rnn_grad %x weights(%w) dy %dy {hidden_size = 2 : i64} : (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[8, 4], f32>, !nn.tensor<[B, T, 2], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 2], f32>, !nn.tensor<[8, 4], f32>)
  return
}

// -----

func.func @f(%h: !nn.tensor<[B, 4], f32>, %t0: !nn.tensor<[], f32>, %a: !nn.tensor<[B, 4], f32>) {
  // expected-error @+1 {{region 'vjp' must yield 2 values, got 1}}
  %dh0 = nn.odesolve_grad euler %h, %t0, %t0, %a {steps = 1 : i64, params = [@w]} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> dynamics {
  ^bb0(%t: !nn.tensor<[], f32>, %x: !nn.tensor<[B, 4], f32>):
    nn.yield %x : !nn.tensor<[B, 4], f32>
  } vjp {
  ^bb0(%t: !nn.tensor<[], f32>, %x: !nn.tensor<[B, 4], f32>, %g: !nn.tensor<[B, 4], f32>):
    nn.yield %g : !nn.tensor<[B, 4], f32>
  }
  return
}
