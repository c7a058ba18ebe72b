// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// One case per error of the type inference of nn.argmax, nn.max and
// nn.max_grad.

func.func @argmax_axis(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.argmax' op axis 2 is out of range for '!nn.tensor<[B, 4], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %i = nn.argmax %x {axis = 2 : i64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B], i32>
  return
}

// -----

func.func @max_negative_axis(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.max' op axis -3 is out of range for '!nn.tensor<[B, 4], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %m = nn.max %x {axis = -3 : i64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B], f32>
  return
}

// -----

func.func @argmax_scalar(%x: !nn.tensor<[], f32>) {
  // expected-error @+2 {{'nn.argmax' op axis -1 is out of range for '!nn.tensor<[], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %i = nn.argmax %x : (!nn.tensor<[], f32>) -> !nn.tensor<[], i32>
  return
}

// -----

func.func @argmax_int(%x: !nn.tensor<[B, 4], i32>) {
  // expected-error @+1 {{'nn.argmax' op operand #0 must be nn tensor of floating-point values, but got '!nn.tensor<[B, 4], i32>'}}
  %i = nn.argmax %x : (!nn.tensor<[B, 4], i32>) -> !nn.tensor<[B], i32>
  return
}

// -----

func.func @argmax_result(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.argmax' op inferred type(s) '!nn.tensor<[B], i32>' are incompatible with return type(s) of operation '!nn.tensor<[B], i64>'}}
  // expected-error @+1 {{'nn.argmax' op failed to infer returned types}}
  %i = nn.argmax %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B], i64>
  return
}

// -----

func.func @max_keepdim(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.max' op inferred type(s) '!nn.tensor<[B, 1], f32>' are incompatible with return type(s) of operation '!nn.tensor<[B], f32>'}}
  // expected-error @+1 {{'nn.max' op failed to infer returned types}}
  %m = nn.max %x {axis = 1 : i64, keepdim = true} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B], f32>
  return
}

// -----

func.func @max_grad_shape(%dy: !nn.tensor<[B, 4], f32>, %x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.max_grad' op expected dy (nn.max's result) of shape [B], got [B, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx = nn.max_grad %dy, %x {axis = 1 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @max_grad_type(%dy: !nn.tensor<[B], f64>, %x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.max_grad' op expected dy to have element type 'f32', got 'f64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx = nn.max_grad %dy, %x {axis = 1 : i64} : (!nn.tensor<[B], f64>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}
