// RUN: nncc-opt %s | nncc-opt | FileCheck %s

// nn.cumsum on floats and integers, forward and reverse.
// CHECK-LABEL: func.func @cumsum
// CHECK-SAME: (%[[X:[^:]*]]: !nn.tensor<[B, T, 4], f32>, %[[I:[^:]*]]: !nn.tensor<[B, T], i32>)
func.func @cumsum(%x: !nn.tensor<[B, T, 4], f32>, %ids: !nn.tensor<[B, T], i32>) {
  // CHECK: nn.cumsum %[[X]] {axis = 1 : i64} : (!nn.tensor<[B, T, 4], f32>) -> !nn.tensor<[B, T, 4], f32>
  %0 = nn.cumsum %x {axis = 1 : i64} : (!nn.tensor<[B, T, 4], f32>) -> !nn.tensor<[B, T, 4], f32>
  // CHECK: nn.cumsum %[[I]] {reverse = true} : (!nn.tensor<[B, T], i32>) -> !nn.tensor<[B, T], i32>
  %1 = nn.cumsum %ids {axis = -1 : i64, reverse = true} : (!nn.tensor<[B, T], i32>) -> !nn.tensor<[B, T], i32>
  return
}
