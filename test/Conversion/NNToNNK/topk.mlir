// RUN: nncc-opt %s --nncc-autodiff --nncc-pipeline | FileCheck %s

// nn.topk becomes one nnk.topk with two outs, nn.topk_grad one
// nnk.topk_grad; their axes are normalised.
module {
  nn.parameter @head : !nn.tensor<[5, 4], f32>
  func.func @forward(%x: !nn.tensor<[B, 4], f32> {nn.name = "x"}) -> (!nn.tensor<[B, 2], i32> {nn.name = "idx"}, !nn.tensor<[], f32> {nn.name = "loss"}) {
    %head = nn.get_parameter @head : !nn.tensor<[5, 4], f32>
    %logits = nn.linear %x, %head : (!nn.tensor<[B, 4], f32>, !nn.tensor<[5, 4], f32>) -> !nn.tensor<[B, 5], f32>
    %v, %i = nn.topk %logits {k = 2 : i64} : (!nn.tensor<[B, 5], f32>) -> (!nn.tensor<[B, 2], f32>, !nn.tensor<[B, 2], i32>)
    %loss = nn.reduce_mean %v : (!nn.tensor<[B, 2], f32>) -> !nn.tensor<[], f32>
    return %i, %loss : !nn.tensor<[B, 2], i32>, !nn.tensor<[], f32>
  }
}

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[IDX:[^:]*]]: !nnk.buffer<[B, 2], i32> {nn.name = "idx", nnk.output}
// CHECK: nnk.gemm {{.*}} outs(%[[LOGITS:[^)]*]])
// CHECK: nnk.topk ins(%[[LOGITS]]) outs(%{{.*}}, %[[IDX]]) {axis = 1 : i64, k = 2 : i64} : !nnk.buffer<[B, 5], f32>, !nnk.buffer<[B, 2], f32>, !nnk.buffer<[B, 2], i32>
// CHECK-LABEL: func.func @forward_backward(
// CHECK: nnk.topk ins
// CHECK: nnk.topk_grad ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) {axis = 1 : i64} : !nnk.buffer<[B, 2], f32>, !nnk.buffer<[B, 2], i32>, !nnk.buffer<[B, 5], f32>
