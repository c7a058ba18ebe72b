// RUN: nncc-opt --nncc-pipeline %s | FileCheck %s

// Reductions: negative axes are normalised and sorted; no axes means all.
// CHECK-LABEL: func.func @reduce_sum_axes
// CHECK-SAME: %[[X:[^:]*]]: !nnk.buffer<[B, T, 8], f32>
// CHECK-SAME: %[[Y:[^:]*]]: !nnk.buffer<[B, 1, 1], f32> {nn.name = "y", nnk.output}
// CHECK: nnk.reduce ins(%[[X]]) outs(%[[Y]]) {axes = array<i64: 1, 2>, keepdim = true, kind = #nnk<reduce sum>}
func.func @reduce_sum_axes(%x: !nn.tensor<[B, T, 8], f32> {nn.name = "x"}) -> (!nn.tensor<[B, 1, 1], f32> {nn.name = "y"}) {
  %r = nn.reduce_sum %x {axes = array<i64: -1, 1>, keepdim = true} : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, 1, 1], f32>
  return %r : !nn.tensor<[B, 1, 1], f32>
}

// CHECK-LABEL: func.func @reduce_mean_all
// CHECK-SAME: %[[X:[^:]*]]: !nnk.buffer<[B, 8], f32>
// CHECK-SAME: %[[Y:[^:]*]]: !nnk.buffer<[], f32>
// CHECK: nnk.reduce ins(%[[X]]) outs(%[[Y]]) {axes = array<i64: 0, 1>, kind = #nnk<reduce mean>}
func.func @reduce_mean_all(%x: !nn.tensor<[B, 8], f32> {nn.name = "x"}) -> (!nn.tensor<[], f32> {nn.name = "y"}) {
  %r = nn.reduce_mean %x : (!nn.tensor<[B, 8], f32>) -> !nn.tensor<[], f32>
  return %r : !nn.tensor<[], f32>
}
