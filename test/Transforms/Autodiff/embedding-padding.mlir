// RUN: nncc-opt %s --nncc-autodiff | FileCheck %s
// RUN: nncc-opt %s --nncc-autodiff --nncc-pipeline | FileCheck %s --check-prefix=NNK

// The table adjoint of an nn.embedding with padding_idx skips that row:
// nn.embedding_grad, then nnk.embedding_grad, carry it.
module {
  nn.parameter @emb : !nn.tensor<[30, 4], f32>
  func.func @forward(%ids: !nn.tensor<[B, T], i64> {nn.name = "ids"}) -> (!nn.tensor<[], f32> {nn.name = "loss"}) {
    %t = nn.get_parameter @emb : !nn.tensor<[30, 4], f32>
    %e = nn.embedding %ids, %t {padding_idx = 1 : i64} : (!nn.tensor<[B, T], i64>, !nn.tensor<[30, 4], f32>) -> !nn.tensor<[B, T, 4], f32>
    %loss = nn.reduce_mean %e : (!nn.tensor<[B, T, 4], f32>) -> !nn.tensor<[], f32>
    return %loss : !nn.tensor<[], f32>
  }
}

// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME: %[[IDS:[^:]*]]: !nn.tensor<[B, T], i64>
// CHECK: nn.embedding %[[IDS]], %{{.*}} {padding_idx = 1 : i64}
// CHECK: nn.embedding_grad %{{.*}}, %{{.*}} {num_embeddings = 30 : i64, padding_idx = 1 : i64} : (!nn.tensor<[B, T], i64>, !nn.tensor<[B, T, 4], f32>) -> !nn.tensor<[30, 4], f32>

// NNK-LABEL: func.func @forward_backward(
// NNK: nnk.embedding_grad ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) {padding_idx = 1 : i64} : !nnk.buffer<[B, T], i64>, !nnk.buffer<[B, T, 4], f32>, !nnk.buffer<[30, 4], f32>
