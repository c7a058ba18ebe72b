// RUN: nncc-opt %s --nncc-autodiff | FileCheck %s
// RUN: nncc-opt %s --nncc-autodiff="wrt-inputs=x" | FileCheck %s --check-prefix=WRT

// Elementwise rules, broadcast adjoints summed back (nn.reduce_to_shape), a
// parameter read twice (gradients accumulated), an unused parameter (zeros).
module {
  nn.parameter @w : !nn.tensor<[4], f32>
  nn.parameter @unused : !nn.tensor<[2], f32>
  func.func @forward(%x: !nn.tensor<[B, 4], f32> {nn.name = "x"}) -> (!nn.tensor<[], f32> {nn.name = "loss"}) {
    %w = nn.get_parameter @w : !nn.tensor<[4], f32>
    %a = nn.mul %x, %w : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
    %t = nn.tanh %a : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    %s = nn.sigmoid %t : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    %e = nn.exp %s : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    %l = nn.log %e : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    %r = nn.relu %l : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    %k = nn.leaky_relu %r {alpha = 0.3 : f64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    %g = nn.gelu %k : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    %n = nn.neg %g : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    %w2 = nn.get_parameter @w : !nn.tensor<[4], f32>
    %d = nn.div %n, %w2 : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
    %b = nn.sub %d, %w2 : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
    %c = nn.add %b, %x : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    %loss = nn.reduce_mean %c : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[], f32>
    return %loss : !nn.tensor<[], f32>
  }
}

// CHECK-LABEL: func.func @forward(
// CHECK-NOT: nn.save
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME: -> (!nn.tensor<[], f32> {nn.name = "loss"}, !nn.tensor<[4], f32> {nn.name = "grad.w"}, !nn.tensor<[2], f32> {nn.name = "grad.unused"})
// CHECK-SAME: attributes {nn.training}
// CHECK: %[[W:.*]] = nn.get_parameter @w
// CHECK: %[[TANH:.*]] = nn.tanh
// CHECK: %[[SIG:.*]] = nn.sigmoid %[[TANH]]
// CHECK: %[[EXP:.*]] = nn.exp %[[SIG]]
// CHECK: %[[LOG:.*]] = nn.log %[[EXP]]
// CHECK: %[[RELU:.*]] = nn.relu %[[LOG]]
// CHECK: %[[LEAKY:.*]] = nn.leaky_relu %[[RELU]]
// CHECK: %[[NEG:.*]] = nn.neg
// CHECK: %[[LOSS:.*]] = nn.reduce_mean
// Residuals: results for tanh/sigmoid/exp, inputs for log/relu/leaky/gelu,
// the numerator of div; x is an argument, w a parameter: neither is saved.
// CHECK: %[[S_TANH:.*]] = nn.save %[[TANH]] {rule = "nn.tanh"}
// CHECK: %[[S_SIG:.*]] = nn.save %[[SIG]] {index = 1 : i64, rule = "nn.sigmoid"}
// CHECK: %[[S_EXP:.*]] = nn.save %[[EXP]] {index = 2 : i64, rule = "nn.exp"}
// CHECK: %[[S_LOG:.*]] = nn.save %[[LOG]] {index = 3 : i64, rule = "nn.relu"}
// CHECK: nn.save %[[RELU]] {index = 4 : i64, rule = "nn.leaky_relu"}
// CHECK: nn.save %[[LEAKY]] {index = 5 : i64, rule = "nn.gelu"}
// CHECK: %[[S_NEG:.*]] = nn.save %[[NEG]] {index = 6 : i64, rule = "nn.div"}
// CHECK-NOT: nn.save
// CHECK: %[[ONE:.*]] = nn.constant 1.0
// CHECK: %[[DC:.*]] = nn.reduce_grad %[[ONE]] {mean = true, type = !nn.tensor<[B, 4], f32>}
// sub: -dy summed to [4]
// CHECK: %[[DSUB:.*]] = nn.neg %[[DC]]
// CHECK: %[[GW1:.*]] = nn.reduce_to_shape %[[DSUB]] {type = !nn.tensor<[4], f32>}
// div: dy / w and -dy * n / w^2
// CHECK: %[[W2:.*]] = nn.get_parameter @w
// CHECK: %[[DN:.*]] = nn.div %[[DC]], %[[W2]]
// CHECK: nn.mul %[[DC]], %[[S_NEG]]
// CHECK: %[[GW2:.*]] = nn.reduce_to_shape
// CHECK: %[[GW12:.*]] = nn.add %[[GW1]], %[[GW2]]
// CHECK: %[[DG:.*]] = nn.neg %[[DN]]
// CHECK: nn.activation_grad %{{.*}}, %[[DG]] {kind = "gelu"}
// CHECK: nn.activation_grad {{.*}} {alpha = 3.000000e-01 : f64, kind = "leaky_relu"}
// CHECK: %[[DR:.*]] = nn.activation_grad %[[S_LOG]], %{{.*}} {kind = "relu"}
// CHECK: %[[DE:.*]] = nn.div %[[DR]], %[[S_EXP]]
// CHECK: nn.mul %[[DE]], %[[S_EXP]]
// CHECK: nn.sub %{{.*}}, %[[S_SIG]]
// CHECK: nn.mul %[[S_TANH]], %[[S_TANH]]
// CHECK: %[[DA:.*]] = nn.mul %{{.*}}, %{{.*}} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>)
// mul: dy * x, summed to [4]; added to the other read of w
// CHECK: %[[DW:.*]] = nn.mul %[[DA]], %arg0
// CHECK: %[[GW3:.*]] = nn.reduce_to_shape %[[DW]] {type = !nn.tensor<[4], f32>}
// CHECK: %[[GW:.*]] = nn.add %[[GW12]], %[[GW3]]
// CHECK: %[[Z:.*]] = nn.zeros !nn.tensor<[2], f32>
// CHECK: return %[[LOSS]], %[[GW]], %[[Z]]

// WRT-LABEL: func.func @forward_backward(
// WRT-SAME: !nn.tensor<[B, 4], f32> {nn.name = "grad.x"})
// x's adjoint: the direct use in nn.add plus the path through nn.mul.
// WRT: %[[ONE:.*]] = nn.constant 1.0
// WRT: %[[DC:.*]] = nn.reduce_grad %[[ONE]]
// WRT: %[[DXM:.*]] = nn.mul %{{.*}}, %{{.*}} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>)
// WRT: %[[DX:.*]] = nn.add %[[DC]], %[[DXM]]
// WRT: return %{{.*}}, %{{.*}}, %{{.*}}, %[[DX]] : !nn.tensor<[], f32>, !nn.tensor<[4], f32>, !nn.tensor<[2], f32>, !nn.tensor<[B, 4], f32>
