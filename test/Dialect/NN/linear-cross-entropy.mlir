// RUN: nncc-opt %s | nncc-opt | FileCheck %s

// The fused loss head round-trips, with and without bias and logits.

// CHECK-LABEL: func.func @head
// CHECK-SAME: (%[[X:.*]]: !nn.tensor<[B, T, 32], f32>, %[[W:.*]]: !nn.tensor<[100, 32], f32>, %[[B:.*]]: !nn.tensor<[100], f32>, %[[Y:.*]]: !nn.tensor<[B, T], i32>)
func.func @head(%x: !nn.tensor<[B, T, 32], f32>, %w: !nn.tensor<[100, 32], f32>,
                %b: !nn.tensor<[100], f32>, %y: !nn.tensor<[B, T], i32>) {
  // CHECK: nn.linear_cross_entropy %[[X]], %[[W]], %[[Y]] bias %[[B]] {ignore_index = 0 : i64} : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[B, T], i32>, !nn.tensor<[100], f32>) -> (!nn.tensor<[], f32>, !nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>)
  %l, %dx, %dw, %db = nn.linear_cross_entropy %x, %w, %y bias %b {ignore_index = 0 : i64} : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[B, T], i32>, !nn.tensor<[100], f32>) -> (!nn.tensor<[], f32>, !nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>)
  // CHECK: nn.linear_cross_entropy %[[X]], %[[W]], %[[Y]] {with_logits} : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[B, T], i32>) -> (!nn.tensor<[], f32>, !nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>, !nn.tensor<[B, T, 100], f32>)
  %l2, %dx2, %dw2, %db2, %z = nn.linear_cross_entropy %x, %w, %y {with_logits} : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[B, T], i32>) -> (!nn.tensor<[], f32>, !nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>, !nn.tensor<[B, T, 100], f32>)
  return
}
