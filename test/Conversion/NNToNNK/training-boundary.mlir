// RUN: nncc-opt --pass-pipeline='builtin.module(func.func(nn-insert-training-boundary))' %s | FileCheck %s

// A training function gets one nnk.boundary after its last residual (where
// forward_train ends and backward begins); without residuals, after the last
// op a forward result (a result not named grad.<...>) reads, which is before
// every op that reads a cotangent argument (--vjp: those run in backward,
// after set_cotangent). Other functions get none.

// CHECK-LABEL: func.func @train
// CHECK: %[[T:.*]] = nn.tanh
// CHECK: nn.save %[[T]] {rule = "nn.tanh"}
// CHECK: %[[S:.*]] = nn.save %{{.*}} {index = 1 : i64, rule = "nn.sigmoid"}
// CHECK-NEXT: nnk.boundary
// CHECK-NEXT: nn.mul %[[S]]
// CHECK-NOT: nnk.boundary
// CHECK: return
func.func @train(%x: !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> attributes {nn.training} {
  %t = nn.tanh %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %s0 = nn.save %t {rule = "nn.tanh"} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %g = nn.sigmoid %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %s1 = nn.save %g {index = 1 : i64, rule = "nn.sigmoid"} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %m = nn.mul %s1, %s0 : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return %m : !nn.tensor<[B, 4], f32>
}

// CHECK-LABEL: func.func @train_no_residuals
// CHECK: %[[T:.*]] = nn.tanh
// CHECK-NEXT: nnk.boundary
// CHECK-NEXT: return %[[T]]
func.func @train_no_residuals(%x: !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> attributes {nn.training} {
  %t = nn.tanh %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return %t : !nn.tensor<[B, 4], f32>
}

// The VJP of one GRU whose states are the output (test/Python/Inputs/
// gru_layer.nn): nothing is saved (the gradient reads the input, the
// weights and the reserve), and the gradient, which reads the cotangent,
// goes to backward. (The boundary used to go before the return, so
// forward_train ran the gradient with the default cotangent.)
nn.parameter @rnn.weight_ih_l0 : !nn.tensor<[18, 4], f32> init #nn.init<uniform, -0.4, 0.4>
nn.parameter @rnn.weight_hh_l0 : !nn.tensor<[18, 6], f32> init #nn.init<uniform, -0.4, 0.4>
nn.parameter @rnn.bias_ih_l0 : !nn.tensor<[18], f32> init #nn.init<uniform, -0.4, 0.4>
nn.parameter @rnn.bias_hh_l0 : !nn.tensor<[18], f32> init #nn.init<uniform, -0.4, 0.4>
// CHECK-LABEL: func.func @vjp_gru_no_residuals
// CHECK: %{{.*}}, %{{.*}}, %[[R:.*]] = nn.gru
// CHECK-NEXT: nnk.boundary
// CHECK-NEXT: nn.get_parameter
// CHECK: nn.gru_grad {{.*}} reserve %[[R]]
// CHECK-NOT: nnk.boundary
// CHECK: return
func.func @vjp_gru_no_residuals(%arg0: !nn.tensor<[B, T, 4], f32> {nn.name = "x"}, %arg1: !nn.tensor<[B, T, 6], f32> {nn.name = "cotangent.h"}) -> (!nn.tensor<[B, T, 6], f32> {nn.name = "h"}, !nn.tensor<[18, 4], f32> {nn.name = "grad.rnn.weight_ih_l0"}, !nn.tensor<[18, 6], f32> {nn.name = "grad.rnn.weight_hh_l0"}, !nn.tensor<[18], f32> {nn.name = "grad.rnn.bias_ih_l0"}, !nn.tensor<[18], f32> {nn.name = "grad.rnn.bias_hh_l0"}, !nn.tensor<[B, T, 4], f32> {nn.name = "grad.x"}) attributes {nn.training} {
  %0 = nn.get_parameter @rnn.weight_ih_l0 : !nn.tensor<[18, 4], f32>
  %1 = nn.get_parameter @rnn.weight_hh_l0 : !nn.tensor<[18, 6], f32>
  %2 = nn.get_parameter @rnn.bias_ih_l0 : !nn.tensor<[18], f32>
  %3 = nn.get_parameter @rnn.bias_hh_l0 : !nn.tensor<[18], f32>
  %y, %h_n, %reserve = nn.gru %arg0 weights(%0, %1, %2, %3) {hidden_size = 6 : i64} : (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[18, 4], f32>, !nn.tensor<[18, 6], f32>, !nn.tensor<[18], f32>, !nn.tensor<[18], f32>) -> (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[1, B, 6], f32>, !nn.reserve)
  %4 = nn.get_parameter @rnn.weight_ih_l0 : !nn.tensor<[18, 4], f32>
  %5 = nn.get_parameter @rnn.weight_hh_l0 : !nn.tensor<[18, 6], f32>
  %6 = nn.get_parameter @rnn.bias_ih_l0 : !nn.tensor<[18], f32>
  %7 = nn.get_parameter @rnn.bias_hh_l0 : !nn.tensor<[18], f32>
  %dx, %dh0, %dweights:4 = nn.gru_grad %arg0 weights(%4, %5, %6, %7) dy %arg1 reserve %reserve {hidden_size = 6 : i64} : (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[18, 4], f32>, !nn.tensor<[18, 6], f32>, !nn.tensor<[18], f32>, !nn.tensor<[18], f32>, !nn.tensor<[B, T, 6], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 6], f32>, !nn.tensor<[18, 4], f32>, !nn.tensor<[18, 6], f32>, !nn.tensor<[18], f32>, !nn.tensor<[18], f32>)
  return %y, %dweights#0, %dweights#1, %dweights#2, %dweights#3, %dx : !nn.tensor<[B, T, 6], f32>, !nn.tensor<[18, 4], f32>, !nn.tensor<[18, 6], f32>, !nn.tensor<[18], f32>, !nn.tensor<[18], f32>, !nn.tensor<[B, T, 4], f32>
}

// Without residuals and with an op of the backward that reads no cotangent
// before the first that does: the boundary still goes where the forward
// ends.
// CHECK-LABEL: func.func @vjp_no_residuals
// CHECK: %[[Y:.*]] = nn.tanh
// CHECK-NEXT: nnk.boundary
// CHECK-NEXT: %[[D:.*]] = nn.sigmoid
// CHECK-NEXT: nn.mul %arg1, %[[D]]
// CHECK-NOT: nnk.boundary
// CHECK: return %[[Y]]
func.func @vjp_no_residuals(%x: !nn.tensor<[B, 4], f32> {nn.name = "x"}, %c: !nn.tensor<[B, 4], f32> {nn.name = "cotangent.y"}) -> (!nn.tensor<[B, 4], f32> {nn.name = "y"}, !nn.tensor<[B, 4], f32> {nn.name = "grad.x"}) attributes {nn.training} {
  %y = nn.tanh %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %d = nn.sigmoid %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %g = nn.mul %c, %d : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return %y, %g : !nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>
}

// CHECK-LABEL: func.func @infer
// CHECK-NOT: nnk.boundary
// CHECK: return
func.func @infer(%x: !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> {
  %t = nn.tanh %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return %t : !nn.tensor<[B, 4], f32>
}
