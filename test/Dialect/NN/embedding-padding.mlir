// RUN: nncc-opt %s | nncc-opt | FileCheck %s
// RUN: nncc-opt %s --mlir-print-op-generic | nncc-opt | FileCheck %s

// nn.embedding and nn.embedding_grad carry padding_idx (PyTorch's
// nn.Embedding(padding_idx=), Hugging Face's pad_token_id); -1, the
// default, is not printed.

// CHECK-LABEL: func.func @embedding_padding
// CHECK-SAME: (%[[IDS:.*]]: !nn.tensor<[B, T], i64>, %[[TAB:.*]]: !nn.tensor<[100, 8], f32>, %[[DY:.*]]: !nn.tensor<[B, T, 8], f32>)
func.func @embedding_padding(%ids: !nn.tensor<[B, T], i64>, %t: !nn.tensor<[100, 8], f32>, %dy: !nn.tensor<[B, T, 8], f32>)
    -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, T, 8], f32>, !nn.tensor<[100, 8], f32>, !nn.tensor<[100, 8], f32>) {
  // CHECK: nn.embedding %[[IDS]], %[[TAB]] {padding_idx = 0 : i64} : (!nn.tensor<[B, T], i64>, !nn.tensor<[100, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  %0 = nn.embedding %ids, %t {padding_idx = 0 : i64} : (!nn.tensor<[B, T], i64>, !nn.tensor<[100, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  // CHECK-NEXT: nn.embedding %[[IDS]], %[[TAB]] : (
  %1 = nn.embedding %ids, %t {padding_idx = -1 : i64} : (!nn.tensor<[B, T], i64>, !nn.tensor<[100, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  // CHECK-NEXT: nn.embedding_grad %[[IDS]], %[[DY]] {num_embeddings = 100 : i64, padding_idx = 99 : i64} : (!nn.tensor<[B, T], i64>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[100, 8], f32>
  %2 = nn.embedding_grad %ids, %dy {num_embeddings = 100 : i64, padding_idx = 99 : i64} : (!nn.tensor<[B, T], i64>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[100, 8], f32>
  // CHECK-NEXT: nn.embedding_grad %[[IDS]], %[[DY]] {num_embeddings = 100 : i64} : (
  %3 = nn.embedding_grad %ids, %dy {num_embeddings = 100 : i64} : (!nn.tensor<[B, T], i64>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[100, 8], f32>
  return %0, %1, %2, %3 : !nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, T, 8], f32>, !nn.tensor<[100, 8], f32>, !nn.tensor<[100, 8], f32>
}
