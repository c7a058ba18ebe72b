// RUN: nncc-opt %s --nncc-autodiff | FileCheck %s

// slice, concat, split, reduce_sum, sinusoidal positions and an MSE loss
// whose target is also computed from a parameter.
module {
  nn.parameter @w : !nn.tensor<[6], f32>
  func.func @forward(%x: !nn.tensor<[B, T, 6], f32> {nn.name = "x"}) -> (!nn.tensor<[], f32> {nn.name = "loss"}) {
    %w = nn.get_parameter @w : !nn.tensor<[6], f32>
    %a = nn.mul %x, %w : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[6], f32>) -> !nn.tensor<[B, T, 6], f32>
    %p = nn.sinusoidal_position %a : (!nn.tensor<[B, T, 6], f32>) -> !nn.tensor<[B, T, 6], f32>
    %s1, %s2 = nn.split %p {axis = 2 : i64, sizes = array<i64: 2, 4>} : (!nn.tensor<[B, T, 6], f32>) -> (!nn.tensor<[B, T, 2], f32>, !nn.tensor<[B, T, 4], f32>)
    %c = nn.concat %s2, %s2 {axis = -1 : i64} : (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[B, T, 4], f32>) -> !nn.tensor<[B, T, 8], f32>
    %last = nn.slice %c {starts = array<i64: 0, -1, 0>, stops = array<i64: 9223372036854775807, 9223372036854775807, 9223372036854775807>, steps = array<i64: 1, 1, 1>, squeeze = array<i64: 1>} : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, 8], f32>
    %r = nn.reduce_sum %last {axes = array<i64: 1>, keepdim = true} : (!nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 1], f32>
    %t = nn.reduce_mean %a {axes = array<i64: 1, 2>} : (!nn.tensor<[B, T, 6], f32>) -> !nn.tensor<[B], f32>
    %t1 = nn.slice %t {starts = array<i64: 0>, stops = array<i64: 9223372036854775807>, steps = array<i64: 1>} : (!nn.tensor<[B], f32>) -> !nn.tensor<[B], f32>
    %loss = nn.mse %r, %r : (!nn.tensor<[B, 1], f32>, !nn.tensor<[B, 1], f32>) -> !nn.tensor<[], f32>
    return %loss : !nn.tensor<[], f32>
  }
}

// CHECK-LABEL: func.func @forward_backward(
// CHECK: %[[R:.*]] = nn.reduce_sum %{{.*}} {axes = array<i64: 1>, keepdim = true}
// Only the MSE's operand is saved; the unused reduce_mean/slice chain is
// not differentiated.
// CHECK: %[[S:.*]] = nn.save %[[R]] {rule = "nn.mse"}
// CHECK-NOT: nn.save
// CHECK: %[[D:.*]] = nn.mse_grad %[[S]], %[[S]], %{{.*}}
// CHECK: %[[NEGD:.*]] = nn.neg %[[D]]
// CHECK: %[[DR:.*]] = nn.add %[[D]], %[[NEGD]]
// CHECK: %[[DLAST:.*]] = nn.reduce_grad %[[DR]] {axes = array<i64: 1>, keepdim = true, type = !nn.tensor<[B, 8], f32>}
// CHECK: %[[DC:.*]] = nn.slice_grad %[[DLAST]] {squeeze = array<i64: 1>, starts = array<i64: 0, -1, 0>, {{.*}}type = !nn.tensor<[B, T, 8], f32>}
// CHECK: %[[PIECES:.*]]:2 = nn.split %[[DC]] {axis = 2 : i64, sizes = array<i64: 4, 4>}
// CHECK: %[[DS2:.*]] = nn.add %[[PIECES]]#0, %[[PIECES]]#1
// CHECK: %[[ZERO:.*]] = nn.zeros !nn.tensor<[B, T, 2], f32>
// CHECK: %[[DP:.*]] = nn.concat %[[ZERO]], %[[DS2]] {axis = 2 : i64}
// CHECK: %[[DW:.*]] = nn.mul %[[DP]], %arg0
// CHECK: %[[GW:.*]] = nn.reduce_to_shape %[[DW]] {type = !nn.tensor<[6], f32>}
// CHECK: return %{{.*}}, %[[GW]]
