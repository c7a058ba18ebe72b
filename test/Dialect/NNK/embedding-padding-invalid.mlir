// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// One case per verifier error of nnk.embedding_grad's padding_idx.

func.func @padding_past_table(%ids: !nnk.buffer<[4], i64>, %dy: !nnk.buffer<[4, 8], f32>, %out: !nnk.buffer<[30, 8], f32>) {
  // expected-error @+1 {{'nnk.embedding_grad' op padding_idx 30 is not a row of the table}}
  nnk.embedding_grad ins(%ids, %dy) outs(%out) {padding_idx = 30 : i64} : !nnk.buffer<[4], i64>, !nnk.buffer<[4, 8], f32>, !nnk.buffer<[30, 8], f32>
  return
}

// -----

func.func @padding_negative(%ids: !nnk.buffer<[4], i64>, %dy: !nnk.buffer<[4, 8], f32>, %out: !nnk.buffer<[30, 8], f32>) {
  // expected-error @+1 {{'nnk.embedding_grad' op padding_idx -3 is not a row of the table}}
  nnk.embedding_grad ins(%ids, %dy) outs(%out) {padding_idx = -3 : i64} : !nnk.buffer<[4], i64>, !nnk.buffer<[4, 8], f32>, !nnk.buffer<[30, 8], f32>
  return
}
