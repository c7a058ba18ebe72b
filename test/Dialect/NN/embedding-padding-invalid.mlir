// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// One case per verifier error of padding_idx on nn.embedding and
// nn.embedding_grad: it is -1 (none) or a row of the table.

func.func @embedding_padding_past_table(%i: !nn.tensor<[B], i64>, %t: !nn.tensor<[10, 4], f32>) {
  // expected-error @+1 {{'nn.embedding' op padding_idx 10 is not a row of the table (-1 or 0..9)}}
  %0 = nn.embedding %i, %t {padding_idx = 10 : i64} : (!nn.tensor<[B], i64>, !nn.tensor<[10, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @embedding_padding_negative(%i: !nn.tensor<[B], i64>, %t: !nn.tensor<[10, 4], f32>) {
  // expected-error @+1 {{'nn.embedding' op padding_idx -2 is not a row of the table (-1 or 0..9)}}
  %0 = nn.embedding %i, %t {padding_idx = -2 : i64} : (!nn.tensor<[B], i64>, !nn.tensor<[10, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @embedding_grad_padding(%i: !nn.tensor<[B], i64>, %dy: !nn.tensor<[B, 4], f32>) {
  // expected-error @+1 {{'nn.embedding_grad' op padding_idx 10 is not a row of the 10-row table}}
  %0 = nn.embedding_grad %i, %dy {num_embeddings = 10 : i64, padding_idx = 10 : i64} : (!nn.tensor<[B], i64>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[10, 4], f32>
  return
}
