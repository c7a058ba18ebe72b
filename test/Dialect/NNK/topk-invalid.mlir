// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// One case per verifier error of nnk.topk and nnk.topk_grad.

func.func @topk_axis(%x: !nnk.buffer<[4, 8], f32>, %v: !nnk.buffer<[4, 2], f32>, %i: !nnk.buffer<[4, 2], i32>) {
  // expected-error @+1 {{'nnk.topk' op axis 2 out of range for rank 2}}
  nnk.topk ins(%x) outs(%v, %i) {axis = 2 : i64, k = 2 : i64} : !nnk.buffer<[4, 8], f32>, !nnk.buffer<[4, 2], f32>, !nnk.buffer<[4, 2], i32>
  return
}

// -----

func.func @topk_k(%x: !nnk.buffer<[4, 8], f32>, %v: !nnk.buffer<[4, 9], f32>, %i: !nnk.buffer<[4, 9], i32>) {
  // expected-error @+1 {{'nnk.topk' op k = 9 out of range [1, 8] of axis 1}}
  nnk.topk ins(%x) outs(%v, %i) {axis = 1 : i64, k = 9 : i64} : !nnk.buffer<[4, 8], f32>, !nnk.buffer<[4, 9], f32>, !nnk.buffer<[4, 9], i32>
  return
}

// -----

func.func @topk_i64(%x: !nnk.buffer<[4, 8], f32>, %v: !nnk.buffer<[4, 2], f32>, %i: !nnk.buffer<[4, 2], i64>) {
  // expected-error @+1 {{'nnk.topk' op indices must hold i32}}
  nnk.topk ins(%x) outs(%v, %i) {axis = 1 : i64, k = 2 : i64} : !nnk.buffer<[4, 8], f32>, !nnk.buffer<[4, 2], f32>, !nnk.buffer<[4, 2], i64>
  return
}

// -----

func.func @topk_values(%x: !nnk.buffer<[4, 8], f32>, %v: !nnk.buffer<[4, 3], f32>, %i: !nnk.buffer<[4, 2], i32>) {
  // expected-error @+1 {{'nnk.topk' op values must have shape [4, 2], got [4, 3]}}
  nnk.topk ins(%x) outs(%v, %i) {axis = 1 : i64, k = 2 : i64} : !nnk.buffer<[4, 8], f32>, !nnk.buffer<[4, 3], f32>, !nnk.buffer<[4, 2], i32>
  return
}

// -----

func.func @topk_indices(%x: !nnk.buffer<[4, 8], f32>, %v: !nnk.buffer<[2, 8], f32>, %i: !nnk.buffer<[4, 2], i32>) {
  // expected-error @+1 {{'nnk.topk' op indices must have shape [2, 8], got [4, 2]}}
  nnk.topk ins(%x) outs(%v, %i) {axis = 0 : i64, k = 2 : i64} : !nnk.buffer<[4, 8], f32>, !nnk.buffer<[2, 8], f32>, !nnk.buffer<[4, 2], i32>
  return
}

// -----

func.func @topk_types(%x: !nnk.buffer<[4, 8], f32>, %v: !nnk.buffer<[4, 2], f64>, %i: !nnk.buffer<[4, 2], i32>) {
  // expected-error @+1 {{'nnk.topk' op buffers must share one element type, got 'f32' and 'f64'}}
  nnk.topk ins(%x) outs(%v, %i) {axis = 1 : i64, k = 2 : i64} : !nnk.buffer<[4, 8], f32>, !nnk.buffer<[4, 2], f64>, !nnk.buffer<[4, 2], i32>
  return
}

// -----

func.func @topk_grad_dx(%dy: !nnk.buffer<[4, 2], f32>, %i: !nnk.buffer<[4, 2], i32>, %dx: !nnk.buffer<[5, 8], f32>) {
  // expected-error @+1 {{'nnk.topk_grad' op dy must have shape [5, 2], got [4, 2]}}
  nnk.topk_grad ins(%dy, %i) outs(%dx) {axis = 1 : i64} : !nnk.buffer<[4, 2], f32>, !nnk.buffer<[4, 2], i32>, !nnk.buffer<[5, 8], f32>
  return
}

// -----

func.func @topk_grad_indices(%dy: !nnk.buffer<[4, 2], f32>, %i: !nnk.buffer<[4, 3], i32>, %dx: !nnk.buffer<[4, 8], f32>) {
  // expected-error @+1 {{'nnk.topk_grad' op indices must have shape [4, 2], got [4, 3]}}
  nnk.topk_grad ins(%dy, %i) outs(%dx) {axis = 1 : i64} : !nnk.buffer<[4, 2], f32>, !nnk.buffer<[4, 3], i32>, !nnk.buffer<[4, 8], f32>
  return
}
