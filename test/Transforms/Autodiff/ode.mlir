// RUN: nncc-opt %s --split-input-file --nncc-autodiff | FileCheck %s

// odesolve with adjoint = true: the backward op integrates [h, a, a_theta]
// from t1 to t0; its vjp region is the dynamics differentiated by the rules.
module {
  nn.parameter @f.weight : !nn.tensor<[4, 4], f32>
  func.func @forward(%h0: !nn.tensor<[B, 4], f32> {nn.name = "h0"}, %t: !nn.tensor<[B, 4], f32> {nn.name = "t"}) -> (!nn.tensor<[], f32> {nn.name = "loss"}) {
    %t0 = nn.constant 0.0 : f32
    %t1 = nn.constant 1.0 : f32
    %h1 = nn.odesolve rk4 %h0, %t0, %t1 {steps = 8 : i64, adjoint = true} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 4], f32> {
    ^bb0(%s: !nn.tensor<[], f32>, %h: !nn.tensor<[B, 4], f32>):
      %w = nn.get_parameter @f.weight : !nn.tensor<[4, 4], f32>
      %l = nn.linear %h, %w : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4, 4], f32>) -> !nn.tensor<[B, 4], f32>
      %dh = nn.tanh %l : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
      nn.yield %dh : !nn.tensor<[B, 4], f32>
    }
    %loss = nn.mse %h1, %t : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[], f32>
    return %loss : !nn.tensor<[], f32>
  }
}

// CHECK-LABEL: func.func @forward_backward(
// CHECK: %[[H1:.*]] = nn.odesolve rk4
// Adjoint method: only the final state is kept.
// CHECK: %[[S:.*]] = nn.save %[[H1]] {rule = "nn.odesolve"}
// CHECK-NOT: nn.save
// CHECK: %[[A1:.*]] = nn.mse_grad %[[S]]
// CHECK: %[[DH0:.*]], %[[DW:.*]] = nn.odesolve_grad rk4 %[[S]], %{{.*}}, %{{.*}}, %[[A1]] {adjoint = true, params = [@f.weight], steps = 8 : i64}
// CHECK-SAME: -> (!nn.tensor<[B, 4], f32>, !nn.tensor<[4, 4], f32>) dynamics {
// CHECK: ^bb0(%{{.*}}: !nn.tensor<[], f32>, %[[H:.*]]: !nn.tensor<[B, 4], f32>):
// CHECK:   nn.linear %[[H]]
// CHECK:   nn.tanh
// CHECK:   nn.yield
// CHECK: } vjp {
// CHECK: ^bb0(%{{.*}}: !nn.tensor<[], f32>, %[[VH:.*]]: !nn.tensor<[B, 4], f32>, %[[VA:.*]]: !nn.tensor<[B, 4], f32>):
// CHECK:   %[[VW:.*]] = nn.get_parameter @f.weight
// CHECK:   %[[VL:.*]] = nn.linear %[[VH]], %[[VW]]
// CHECK:   %[[VT:.*]] = nn.tanh %[[VL]]
// CHECK:   %[[VD:.*]] = nn.mul %[[VA]], %{{.*}}
// CHECK:   %[[VDH:.*]] = nn.matmul %[[VD]], %[[VW]]
// CHECK:   %[[VDW:.*]] = nn.linear_weight_grad %[[VD]], %[[VH]]
// CHECK:   nn.yield %[[VDH]], %[[VDW]] : !nn.tensor<[B, 4], f32>, !nn.tensor<[4, 4], f32>
// CHECK: }
// CHECK: return %{{.*}}, %[[DW]] :

// -----

// adjoint = false: backprop through the solver steps from the saved h(t0).
module {
  nn.parameter @f.weight : !nn.tensor<[4, 4], f32>
  func.func @forward(%x: !nn.tensor<[B, 4], f32> {nn.name = "x"}, %t: !nn.tensor<[B, 4], f32> {nn.name = "t"}) -> (!nn.tensor<[], f32> {nn.name = "loss"}) {
    %t0 = nn.constant 0.0 : f32
    %t1 = nn.constant 1.0 : f32
    %h0 = nn.tanh %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    %h1 = nn.odesolve euler %h0, %t0, %t1 {steps = 4 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 4], f32> {
    ^bb0(%s: !nn.tensor<[], f32>, %h: !nn.tensor<[B, 4], f32>):
      %w = nn.get_parameter @f.weight : !nn.tensor<[4, 4], f32>
      %l = nn.linear %h, %w : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4, 4], f32>) -> !nn.tensor<[B, 4], f32>
      nn.yield %l : !nn.tensor<[B, 4], f32>
    }
    %loss = nn.mse %h1, %t : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[], f32>
    return %loss : !nn.tensor<[], f32>
  }
}

// CHECK-LABEL: func.func @forward_backward(
// CHECK: %[[H0:.*]] = nn.tanh
// CHECK: %[[H1:.*]] = nn.odesolve euler %[[H0]]
// CHECK: %[[S0:.*]] = nn.save %[[H0]] {rule = "nn.odesolve"}
// CHECK: %[[S1:.*]] = nn.save %[[H1]] {index = 1 : i64, rule = "nn.mse"}
// CHECK: %[[A1:.*]] = nn.mse_grad %[[S1]]
// CHECK: %[[DH0:.*]], %[[DW:.*]] = nn.odesolve_grad euler %[[S0]], %{{.*}}, %{{.*}}, %[[A1]] {params = [@f.weight], steps = 4 : i64}
// CHECK: } vjp {
// CHECK: nn.yield
// CHECK: }
// The initial state's adjoint continues through tanh, which is inactive
// here (x is an input): nothing more is built.
// CHECK-NEXT: return %{{.*}}, %[[DW]] :
