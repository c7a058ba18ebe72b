// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// One case per verifier error of nnk.mask_tokens, nnk.sample, nnk.linear_sample,
// nnk.axial_position and nnk.axial_position_grad.

func.func @mask_rate(%x: !nnk.buffer<[4, 8], i32>, %m: !nnk.buffer<[4, 8], i1>) {
  // expected-error @+1 {{p must be in [0, 1), got 1}}
  nnk.mask_tokens ins(%x) outs(%x, %m) {p = 1.0 : f64, mask_id = 103 : i64} : !nnk.buffer<[4, 8], i32>, !nnk.buffer<[4, 8], i32>, !nnk.buffer<[4, 8], i1>
  return
}

// -----

func.func @mask_types(%x: !nnk.buffer<[4, 8], i32>, %y: !nnk.buffer<[4, 8], i64>, %m: !nnk.buffer<[4, 8], i1>) {
  // expected-error @+1 {{element type}}
  nnk.mask_tokens ins(%x) outs(%y, %m) {p = 0.5 : f64, mask_id = 103 : i64} : !nnk.buffer<[4, 8], i32>, !nnk.buffer<[4, 8], i64>, !nnk.buffer<[4, 8], i1>
  return
}

// -----

func.func @mask_shape(%x: !nnk.buffer<[4, 8], i32>, %m: !nnk.buffer<[4], i1>) {
  // expected-error @+1 {{mask}}
  nnk.mask_tokens ins(%x) outs(%x, %m) {p = 0.5 : f64, mask_id = 103 : i64} : !nnk.buffer<[4, 8], i32>, !nnk.buffer<[4, 8], i32>, !nnk.buffer<[4], i1>
  return
}

// -----

func.func @sample_out_type(%l: !nnk.buffer<[4, 10], f32>, %o: !nnk.buffer<[4], i64>) {
  // expected-error @+1 {{out must hold i32}}
  nnk.sample ins(%l) outs(%o) : !nnk.buffer<[4, 10], f32>, !nnk.buffer<[4], i64>
  return
}

// -----

func.func @sample_rows(%l: !nnk.buffer<[4, 10], f32>, %m: !nnk.buffer<[3], i1>, %o: !nnk.buffer<[4], i32>) {
  // expected-error @+1 {{rows}}
  nnk.sample ins(%l, %m) outs(%o) : !nnk.buffer<[4, 10], f32>, !nnk.buffer<[3], i1>, !nnk.buffer<[4], i32>
  return
}

// -----

func.func @axial_layout(%x: !nnk.buffer<[B, T, 8], f32>, %r: !nnk.buffer<[4, 2, 3], f32>, %c: !nnk.buffer<[1, 4, 5], f32>) {
  // expected-error @+1 {{expected static rows [n1, 1, d1] and cols [1, n2, d2]}}
  nnk.axial_position ins(%x, %r, %c) outs(%x) : !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[4, 2, 3], f32>, !nnk.buffer<[1, 4, 5], f32>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

func.func @axial_width(%x: !nnk.buffer<[B, T, 9], f32>, %r: !nnk.buffer<[4, 1, 3], f32>, %c: !nnk.buffer<[1, 4, 5], f32>) {
  // expected-error @+1 {{x's last dim must be d1 + d2}}
  nnk.axial_position ins(%x, %r, %c) outs(%x) : !nnk.buffer<[B, T, 9], f32>, !nnk.buffer<[4, 1, 3], f32>, !nnk.buffer<[1, 4, 5], f32>, !nnk.buffer<[B, T, 9], f32>
  return
}

// -----

func.func @axial_grad_layout(%dy: !nnk.buffer<[B, T, 8], f32>, %r: !nnk.buffer<[4, 1, 3], f32>, %c: !nnk.buffer<[2, 4, 5], f32>) {
  // expected-error @+1 {{expected static drows [n1, 1, d1] and dcols [1, n2, d2]}}
  nnk.axial_position_grad ins(%dy) outs(%r, %c) : !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[4, 1, 3], f32>, !nnk.buffer<[2, 4, 5], f32>
  return
}

// -----

func.func @linear_sample_out(%x: !nnk.buffer<[4, 8], f32>, %w: !nnk.buffer<[10, 8], f32>, %o: !nnk.buffer<[4], i64>) {
  // expected-error @+1 {{out must hold i32}}
  nnk.linear_sample ins(%x, %w) outs(%o) : !nnk.buffer<[4, 8], f32>, !nnk.buffer<[10, 8], f32>, !nnk.buffer<[4], i64>
  return
}
