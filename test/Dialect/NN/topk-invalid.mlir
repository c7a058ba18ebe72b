// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// One case per error of the type inference of nn.topk and nn.topk_grad.

func.func @topk_axis(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.topk' op axis 2 is out of range for '!nn.tensor<[B, 4], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = nn.topk %x {k = 1 : i64, axis = 2 : i64} : (!nn.tensor<[B, 4], f32>) -> (!nn.tensor<[B, 1], f32>, !nn.tensor<[B, 1], i32>)
  return
}

// -----

func.func @topk_negative_axis(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.topk' op axis -3 is out of range for '!nn.tensor<[B, 4], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = nn.topk %x {k = 1 : i64, axis = -3 : i64} : (!nn.tensor<[B, 4], f32>) -> (!nn.tensor<[B, 1], f32>, !nn.tensor<[B, 1], i32>)
  return
}

// -----

func.func @topk_k_large(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.topk' op k = 5 must be in [1, 4] (the size of axis -1 of '!nn.tensor<[B, 4], f32>')}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = nn.topk %x {k = 5 : i64} : (!nn.tensor<[B, 4], f32>) -> (!nn.tensor<[B, 5], f32>, !nn.tensor<[B, 5], i32>)
  return
}

// -----

func.func @topk_k_zero(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.topk' op k = 0 must be in [1, 4] (the size of axis -1 of '!nn.tensor<[B, 4], f32>')}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = nn.topk %x {k = 0 : i64} : (!nn.tensor<[B, 4], f32>) -> (!nn.tensor<[B, 0], f32>, !nn.tensor<[B, 0], i32>)
  return
}

// -----

func.func @topk_symbolic(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.topk' op needs a static size along axis 0 of '!nn.tensor<[B, 4], f32>' (k is checked against it)}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = nn.topk %x {k = 1 : i64, axis = 0 : i64} : (!nn.tensor<[B, 4], f32>) -> (!nn.tensor<[1, 4], f32>, !nn.tensor<[1, 4], i32>)
  return
}

// -----

func.func @topk_int(%x: !nn.tensor<[B, 4], i32>) {
  // expected-error @+1 {{'nn.topk' op operand #0 must be nn tensor of floating-point values, but got '!nn.tensor<[B, 4], i32>'}}
  %v, %i = nn.topk %x {k = 1 : i64} : (!nn.tensor<[B, 4], i32>) -> (!nn.tensor<[B, 1], i32>, !nn.tensor<[B, 1], i32>)
  return
}

// -----

func.func @topk_result(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.topk' op inferred type(s) '!nn.tensor<[B, 2], f32>', '!nn.tensor<[B, 2], i32>' are incompatible with return type(s) of operation '!nn.tensor<[B, 2], f32>', '!nn.tensor<[B, 2], i64>'}}
  // expected-error @+1 {{'nn.topk' op failed to infer returned types}}
  %v, %i = nn.topk %x {k = 2 : i64} : (!nn.tensor<[B, 4], f32>) -> (!nn.tensor<[B, 2], f32>, !nn.tensor<[B, 2], i64>)
  return
}

// -----

func.func @topk_grad_shape(%dy: !nn.tensor<[B, 2], f32>, %i: !nn.tensor<[B, 3], i32>) {
  // expected-error @+2 {{'nn.topk_grad' op expected indices (nn.topk's, of dy's shape) of shape [B, 2], got [B, 3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx = nn.topk_grad %dy, %i {size = 4 : i64} : (!nn.tensor<[B, 2], f32>, !nn.tensor<[B, 3], i32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @topk_grad_i64(%dy: !nn.tensor<[B, 2], f32>, %i: !nn.tensor<[B, 2], i64>) {
  // expected-error @+2 {{'nn.topk_grad' op expected indices to have element type 'i32', got 'i64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx = nn.topk_grad %dy, %i {size = 4 : i64} : (!nn.tensor<[B, 2], f32>, !nn.tensor<[B, 2], i64>) -> !nn.tensor<[B, 4], f32>
  return
}
