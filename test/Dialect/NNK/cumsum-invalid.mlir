// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// nnk.cumsum's verifier.

func.func @type(%x: !nnk.buffer<[B, 4], i32>, %y: !nnk.buffer<[B, 4], i64>) {
  // expected-error @+1 {{out must hold x's element type 'i32'}}
  nnk.cumsum ins(%x) outs(%y) {axis = 1 : i64} : !nnk.buffer<[B, 4], i32>, !nnk.buffer<[B, 4], i64>
  return
}

// -----

func.func @axis(%x: !nnk.buffer<[B, 4], f32>, %y: !nnk.buffer<[B, 4], f32>) {
  // expected-error @+1 {{axis 2 out of range for rank 2}}
  nnk.cumsum ins(%x) outs(%y) {axis = 2 : i64} : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[B, 4], f32>
  return
}

// -----

func.func @shape(%x: !nnk.buffer<[B, 4], f32>, %y: !nnk.buffer<[B, 5], f32>) {
  // expected-error @+1 {{out must have shape [B, 4], got [B, 5]}}
  nnk.cumsum ins(%x) outs(%y) {axis = 1 : i64} : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[B, 5], f32>
  return
}
