// RUN: nncc-opt %s --split-input-file --nncc-autodiff="vjp=1" | FileCheck %s

// Without a loss: one cotangent argument per float result (not the i32
// input), the backward seeded with it, grad.<input> for the float input.
// CHECK-LABEL: func.func @forward_backward
// CHECK-SAME: %[[X:[a-z0-9]+]]: !nn.tensor<[B, 4], f32> {nn.name = "x"}
// CHECK-SAME: %{{[a-z0-9]+}}: !nn.tensor<[B], i32> {nn.name = "ids"}
// CHECK-SAME: %[[CY:[a-z0-9]+]]: !nn.tensor<[B, 4], f32> {nn.name = "cotangent.y"}
// CHECK-SAME: {nn.name = "y"}, !nn.tensor<[4], f32> {nn.name = "grad.w"}, !nn.tensor<[B, 4], f32> {nn.name = "grad.x"})
// CHECK: %[[W:.*]] = nn.get_parameter @w
// CHECK: %[[Y:.*]] = nn.mul %[[X]], %[[W]]
// CHECK: %[[DX:.*]] = nn.mul %[[CY]], %{{.*}}
// CHECK: %[[DWB:.*]] = nn.mul %[[CY]], %[[X]]
// CHECK: %[[DW:.*]] = nn.reduce_to_shape %[[DWB]]
// CHECK: return %[[Y]], %[[DW]], %[[DX]]
func.func @forward(%x: !nn.tensor<[B, 4], f32> {nn.name = "x"}, %i: !nn.tensor<[B], i32> {nn.name = "ids"}) -> (!nn.tensor<[B, 4], f32> {nn.name = "y"}) {
  %p = nn.get_parameter @w : !nn.tensor<[4], f32>
  %y = nn.mul %x, %p : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
  return %y : !nn.tensor<[B, 4], f32>
}
nn.parameter @w : !nn.tensor<[4], f32>

// -----

// With a loss: the loss gets a cotangent too, and the adjoint of a value
// that is both an output and read by the loss is the sum of both seeds.
// CHECK-LABEL: func.func @forward_backward
// CHECK-SAME: %[[X:[a-z0-9]+]]: !nn.tensor<[B, 4], f32> {nn.name = "x"}
// CHECK-SAME: %[[CY:[a-z0-9]+]]: !nn.tensor<[B, 4], f32> {nn.name = "cotangent.y"}
// CHECK-SAME: %[[CL:[a-z0-9]+]]: !nn.tensor<[], f32> {nn.name = "cotangent.loss"}
// CHECK-SAME: {nn.name = "grad.x"})
// CHECK-NOT: nn.constant
// CHECK: %[[FROMLOSS:.*]] = nn.reduce_grad %[[CL]]
// CHECK: nn.add %[[CY]], %[[FROMLOSS]]
func.func @forward(%x: !nn.tensor<[B, 4], f32> {nn.name = "x"}) -> (!nn.tensor<[B, 4], f32> {nn.name = "y"}, !nn.tensor<[], f32> {nn.name = "loss"}) {
  %p = nn.get_parameter @w : !nn.tensor<[4], f32>
  %y = nn.mul %x, %p : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
  %l = nn.reduce_sum %y : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[], f32>
  return %y, %l : !nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>
}
nn.parameter @w : !nn.tensor<[4], f32>
