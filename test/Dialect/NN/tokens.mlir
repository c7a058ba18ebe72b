// RUN: nncc-opt %s | nncc-opt | FileCheck %s
// RUN: nncc-opt %s --mlir-print-op-generic | nncc-opt | FileCheck %s

// nn.mask_tokens, nn.sample, nn.linear_sample, nn.stop_gradient,
// nn.axial_position and nn.axial_position_grad round-trip; their result types
// are inferred.

// CHECK-LABEL: func.func @electra_corruption
// CHECK-SAME: (%[[X:.*]]: !nn.tensor<[B, T], i32>, %[[L:.*]]: !nn.tensor<[B, T, 100], f32>)
func.func @electra_corruption(%x: !nn.tensor<[B, T], i32>, %logits: !nn.tensor<[B, T, 100], f32>)
    -> (!nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>) {
  // CHECK: %[[MASKED:.*]], %[[MASK:.*]] = nn.mask_tokens %[[X]] {mask_id = 103 : i64, p = 1.500000e-01 : f64, seed = 3 : i64} : (!nn.tensor<[B, T], i32>) -> (!nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i1>)
  %masked, %mask = nn.mask_tokens %x {p = 0.15 : f64, mask_id = 103 : i64, seed = 3 : i64} : (!nn.tensor<[B, T], i32>) -> (!nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i1>)
  // CHECK: %[[ALL:.*]] = nn.sample %[[L]] {seed = 4 : i64} : (!nn.tensor<[B, T, 100], f32>) -> !nn.tensor<[B, T], i32>
  %all = nn.sample %logits {seed = 4 : i64} : (!nn.tensor<[B, T, 100], f32>) -> !nn.tensor<[B, T], i32>
  // CHECK: %[[SOME:.*]] = nn.sample %[[L]], %[[MASK]] {seed = 5 : i64} : (!nn.tensor<[B, T, 100], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], i32>
  %some = nn.sample %logits, %mask {seed = 5 : i64} : (!nn.tensor<[B, T, 100], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], i32>
  // CHECK: return %[[MASKED]], %[[ALL]], %[[SOME]]
  return %masked, %all, %some : !nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>
}

// CHECK-LABEL: func.func @positions
// CHECK-SAME: (%[[H:.*]]: !nn.tensor<[B, T, 64], f32>, %[[R:.*]]: !nn.tensor<[8, 1, 16], f32>, %[[C:.*]]: !nn.tensor<[1, 16, 48], f32>)
func.func @positions(%h: !nn.tensor<[B, T, 64], f32>, %rows: !nn.tensor<[8, 1, 16], f32>,
                     %cols: !nn.tensor<[1, 16, 48], f32>)
    -> (!nn.tensor<[B, T, 64], f32>, !nn.tensor<[8, 1, 16], f32>, !nn.tensor<[1, 16, 48], f32>) {
  // CHECK: %[[Y:.*]] = nn.axial_position %[[H]], %[[R]], %[[C]] : (!nn.tensor<[B, T, 64], f32>, !nn.tensor<[8, 1, 16], f32>, !nn.tensor<[1, 16, 48], f32>) -> !nn.tensor<[B, T, 64], f32>
  %y = nn.axial_position %h, %rows, %cols : (!nn.tensor<[B, T, 64], f32>, !nn.tensor<[8, 1, 16], f32>, !nn.tensor<[1, 16, 48], f32>) -> !nn.tensor<[B, T, 64], f32>
  // CHECK: %[[S:.*]] = nn.stop_gradient %[[Y]] : (!nn.tensor<[B, T, 64], f32>) -> !nn.tensor<[B, T, 64], f32>
  %s = nn.stop_gradient %y : (!nn.tensor<[B, T, 64], f32>) -> !nn.tensor<[B, T, 64], f32>
  // CHECK: %[[DR:.*]], %[[DC:.*]] = nn.axial_position_grad %[[S]] {d1 = 16 : i64, shape = array<i64: 8, 16>} : (!nn.tensor<[B, T, 64], f32>) -> (!nn.tensor<[8, 1, 16], f32>, !nn.tensor<[1, 16, 48], f32>)
  %dr, %dc = nn.axial_position_grad %s {shape = array<i64: 8, 16>, d1 = 16 : i64} : (!nn.tensor<[B, T, 64], f32>) -> (!nn.tensor<[8, 1, 16], f32>, !nn.tensor<[1, 16, 48], f32>)
  return %y, %dr, %dc : !nn.tensor<[B, T, 64], f32>, !nn.tensor<[8, 1, 16], f32>, !nn.tensor<[1, 16, 48], f32>
}

// CHECK-LABEL: func.func @sampling_head
// CHECK-SAME: (%[[H:.*]]: !nn.tensor<[B, T, 32], f32>, %[[W:.*]]: !nn.tensor<[100, 32], f32>, %[[BIAS:.*]]: !nn.tensor<[100], f32>, %[[M:.*]]: !nn.tensor<[B, T], i1>)
func.func @sampling_head(%h: !nn.tensor<[B, T, 32], f32>, %w: !nn.tensor<[100, 32], f32>,
                         %b: !nn.tensor<[100], f32>, %m: !nn.tensor<[B, T], i1>)
    -> (!nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>) {
  // CHECK: nn.linear_sample %[[H]], %[[W]] bias %[[BIAS]] rows %[[M]] {seed = 4 : i64} : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], i32>
  %s = nn.linear_sample %h, %w bias %b rows %m {seed = 4 : i64} : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], i32>
  // CHECK: nn.linear_sample %[[H]], %[[W]] : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>) -> !nn.tensor<[B, T], i32>
  %t = nn.linear_sample %h, %w : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>) -> !nn.tensor<[B, T], i32>
  return %s, %t : !nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>
}
