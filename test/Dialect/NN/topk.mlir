// RUN: nncc-opt %s | nncc-opt | FileCheck %s
// RUN: nncc-opt %s --mlir-print-op-generic | nncc-opt | FileCheck %s

// nn.topk (values and i32 indices, k in place of the axis) and nn.topk_grad
// round-trip; their result types are inferred.

// CHECK-LABEL: func.func @topk
// CHECK-SAME: (%[[X:.*]]: !nn.tensor<[B, T, 10], f32>, %[[D:.*]]: !nn.tensor<[6, B], f64>)
func.func @topk(%x: !nn.tensor<[B, T, 10], f32>, %d: !nn.tensor<[6, B], f64>)
    -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T, 3], i32>, !nn.tensor<[6, B], f64>, !nn.tensor<[6, B], i32>) {
  // CHECK: %[[V:.*]], %[[I:.*]] = nn.topk %[[X]] {k = 3 : i64} : (!nn.tensor<[B, T, 10], f32>) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T, 3], i32>)
  %v, %i = nn.topk %x {k = 3 : i64} : (!nn.tensor<[B, T, 10], f32>) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T, 3], i32>)
  // CHECK: %[[W:.*]], %[[J:.*]] = nn.topk %[[D]] {axis = -2 : i64, k = 6 : i64} : (!nn.tensor<[6, B], f64>) -> (!nn.tensor<[6, B], f64>, !nn.tensor<[6, B], i32>)
  %w, %j = nn.topk %d {k = 6 : i64, axis = -2 : i64} : (!nn.tensor<[6, B], f64>) -> (!nn.tensor<[6, B], f64>, !nn.tensor<[6, B], i32>)
  // CHECK: return %[[V]], %[[I]], %[[W]], %[[J]]
  return %v, %i, %w, %j : !nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T, 3], i32>, !nn.tensor<[6, B], f64>, !nn.tensor<[6, B], i32>
}

// CHECK-LABEL: func.func @topk_grad
// CHECK-SAME: (%[[DY:.*]]: !nn.tensor<[2, B], f32>, %[[I:.*]]: !nn.tensor<[2, B], i32>)
func.func @topk_grad(%dy: !nn.tensor<[2, B], f32>, %i: !nn.tensor<[2, B], i32>) -> !nn.tensor<[7, B], f32> {
  // CHECK: %[[DX:.*]] = nn.topk_grad %[[DY]], %[[I]] {axis = 0 : i64, size = 7 : i64} : (!nn.tensor<[2, B], f32>, !nn.tensor<[2, B], i32>) -> !nn.tensor<[7, B], f32>
  %dx = nn.topk_grad %dy, %i {axis = 0 : i64, size = 7 : i64} : (!nn.tensor<[2, B], f32>, !nn.tensor<[2, B], i32>) -> !nn.tensor<[7, B], f32>
  // CHECK: return %[[DX]]
  return %dx : !nn.tensor<[7, B], f32>
}
