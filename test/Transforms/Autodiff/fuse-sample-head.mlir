// RUN: nncc-opt %s --nncc-autodiff="fuse-loss-heads=1" | FileCheck %s
// RUN: nncc-opt %s --nncc-autodiff | FileCheck %s --check-prefix=UNFUSED

// ELECTRA's generator head: the linear's logits feed one cross-entropy and
// a sample (at the masked rows). With fuse-loss-heads the cross-entropy
// becomes nn.linear_cross_entropy and the sample nn.linear_sample (same x,
// weight, bias, rows and seed), so @forward_backward never holds the
// [..., V] logits. A linear also read by anything else is not fused.
module {
  nn.parameter @head.weight : !nn.tensor<[10, 8], f32>
  nn.parameter @head.bias : !nn.tensor<[10], f32>
  func.func @forward(%h: !nn.tensor<[B, T, 8], f32> {nn.name = "h"}, %tokens: !nn.tensor<[B, T], i32> {nn.name = "tokens"},
                     %mask: !nn.tensor<[B, T], i1> {nn.name = "mask"})
      -> (!nn.tensor<[B, T], i32> {nn.name = "corrupted"}, !nn.tensor<[], f32> {nn.name = "loss"}) {
    %w = nn.get_parameter @head.weight : !nn.tensor<[10, 8], f32>
    %b = nn.get_parameter @head.bias : !nn.tensor<[10], f32>
    %z = nn.linear %h, %w, %b : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[10, 8], f32>, !nn.tensor<[10], f32>) -> !nn.tensor<[B, T, 10], f32>
    %s = nn.sample %z, %mask {seed = 5 : i64} : (!nn.tensor<[B, T, 10], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], i32>
    %c = nn.select %mask, %s, %tokens : (!nn.tensor<[B, T], i1>, !nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>) -> !nn.tensor<[B, T], i32>
    %l = nn.cross_entropy %z, %c : (!nn.tensor<[B, T, 10], f32>, !nn.tensor<[B, T], i32>) -> !nn.tensor<[], f32>
    return %c, %l : !nn.tensor<[B, T], i32>, !nn.tensor<[], f32>
  }
}

// CHECK-LABEL: func.func @forward(
// CHECK: nn.linear
// CHECK: nn.sample
// CHECK-NOT: nn.linear_sample

// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME: %[[H:[^:]*]]: !nn.tensor<[B, T, 8], f32> {nn.name = "h"}, %[[TOK:[^:]*]]: !nn.tensor<[B, T], i32> {nn.name = "tokens"}, %[[M:[^:]*]]: !nn.tensor<[B, T], i1> {nn.name = "mask"})
// CHECK: %[[W:.*]] = nn.get_parameter @head.weight
// CHECK: %[[B:.*]] = nn.get_parameter @head.bias
// CHECK-NOT: nn.linear %
// CHECK: %[[S:.*]] = nn.linear_sample %[[H]], %[[W]] bias %[[B]] rows %[[M]] {seed = 5 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[10, 8], f32>, !nn.tensor<[10], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], i32>
// CHECK: %[[C:.*]] = nn.select %[[M]], %[[S]], %[[TOK]]
// CHECK: nn.linear_cross_entropy %[[H]], %[[W]], %[[C]] bias %[[B]]
// CHECK-NOT: nn.sample
// CHECK-NOT: nn.cross_entropy_grad

// UNFUSED-LABEL: func.func @forward_backward(
// UNFUSED: nn.sample
// UNFUSED-NOT: nn.linear_sample
// UNFUSED: nn.cross_entropy_grad
