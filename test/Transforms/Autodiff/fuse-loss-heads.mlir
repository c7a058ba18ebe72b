// RUN: nncc-opt %s --nncc-autodiff="fuse-loss-heads=1" | FileCheck %s
// RUN: nncc-opt %s --nncc-autodiff | FileCheck %s --check-prefix=UNFUSED
// RUN: nncc-opt %s --nncc-autodiff="fuse-loss-heads=1 vjp=1" | FileCheck %s --check-prefix=UNFUSED

// fuse-loss-heads: in @forward_backward the linear feeding only the
// cross-entropy becomes nn.linear_cross_entropy (writing the returned
// logits); its rule scales the saved unit-adjoint gradients by the loss
// adjoint. @forward keeps the unfused form; so does the VJP.
module {
  nn.parameter @fc.weight : !nn.tensor<[10, 8], f32>
  nn.parameter @fc.bias : !nn.tensor<[10], f32>
  func.func @forward(%x: !nn.tensor<[B, T, 8], f32> {nn.name = "x"}, %target: !nn.tensor<[B, T], i32> {nn.name = "target"}) -> (!nn.tensor<[B, T, 10], f32> {nn.name = "logits"}, !nn.tensor<[], f32> {nn.name = "loss"}) {
    %w = nn.get_parameter @fc.weight : !nn.tensor<[10, 8], f32>
    %b = nn.get_parameter @fc.bias : !nn.tensor<[10], f32>
    %d = nn.dropout %x {p = 0.1 : f64, seed = 7 : i64} : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
    %z = nn.linear %d, %w, %b : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[10, 8], f32>, !nn.tensor<[10], f32>) -> !nn.tensor<[B, T, 10], f32>
    %l = nn.cross_entropy %z, %target : (!nn.tensor<[B, T, 10], f32>, !nn.tensor<[B, T], i32>) -> !nn.tensor<[], f32>
    return %z, %l : !nn.tensor<[B, T, 10], f32>, !nn.tensor<[], f32>
  }
}

// CHECK-LABEL: func.func @forward(
// CHECK: nn.linear
// CHECK: nn.cross_entropy
// CHECK-NOT: nn.linear_cross_entropy

// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME: %{{.*}}: !nn.tensor<[B, T, 8], f32> {nn.name = "x"}, %[[T:.*]]: !nn.tensor<[B, T], i32> {nn.name = "target"})
// CHECK: %[[W:.*]] = nn.get_parameter @fc.weight
// CHECK: %[[B:.*]] = nn.get_parameter @fc.bias
// CHECK: %[[D:.*]] = nn.dropout
// CHECK-NOT: nn.linear %
// CHECK: %[[L:.*]], %[[DX:.*]], %[[DW:.*]], %[[DB:.*]], %[[Z:.*]] = nn.linear_cross_entropy %[[D]], %[[W]], %[[T]] bias %[[B]] {with_logits}
// CHECK-NOT: nn.cross_entropy
// x is an input: its gradient is neither saved nor scaled.
// CHECK-NOT: nn.save %[[DX]]
// CHECK: %[[SW:.*]] = nn.save %[[DW]]
// CHECK: %[[SB:.*]] = nn.save %[[DB]]
// CHECK: %[[ONE:.*]] = nn.constant 1.0
// CHECK: %[[GW:.*]] = nn.mul %[[SW]], %[[ONE]]
// CHECK: %[[GB:.*]] = nn.mul %[[SB]], %[[ONE]]
// CHECK: return %[[Z]], %[[L]], %[[GW]], %[[GB]]

// UNFUSED-LABEL: func.func @forward_backward(
// UNFUSED-NOT: nn.linear_cross_entropy
// UNFUSED: nn.cross_entropy_grad
