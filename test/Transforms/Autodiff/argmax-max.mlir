// RUN: nncc-opt %s --nncc-autodiff | FileCheck %s

// argmax next to a loss passes no adjoint (an i32 result); max saves its
// input and gets nn.max_grad (dy to the first maximum of each row).
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

// CHECK-LABEL: func.func @forward_backward(
// CHECK: %[[LOGITS:.*]] = nn.linear
// CHECK: %[[PRED:.*]] = nn.argmax %[[LOGITS]] : (!nn.tensor<[B, 5], f32>) -> !nn.tensor<[B], i32>
// CHECK: nn.max %[[LOGITS]] {axis = 1 : i64, keepdim = true}
// CHECK: %[[LOSS:.*]] = nn.add
// CHECK: %[[SAVED:.*]] = nn.save %[[LOGITS]] {rule = "nn.max"}
// CHECK-NOT: nn.save {{.*}}"nn.argmax"
// CHECK: nn.max_grad %{{.*}}, %[[SAVED]] {axis = 1 : i64, keepdim = true} : (!nn.tensor<[B, 1], f32>, !nn.tensor<[B, 5], f32>) -> !nn.tensor<[B, 5], f32>
// CHECK: return %[[PRED]], %[[LOSS]], %{{.*}} : !nn.tensor<[B], i32>, !nn.tensor<[], f32>, !nn.tensor<[5, 4], f32>
