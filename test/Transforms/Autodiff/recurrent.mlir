// RUN: nncc-opt %s --nncc-autodiff | FileCheck %s

// BPTT: one fused backward op per recurrent layer stack (all layers and
// directions), with lengths; weight gradients in _flat_weights order.
module {
  nn.parameter @emb : !nn.tensor<[50, 4], f32>
  nn.parameter @lstm.weight_ih_l0 : !nn.tensor<[32, 4], f32>
  nn.parameter @lstm.weight_hh_l0 : !nn.tensor<[32, 8], f32>
  nn.parameter @lstm.weight_ih_l0_reverse : !nn.tensor<[32, 4], f32>
  nn.parameter @lstm.weight_hh_l0_reverse : !nn.tensor<[32, 8], f32>
  nn.parameter @lstm.weight_ih_l1 : !nn.tensor<[32, 16], f32>
  nn.parameter @lstm.weight_hh_l1 : !nn.tensor<[32, 8], f32>
  nn.parameter @lstm.weight_ih_l1_reverse : !nn.tensor<[32, 16], f32>
  nn.parameter @lstm.weight_hh_l1_reverse : !nn.tensor<[32, 8], f32>
  nn.parameter @gru.weight_ih_l0 : !nn.tensor<[24, 16], f32>
  nn.parameter @gru.weight_hh_l0 : !nn.tensor<[24, 8], f32>
  nn.parameter @gru.bias_ih_l0 : !nn.tensor<[24], f32>
  nn.parameter @gru.bias_hh_l0 : !nn.tensor<[24], f32>
  nn.parameter @rnn.weight_ih_l0 : !nn.tensor<[8, 8], f32>
  nn.parameter @rnn.weight_hh_l0 : !nn.tensor<[8, 8], f32>
  func.func @forward(%ids: !nn.tensor<[B, T], i64> {nn.name = "ids"}, %len: !nn.tensor<[B], i64> {nn.name = "lengths"}, %target: !nn.tensor<[B, T, 8], f32> {nn.name = "target"}) -> (!nn.tensor<[], f32> {nn.name = "loss"}) {
    %e = nn.get_parameter @emb : !nn.tensor<[50, 4], f32>
    %x = nn.embedding %ids, %e : (!nn.tensor<[B, T], i64>, !nn.tensor<[50, 4], f32>) -> !nn.tensor<[B, T, 4], f32>
    %w0 = nn.get_parameter @lstm.weight_ih_l0 : !nn.tensor<[32, 4], f32>
    %w1 = nn.get_parameter @lstm.weight_hh_l0 : !nn.tensor<[32, 8], f32>
    %w2 = nn.get_parameter @lstm.weight_ih_l0_reverse : !nn.tensor<[32, 4], f32>
    %w3 = nn.get_parameter @lstm.weight_hh_l0_reverse : !nn.tensor<[32, 8], f32>
    %w4 = nn.get_parameter @lstm.weight_ih_l1 : !nn.tensor<[32, 16], f32>
    %w5 = nn.get_parameter @lstm.weight_hh_l1 : !nn.tensor<[32, 8], f32>
    %w6 = nn.get_parameter @lstm.weight_ih_l1_reverse : !nn.tensor<[32, 16], f32>
    %w7 = nn.get_parameter @lstm.weight_hh_l1_reverse : !nn.tensor<[32, 8], f32>
    %y, %hn, %cn = nn.lstm %x lengths %len weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6, %w7) {hidden_size = 8 : i64, num_layers = 2 : i64, bidirectional = true, has_bias = false, zoneout = 0.1 : f64} : (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[B], i64>, !nn.tensor<[32, 4], f32>, !nn.tensor<[32, 8], f32>, !nn.tensor<[32, 4], f32>, !nn.tensor<[32, 8], f32>, !nn.tensor<[32, 16], f32>, !nn.tensor<[32, 8], f32>, !nn.tensor<[32, 16], f32>, !nn.tensor<[32, 8], f32>) -> (!nn.tensor<[B, T, 16], f32>, !nn.tensor<[4, B, 8], f32>, !nn.tensor<[4, B, 8], f32>)
    %g0 = nn.get_parameter @gru.weight_ih_l0 : !nn.tensor<[24, 16], f32>
    %g1 = nn.get_parameter @gru.weight_hh_l0 : !nn.tensor<[24, 8], f32>
    %g2 = nn.get_parameter @gru.bias_ih_l0 : !nn.tensor<[24], f32>
    %g3 = nn.get_parameter @gru.bias_hh_l0 : !nn.tensor<[24], f32>
    %h3 = nn.slice %hn {starts = array<i64: 3, 0, 0>, stops = array<i64: 4, 9223372036854775807, 9223372036854775807>, steps = array<i64: 1, 1, 1>} : (!nn.tensor<[4, B, 8], f32>) -> !nn.tensor<[1, B, 8], f32>
    %gy, %ghn = nn.gru %y h0 %h3 lengths %len weights(%g0, %g1, %g2, %g3) {hidden_size = 8 : i64, variant = #nn<gru_variant cho2014>} : (!nn.tensor<[B, T, 16], f32>, !nn.tensor<[1, B, 8], f32>, !nn.tensor<[B], i64>, !nn.tensor<[24, 16], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[24], f32>, !nn.tensor<[24], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[1, B, 8], f32>)
    %r0 = nn.get_parameter @rnn.weight_ih_l0 : !nn.tensor<[8, 8], f32>
    %r1 = nn.get_parameter @rnn.weight_hh_l0 : !nn.tensor<[8, 8], f32>
    %ry, %rhn = nn.rnn %gy h0 %ghn weights(%r0, %r1) {hidden_size = 8 : i64, has_bias = false, nonlinearity = #nn<nonlinearity relu>} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[1, B, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[8, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[1, B, 8], f32>)
    %loss = nn.mse %ry, %target : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[], f32>
    return %loss : !nn.tensor<[], f32>
  }
}

// CHECK-LABEL: func.func @forward_backward(
// CHECK: %[[X:.*]] = nn.embedding
// Each stack keeps a reserve (its layer outputs and gates) that its
// gradient op reads: the `reserve` result, used by the matching *_grad.
// CHECK: %[[Y:.*]], %[[HN:.*]], %{{.*}}, %[[LRES:.*]] = nn.lstm %[[X]] {{.*}} -> ({{.*}}, !nn.reserve)
// CHECK: %[[H3:.*]] = nn.slice %[[HN]]
// CHECK: %[[GY:.*]], %[[GHN:.*]], %[[GRES:.*]] = nn.gru %[[Y]] h0 %[[H3]] {{.*}} -> ({{.*}}, !nn.reserve)
// CHECK: %[[RY:.*]], %{{.*}}, %[[RRES:.*]] = nn.rnn %[[GY]] h0 %[[GHN]] {{.*}} -> ({{.*}}, !nn.reserve)
// The forward keeps each layer stack's inputs, nothing per step.
// CHECK: %[[S_X:.*]] = nn.save %[[X]] {rule = "nn.lstm"}
// CHECK: %[[S_Y:.*]] = nn.save %[[Y]] {index = 1 : i64, rule = "nn.gru"}
// CHECK: %[[S_H3:.*]] = nn.save %[[H3]] {index = 2 : i64, rule = "nn.gru"}
// CHECK: %[[S_GY:.*]] = nn.save %[[GY]] {index = 3 : i64, rule = "nn.rnn"}
// CHECK: %[[S_GHN:.*]] = nn.save %[[GHN]] {index = 4 : i64, rule = "nn.rnn"}
// CHECK: %[[S_RY:.*]] = nn.save %[[RY]] {index = 5 : i64, rule = "nn.mse"}
// CHECK: %[[DRY:.*]] = nn.mse_grad %[[S_RY]], %arg2
// CHECK: %[[RDX:.*]], %[[RDH0:.*]], %[[RDW:.*]]:2 = nn.rnn_grad %[[S_GY]] h0 %[[S_GHN]] weights(%{{.*}}, %{{.*}}) dy %[[DRY]] reserve %[[RRES]] {has_bias = false, hidden_size = 8 : i64, nonlinearity = #nn<nonlinearity relu>}
// CHECK: %[[GDX:.*]], %[[GDH0:.*]], %[[GDW:.*]]:4 = nn.gru_grad %[[S_Y]] h0 %[[S_H3]] lengths %arg1 weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) dy %[[RDX]] dh_n %[[RDH0]] reserve %[[GRES]] {hidden_size = 8 : i64, variant = #nn<gru_variant cho2014>}
// CHECK-SAME: !nn.reserve) -> (!nn.tensor<[B, T, 16], f32>, !nn.tensor<[1, B, 8], f32>, !nn.tensor<[24, 16], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[24], f32>, !nn.tensor<[24], f32>)
// CHECK: %[[DHN:.*]] = nn.slice_grad %[[GDH0]] {{.*}}type = !nn.tensor<[4, B, 8], f32>}
// One op for both layers and directions; no c_n adjoint (unused).
// CHECK: %[[LDX:.*]], %{{.*}}, %{{.*}}, %[[LDW:.*]]:8 = nn.lstm_grad %[[S_X]] lengths %arg1 weights({{.*}}) dy %[[GDX]] dh_n %[[DHN]] reserve %[[LRES]] {bidirectional = true, has_bias = false, hidden_size = 8 : i64, num_layers = 2 : i64, zoneout = 1.000000e-01 : f64}
// CHECK-SAME: !nn.reserve) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[4, B, 8], f32>, !nn.tensor<[4, B, 8], f32>, !nn.tensor<[32, 4], f32>, !nn.tensor<[32, 8], f32>, !nn.tensor<[32, 4], f32>, !nn.tensor<[32, 8], f32>, !nn.tensor<[32, 16], f32>, !nn.tensor<[32, 8], f32>, !nn.tensor<[32, 16], f32>, !nn.tensor<[32, 8], f32>)
// CHECK: %[[DE:.*]] = nn.embedding_grad %arg0, %[[LDX]]
// CHECK: return %{{.*}}, %[[DE]], %[[LDW]]#0, %[[LDW]]#1, %[[LDW]]#2, %[[LDW]]#3, %[[LDW]]#4, %[[LDW]]#5, %[[LDW]]#6, %[[LDW]]#7, %[[GDW]]#0, %[[GDW]]#1, %[[GDW]]#2, %[[GDW]]#3, %[[RDW]]#0, %[[RDW]]#1 :
