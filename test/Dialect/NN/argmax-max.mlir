// RUN: nncc-opt %s | nncc-opt | FileCheck %s
// RUN: nncc-opt %s --mlir-print-op-generic | nncc-opt | FileCheck %s

// nn.argmax (i32 indices), nn.max and nn.max_grad round-trip; their result
// types are inferred: the axis is dropped, or kept as 1 with keepdim.

// CHECK-LABEL: func.func @argmax_max
// CHECK-SAME: (%[[X:.*]]: !nn.tensor<[B, T, 10], f32>, %[[D:.*]]: !nn.tensor<[B, 4], f64>)
func.func @argmax_max(%x: !nn.tensor<[B, T, 10], f32>, %d: !nn.tensor<[B, 4], f64>)
    -> (!nn.tensor<[B, T], i32>, !nn.tensor<[B, 1, 10], i32>, !nn.tensor<[B, T], f32>, !nn.tensor<[B, 1], f64>) {
  // CHECK: %[[I:.*]] = nn.argmax %[[X]] : (!nn.tensor<[B, T, 10], f32>) -> !nn.tensor<[B, T], i32>
  %i = nn.argmax %x : (!nn.tensor<[B, T, 10], f32>) -> !nn.tensor<[B, T], i32>
  // CHECK: %[[K:.*]] = nn.argmax %[[X]] {axis = -2 : i64, keepdim = true} : (!nn.tensor<[B, T, 10], f32>) -> !nn.tensor<[B, 1, 10], i32>
  %k = nn.argmax %x {axis = -2 : i64, keepdim = true} : (!nn.tensor<[B, T, 10], f32>) -> !nn.tensor<[B, 1, 10], i32>
  // CHECK: %[[M:.*]] = nn.max %[[X]] {axis = 2 : i64} : (!nn.tensor<[B, T, 10], f32>) -> !nn.tensor<[B, T], f32>
  %m = nn.max %x {axis = 2 : i64} : (!nn.tensor<[B, T, 10], f32>) -> !nn.tensor<[B, T], f32>
  // CHECK: %[[N:.*]] = nn.max %[[D]] {axis = 1 : i64, keepdim = true} : (!nn.tensor<[B, 4], f64>) -> !nn.tensor<[B, 1], f64>
  %n = nn.max %d {axis = 1 : i64, keepdim = true} : (!nn.tensor<[B, 4], f64>) -> !nn.tensor<[B, 1], f64>
  // CHECK: return %[[I]], %[[K]], %[[M]], %[[N]]
  return %i, %k, %m, %n : !nn.tensor<[B, T], i32>, !nn.tensor<[B, 1, 10], i32>, !nn.tensor<[B, T], f32>, !nn.tensor<[B, 1], f64>
}

// CHECK-LABEL: func.func @max_grad
// CHECK-SAME: (%[[DY:.*]]: !nn.tensor<[B, 1], f32>, %[[X:.*]]: !nn.tensor<[B, 4], f32>)
func.func @max_grad(%dy: !nn.tensor<[B, 1], f32>, %x: !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> {
  // CHECK: %[[DX:.*]] = nn.max_grad %[[DY]], %[[X]] {axis = 1 : i64, keepdim = true} : (!nn.tensor<[B, 1], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %dx = nn.max_grad %dy, %x {axis = 1 : i64, keepdim = true} : (!nn.tensor<[B, 1], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: return %[[DX]]
  return %dx : !nn.tensor<[B, 4], f32>
}
