// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// One case per verifier error of nnk.argmax, nnk.max and nnk.max_grad.

func.func @argmax_axis(%x: !nnk.buffer<[4, 8], f32>, %o: !nnk.buffer<[4], i32>) {
  // expected-error @+1 {{'nnk.argmax' op axis 2 out of range for rank 2}}
  nnk.argmax ins(%x) outs(%o) {axis = 2 : i64} : !nnk.buffer<[4, 8], f32>, !nnk.buffer<[4], i32>
  return
}

// -----

func.func @argmax_i64(%x: !nnk.buffer<[4, 8], f32>, %o: !nnk.buffer<[4], i64>) {
  // expected-error @+1 {{'nnk.argmax' op out must hold i32}}
  nnk.argmax ins(%x) outs(%o) {axis = 1 : i64} : !nnk.buffer<[4, 8], f32>, !nnk.buffer<[4], i64>
  return
}

// -----

func.func @max_shape(%x: !nnk.buffer<[4, 8], f32>, %o: !nnk.buffer<[8], f32>) {
  // expected-error @+1 {{'nnk.max' op out must have shape [4], got [8]}}
  nnk.max ins(%x) outs(%o) {axis = 1 : i64} : !nnk.buffer<[4, 8], f32>, !nnk.buffer<[8], f32>
  return
}

// -----

func.func @max_keepdim_shape(%x: !nnk.buffer<[4, 8], f32>, %o: !nnk.buffer<[4, 8], f32>) {
  // expected-error @+1 {{'nnk.max' op out must have shape [4, 1], got [4, 8]}}
  nnk.max ins(%x) outs(%o) {axis = 1 : i64} : !nnk.buffer<[4, 8], f32>, !nnk.buffer<[4, 8], f32>
  return
}

// -----

func.func @max_types(%x: !nnk.buffer<[4, 8], f32>, %o: !nnk.buffer<[4], f64>) {
  // expected-error @+1 {{'nnk.max' op buffers must share one element type, got 'f32' and 'f64'}}
  nnk.max ins(%x) outs(%o) {axis = 1 : i64} : !nnk.buffer<[4, 8], f32>, !nnk.buffer<[4], f64>
  return
}

// -----

func.func @max_grad_dx(%dy: !nnk.buffer<[4], f32>, %x: !nnk.buffer<[4, 8], f32>, %dx: !nnk.buffer<[4, 7], f32>) {
  // expected-error @+1 {{'nnk.max_grad' op dx must have shape [4, 8], got [4, 7]}}
  nnk.max_grad ins(%dy, %x) outs(%dx) {axis = 1 : i64} : !nnk.buffer<[4], f32>, !nnk.buffer<[4, 8], f32>, !nnk.buffer<[4, 7], f32>
  return
}

// -----

func.func @max_grad_dy(%dy: !nnk.buffer<[8], f32>, %x: !nnk.buffer<[4, 8], f32>, %dx: !nnk.buffer<[4, 8], f32>) {
  // expected-error @+1 {{'nnk.max_grad' op dy must have shape [4], got [8]}}
  nnk.max_grad ins(%dy, %x) outs(%dx) {axis = 1 : i64} : !nnk.buffer<[8], f32>, !nnk.buffer<[4, 8], f32>, !nnk.buffer<[4, 8], f32>
  return
}
