// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// The verifier of nnk.linear_cross_entropy, one case per error.

func.func @ok(%x: !nnk.buffer<[N, 8], f32>, %w: !nnk.buffer<[50, 8], f32>, %t: !nnk.buffer<[N], i32>, %b: !nnk.buffer<[50], f32>, %l: !nnk.buffer<[], f32>, %dx: !nnk.buffer<[N, 8], f32>, %dw: !nnk.buffer<[50, 8], f32>, %db: !nnk.buffer<[50], f32>, %z: !nnk.buffer<[N, 50], f32>) {
  nnk.linear_cross_entropy ins(%x, %w, %t) bias(%b) outs(%l, %dx, %dw, %db) logits(%z) : !nnk.buffer<[N, 8], f32>, !nnk.buffer<[50, 8], f32>, !nnk.buffer<[N], i32>, !nnk.buffer<[50], f32>, !nnk.buffer<[], f32>, !nnk.buffer<[N, 8], f32>, !nnk.buffer<[50, 8], f32>, !nnk.buffer<[50], f32>, !nnk.buffer<[N, 50], f32>
  return
}

// -----

func.func @rank(%x: !nnk.buffer<[8], f32>, %w: !nnk.buffer<[50, 8], f32>, %t: !nnk.buffer<[], i32>, %l: !nnk.buffer<[], f32>, %dx: !nnk.buffer<[8], f32>, %dw: !nnk.buffer<[50, 8], f32>, %db: !nnk.buffer<[50], f32>) {
  // expected-error @+1 {{x must have rank >= 2}}
  nnk.linear_cross_entropy ins(%x, %w, %t) outs(%l, %dx, %dw, %db) : !nnk.buffer<[8], f32>, !nnk.buffer<[50, 8], f32>, !nnk.buffer<[], i32>, !nnk.buffer<[], f32>, !nnk.buffer<[8], f32>, !nnk.buffer<[50, 8], f32>, !nnk.buffer<[50], f32>
  return
}

// -----

func.func @in_features(%x: !nnk.buffer<[N, 4], f32>, %w: !nnk.buffer<[50, 8], f32>, %t: !nnk.buffer<[N], i32>, %l: !nnk.buffer<[], f32>, %dx: !nnk.buffer<[N, 4], f32>, %dw: !nnk.buffer<[50, 8], f32>, %db: !nnk.buffer<[50], f32>) {
  // expected-error @+1 {{x's last dim 4 must equal the weight's in-features 8}}
  nnk.linear_cross_entropy ins(%x, %w, %t) outs(%l, %dx, %dw, %db) : !nnk.buffer<[N, 4], f32>, !nnk.buffer<[50, 8], f32>, !nnk.buffer<[N], i32>, !nnk.buffer<[], f32>, !nnk.buffer<[N, 4], f32>, !nnk.buffer<[50, 8], f32>, !nnk.buffer<[50], f32>
  return
}

// -----

func.func @loss_rank(%x: !nnk.buffer<[N, 8], f32>, %w: !nnk.buffer<[50, 8], f32>, %t: !nnk.buffer<[N], i32>, %l: !nnk.buffer<[1], f32>, %dx: !nnk.buffer<[N, 8], f32>, %dw: !nnk.buffer<[50, 8], f32>, %db: !nnk.buffer<[50], f32>) {
  // expected-error @+1 {{loss must have rank 0, got 1}}
  nnk.linear_cross_entropy ins(%x, %w, %t) outs(%l, %dx, %dw, %db) : !nnk.buffer<[N, 8], f32>, !nnk.buffer<[50, 8], f32>, !nnk.buffer<[N], i32>, !nnk.buffer<[1], f32>, !nnk.buffer<[N, 8], f32>, !nnk.buffer<[50, 8], f32>, !nnk.buffer<[50], f32>
  return
}

// -----

func.func @target(%x: !nnk.buffer<[N, 8], f32>, %w: !nnk.buffer<[50, 8], f32>, %t: !nnk.buffer<[M], i32>, %l: !nnk.buffer<[], f32>, %dx: !nnk.buffer<[N, 8], f32>, %dw: !nnk.buffer<[50, 8], f32>, %db: !nnk.buffer<[50], f32>) {
  // expected-error @+1 {{target must have shape [N], got [M]}}
  nnk.linear_cross_entropy ins(%x, %w, %t) outs(%l, %dx, %dw, %db) : !nnk.buffer<[N, 8], f32>, !nnk.buffer<[50, 8], f32>, !nnk.buffer<[M], i32>, !nnk.buffer<[], f32>, !nnk.buffer<[N, 8], f32>, !nnk.buffer<[50, 8], f32>, !nnk.buffer<[50], f32>
  return
}

// -----

func.func @dweight(%x: !nnk.buffer<[N, 8], f32>, %w: !nnk.buffer<[50, 8], f32>, %t: !nnk.buffer<[N], i32>, %l: !nnk.buffer<[], f32>, %dx: !nnk.buffer<[N, 8], f32>, %dw: !nnk.buffer<[8, 50], f32>, %db: !nnk.buffer<[50], f32>) {
  // expected-error @+1 {{dweight must have shape [50, 8], got [8, 50]}}
  nnk.linear_cross_entropy ins(%x, %w, %t) outs(%l, %dx, %dw, %db) : !nnk.buffer<[N, 8], f32>, !nnk.buffer<[50, 8], f32>, !nnk.buffer<[N], i32>, !nnk.buffer<[], f32>, !nnk.buffer<[N, 8], f32>, !nnk.buffer<[8, 50], f32>, !nnk.buffer<[50], f32>
  return
}

// -----

func.func @logits(%x: !nnk.buffer<[N, 8], f32>, %w: !nnk.buffer<[50, 8], f32>, %t: !nnk.buffer<[N], i32>, %l: !nnk.buffer<[], f32>, %dx: !nnk.buffer<[N, 8], f32>, %dw: !nnk.buffer<[50, 8], f32>, %db: !nnk.buffer<[50], f32>, %z: !nnk.buffer<[N, 8], f32>) {
  // expected-error @+1 {{logits must have shape [N, 50], got [N, 8]}}
  nnk.linear_cross_entropy ins(%x, %w, %t) outs(%l, %dx, %dw, %db) logits(%z) : !nnk.buffer<[N, 8], f32>, !nnk.buffer<[50, 8], f32>, !nnk.buffer<[N], i32>, !nnk.buffer<[], f32>, !nnk.buffer<[N, 8], f32>, !nnk.buffer<[50, 8], f32>, !nnk.buffer<[50], f32>, !nnk.buffer<[N, 8], f32>
  return
}

// -----

func.func @element_type(%x: !nnk.buffer<[N, 8], f32>, %w: !nnk.buffer<[50, 8], f32>, %t: !nnk.buffer<[N], i32>, %l: !nnk.buffer<[], f32>, %dx: !nnk.buffer<[N, 8], f64>, %dw: !nnk.buffer<[50, 8], f32>, %db: !nnk.buffer<[50], f32>) {
  // expected-error @+1 {{buffers must share one element type, got 'f32' and 'f64'}}
  nnk.linear_cross_entropy ins(%x, %w, %t) outs(%l, %dx, %dw, %db) : !nnk.buffer<[N, 8], f32>, !nnk.buffer<[50, 8], f32>, !nnk.buffer<[N], i32>, !nnk.buffer<[], f32>, !nnk.buffer<[N, 8], f64>, !nnk.buffer<[50, 8], f32>, !nnk.buffer<[50], f32>
  return
}
