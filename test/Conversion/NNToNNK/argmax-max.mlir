// RUN: nncc-opt %s --nncc-autodiff --nncc-pipeline | FileCheck %s

// nn.argmax, nn.max (keepdim: the same buffer layout) and nn.max_grad become
// one nnk op each, their axis normalised.
module {
  nn.parameter @head : !nn.tensor<[5, 4], f32>
  func.func @forward(%x: !nn.tensor<[B, 4], f32> {nn.name = "x"}, %t: !nn.tensor<[B], i32> {nn.name = "target"}) -> (!nn.tensor<[B], i32> {nn.name = "pred"}, !nn.tensor<[], f32> {nn.name = "loss"}) {
    %head = nn.get_parameter @head : !nn.tensor<[5, 4], f32>
    %logits = nn.linear %x, %head : (!nn.tensor<[B, 4], f32>, !nn.tensor<[5, 4], f32>) -> !nn.tensor<[B, 5], f32>
    %pred = nn.argmax %logits : (!nn.tensor<[B, 5], f32>) -> !nn.tensor<[B], i32>
    %top = nn.max %logits {axis = 1 : i64, keepdim = true} : (!nn.tensor<[B, 5], f32>) -> !nn.tensor<[B, 1], f32>
    %ce = nn.cross_entropy %logits, %t : (!nn.tensor<[B, 5], f32>, !nn.tensor<[B], i32>) -> !nn.tensor<[], f32>
    %m = nn.reduce_mean %top : (!nn.tensor<[B, 1], f32>) -> !nn.tensor<[], f32>
    %loss = nn.add %ce, %m : (!nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[], f32>
    return %pred, %loss : !nn.tensor<[B], i32>, !nn.tensor<[], f32>
  }
}

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[PRED:[^:]*]]: !nnk.buffer<[B], i32> {nn.name = "pred", nnk.output}
// CHECK: nnk.gemm {{.*}} outs(%[[LOGITS:[^)]*]])
// CHECK: nnk.argmax ins(%[[LOGITS]]) outs(%[[PRED]]) {axis = 1 : i64} : !nnk.buffer<[B, 5], f32>, !nnk.buffer<[B], i32>
// CHECK: nnk.max ins(%[[LOGITS]]) outs(%{{.*}}) {axis = 1 : i64} : !nnk.buffer<[B, 5], f32>, !nnk.buffer<[B, 1], f32>
// CHECK-LABEL: func.func @forward_backward(
// CHECK: nnk.argmax
// CHECK: nnk.max ins
// CHECK: nnk.max_grad ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) {axis = 1 : i64} : !nnk.buffer<[B, 1], f32>, !nnk.buffer<[B, 5], f32>, !nnk.buffer<[B, 5], f32>
