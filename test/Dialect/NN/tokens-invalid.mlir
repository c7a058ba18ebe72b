// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// One case per error of the verifiers and type inference of nn.mask_tokens,
// nn.sample, nn.linear_sample, nn.axial_position and nn.axial_position_grad.

func.func @mask_float_tokens(%x: !nn.tensor<[B, T], f32>) {
  // expected-error @+1 {{operand #0 must be nn tensor of i32 or i64 values}}
  %m, %k = nn.mask_tokens %x {p = 0.15 : f64, mask_id = 103 : i64} : (!nn.tensor<[B, T], f32>) -> (!nn.tensor<[B, T], f32>, !nn.tensor<[B, T], i1>)
  return
}

// -----

func.func @mask_rate(%x: !nn.tensor<[B, T], i32>) {
  // expected-error @+1 {{'nn.mask_tokens' op p must be in [0, 1), got 1}}
  %m, %k = nn.mask_tokens %x {p = 1.0 : f64, mask_id = 103 : i64} : (!nn.tensor<[B, T], i32>) -> (!nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i1>)
  return
}

// -----

func.func @mask_scalar(%x: !nn.tensor<[], i32>) {
  // expected-error @+2 {{'nn.mask_tokens' op expected tokens [..., n] of rank >= 1, got '!nn.tensor<[], i32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %m, %k = nn.mask_tokens %x {p = 0.15 : f64, mask_id = 103 : i64} : (!nn.tensor<[], i32>) -> (!nn.tensor<[], i32>, !nn.tensor<[], i1>)
  return
}

// -----

func.func @sample_rows_shape(%l: !nn.tensor<[B, T, 10], f32>, %m: !nn.tensor<[B], i1>) {
  // expected-error @+2 {{'nn.sample' op expected rows (logits without V) of shape [B, T], got [B]}}
  // expected-error @+1 {{failed to infer returned types}}
  %s = nn.sample %l, %m : (!nn.tensor<[B, T, 10], f32>, !nn.tensor<[B], i1>) -> !nn.tensor<[B, T], i32>
  return
}

// -----

func.func @axial_width(%h: !nn.tensor<[B, T, 60], f32>, %r: !nn.tensor<[8, 1, 16], f32>, %c: !nn.tensor<[1, 16, 48], f32>) {
  // expected-error @+2 {{'nn.axial_position' op embedding size 60 is not d1 + d2 = 64 of the axial tables}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = nn.axial_position %h, %r, %c : (!nn.tensor<[B, T, 60], f32>, !nn.tensor<[8, 1, 16], f32>, !nn.tensor<[1, 16, 48], f32>) -> !nn.tensor<[B, T, 60], f32>
  return
}

// -----

func.func @axial_grid(%h: !nn.tensor<[B, 200, 64], f32>, %r: !nn.tensor<[8, 1, 16], f32>, %c: !nn.tensor<[1, 16, 48], f32>) {
  // expected-error @+2 {{'nn.axial_position' op sequence length 200 exceeds the 128 positions of the 8 x 16 axial grid}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = nn.axial_position %h, %r, %c : (!nn.tensor<[B, 200, 64], f32>, !nn.tensor<[8, 1, 16], f32>, !nn.tensor<[1, 16, 48], f32>) -> !nn.tensor<[B, 200, 64], f32>
  return
}

// -----

func.func @axial_layout(%h: !nn.tensor<[B, T, 64], f32>, %r: !nn.tensor<[8, 16], f32>, %c: !nn.tensor<[1, 16, 48], f32>) {
  // expected-error @+2 {{'nn.axial_position' op expected rows [n1, 1, d1] of rank 3, got '!nn.tensor<[8, 16], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = nn.axial_position %h, %r, %c : (!nn.tensor<[B, T, 64], f32>, !nn.tensor<[8, 16], f32>, !nn.tensor<[1, 16, 48], f32>) -> !nn.tensor<[B, T, 64], f32>
  return
}

// -----

func.func @axial_symbolic(%h: !nn.tensor<[B, T, 64], f32>, %r: !nn.tensor<[N, 1, 16], f32>, %c: !nn.tensor<[1, 16, 48], f32>) {
  // expected-error @+2 {{'nn.axial_position' op the axial tables must have static shapes}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = nn.axial_position %h, %r, %c : (!nn.tensor<[B, T, 64], f32>, !nn.tensor<[N, 1, 16], f32>, !nn.tensor<[1, 16, 48], f32>) -> !nn.tensor<[B, T, 64], f32>
  return
}

// -----

func.func @axial_grad_d1(%dy: !nn.tensor<[B, T, 64], f32>) {
  // expected-error @+2 {{'nn.axial_position_grad' op d1 = 64 must lie in [1, E) for a static E, got E = 64}}
  // expected-error @+1 {{failed to infer returned types}}
  %a, %b = nn.axial_position_grad %dy {shape = array<i64: 8, 16>, d1 = 64 : i64} : (!nn.tensor<[B, T, 64], f32>) -> (!nn.tensor<[8, 1, 64], f32>, !nn.tensor<[1, 16, 0], f32>)
  return
}

// -----

func.func @linear_sample_width(%h: !nn.tensor<[B, T, 32], f32>, %w: !nn.tensor<[100, 16], f32>) {
  // expected-error @+2 {{'nn.linear_sample' op expected weight [V, K] with K = the last dim of x of shape [100, 32], got [100, 16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %s = nn.linear_sample %h, %w : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 16], f32>) -> !nn.tensor<[B, T], i32>
  return
}

// -----

func.func @linear_sample_rows(%h: !nn.tensor<[B, T, 32], f32>, %w: !nn.tensor<[100, 32], f32>, %m: !nn.tensor<[T], i1>) {
  // expected-error @+2 {{'nn.linear_sample' op expected rows (x without K) of shape [B, T], got [T]}}
  // expected-error @+1 {{failed to infer returned types}}
  %s = nn.linear_sample %h, %w rows %m : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[T], i1>) -> !nn.tensor<[B, T], i32>
  return
}
