// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// The type inference of nn.linear_cross_entropy, one case per error.

func.func @rank(%x: !nn.tensor<[32], f32>, %w: !nn.tensor<[100, 32], f32>, %y: !nn.tensor<[], i32>) {
  // expected-error @+2 {{'nn.linear_cross_entropy' op expected x [..., K] of rank >= 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %l, %dx, %dw, %db = nn.linear_cross_entropy %x, %w, %y : (!nn.tensor<[32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[], i32>) -> (!nn.tensor<[], f32>, !nn.tensor<[32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>)
  return
}

// -----

func.func @in_features(%x: !nn.tensor<[B, 16], f32>, %w: !nn.tensor<[100, 32], f32>, %y: !nn.tensor<[B], i32>) {
  // expected-error @+2 {{'nn.linear_cross_entropy' op expected weight [V, K] with K = the last dim of x of shape [100, 16], got [100, 32]}}
  // expected-error @+1 {{failed to infer returned types}}
  %l, %dx, %dw, %db = nn.linear_cross_entropy %x, %w, %y : (!nn.tensor<[B, 16], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[B], i32>) -> (!nn.tensor<[], f32>, !nn.tensor<[B, 16], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>)
  return
}

// -----

func.func @target_shape(%x: !nn.tensor<[B, T, 32], f32>, %w: !nn.tensor<[100, 32], f32>, %y: !nn.tensor<[B], i32>) {
  // expected-error @+2 {{'nn.linear_cross_entropy' op expected target (the shape of x without K) of shape [B, T], got [B]}}
  // expected-error @+1 {{failed to infer returned types}}
  %l, %dx, %dw, %db = nn.linear_cross_entropy %x, %w, %y : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[B], i32>) -> (!nn.tensor<[], f32>, !nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>)
  return
}

// -----

func.func @target_float(%x: !nn.tensor<[B, 32], f32>, %w: !nn.tensor<[100, 32], f32>, %y: !nn.tensor<[B], f32>) {
  // expected-error @+1 {{operand #2 must be nn tensor of i32 or i64 values}}
  %l, %dx, %dw, %db = nn.linear_cross_entropy %x, %w, %y : (!nn.tensor<[B, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[B], f32>) -> (!nn.tensor<[], f32>, !nn.tensor<[B, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>)
  return
}

// -----

func.func @bias_shape(%x: !nn.tensor<[B, 32], f32>, %w: !nn.tensor<[100, 32], f32>, %y: !nn.tensor<[B], i32>, %b: !nn.tensor<[10], f32>) {
  // expected-error @+2 {{'nn.linear_cross_entropy' op expected bias [V] of shape [100], got [10]}}
  // expected-error @+1 {{failed to infer returned types}}
  %l, %dx, %dw, %db = nn.linear_cross_entropy %x, %w, %y bias %b : (!nn.tensor<[B, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[B], i32>, !nn.tensor<[10], f32>) -> (!nn.tensor<[], f32>, !nn.tensor<[B, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>)
  return
}

// -----

func.func @weight_type(%x: !nn.tensor<[B, 32], f32>, %w: !nn.tensor<[100, 32], f64>, %y: !nn.tensor<[B], i32>) {
  // expected-error @+2 {{'nn.linear_cross_entropy' op expected weight}}
  // expected-error @+1 {{failed to infer returned types}}
  %l, %dx, %dw, %db = nn.linear_cross_entropy %x, %w, %y : (!nn.tensor<[B, 32], f32>, !nn.tensor<[100, 32], f64>, !nn.tensor<[B], i32>) -> (!nn.tensor<[], f32>, !nn.tensor<[B, 32], f32>, !nn.tensor<[100, 32], f64>, !nn.tensor<[100], f32>)
  return
}

// -----

func.func @missing_logits(%x: !nn.tensor<[B, 32], f32>, %w: !nn.tensor<[100, 32], f32>, %y: !nn.tensor<[B], i32>) {
  // expected-error @+2 {{'nn.linear_cross_entropy' op inferred type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %l, %dx, %dw, %db = nn.linear_cross_entropy %x, %w, %y {with_logits} : (!nn.tensor<[B, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[B], i32>) -> (!nn.tensor<[], f32>, !nn.tensor<[B, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>)
  return
}
