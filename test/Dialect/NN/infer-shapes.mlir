// RUN: nncc-opt %s --nn-infer-shapes | FileCheck %s
// RUN: nncc-opt %s --nn-infer-shapes --nn-infer-shapes | FileCheck %s

// The ops are built with `?` placeholders in their result types (and region
// arguments); the pass re-infers every result type from the operands, in
// order, so refinements propagate, and then updates the function signatures.

nn.parameter @w : !nn.tensor<[10, 20], f32>

// CHECK-LABEL: func.func @chain
// CHECK-SAME: -> (!nn.tensor<[B, 10], f32>, !nn.tensor<[], f32>)
func.func @chain(%x: !nn.tensor<[B, 20], f32>, %b: !nn.tensor<[10], f32>)
    -> (!nn.tensor<[?, ?], f32>, !nn.tensor<[], f32>) {
  // CHECK: nn.get_parameter @w : !nn.tensor<[10, 20], f32>
  %w = nn.get_parameter @w : !nn.tensor<[10, 20], f32>
  // CHECK: nn.linear {{.*}} -> !nn.tensor<[B, 10], f32>
  %y = nn.linear %x, %w, %b : (!nn.tensor<[B, 20], f32>, !nn.tensor<[10, 20], f32>, !nn.tensor<[10], f32>) -> !nn.tensor<[?, ?], f32>
  // The operand type of the user is refined too.
  // CHECK: nn.relu %{{.*}} : (!nn.tensor<[B, 10], f32>) -> !nn.tensor<[B, 10], f32>
  %r = nn.relu %y : (!nn.tensor<[?, ?], f32>) -> !nn.tensor<[?, ?], f32>
  // CHECK: nn.add {{.*}} -> !nn.tensor<[B, 10], f32>
  %s = nn.add %r, %b : (!nn.tensor<[?, ?], f32>, !nn.tensor<[10], f32>) -> !nn.tensor<[?, ?], f32>
  // CHECK: nn.mse {{.*}} -> !nn.tensor<[], f32>
  %l = nn.mse %s, %r : (!nn.tensor<[?, ?], f32>, !nn.tensor<[?, ?], f32>) -> !nn.tensor<[], f32>
  // CHECK: return {{.*}} : !nn.tensor<[B, 10], f32>, !nn.tensor<[], f32>
  return %s, %l : !nn.tensor<[?, ?], f32>, !nn.tensor<[], f32>
}

// CHECK-LABEL: func.func @multi_result
func.func @multi_result(%x: !nn.tensor<[B, T, 3], f32>, %wi: !nn.tensor<[16, 3], f32>,
                        %wh: !nn.tensor<[16, 4], f32>) {
  // CHECK: nn.split {{.*}} -> (!nn.tensor<[B, T, 1], f32>, !nn.tensor<[B, T, 2], f32>)
  %a:2 = nn.split %x {axis = -1 : i64, sizes = array<i64: 1, 2>} : (!nn.tensor<[B, T, 3], f32>) -> (!nn.tensor<[?, ?, ?], f32>, !nn.tensor<[?, ?, ?], f32>)
  // CHECK: nn.concat {{.*}} -> !nn.tensor<[B, T, 3], f32>
  %c = nn.concat %a#0, %a#1 {axis = 2 : i64} : (!nn.tensor<[?, ?, ?], f32>, !nn.tensor<[?, ?, ?], f32>) -> !nn.tensor<[?, ?, ?], f32>
  // CHECK: nn.lstm {{.*}} -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  %y:3 = nn.lstm %c weights(%wi, %wh) {hidden_size = 4 : i64, has_bias = false}
      : (!nn.tensor<[?, ?, ?], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>)
      -> (!nn.tensor<[?, ?, ?], f32>, !nn.tensor<[?, ?, ?], f32>, !nn.tensor<[?, ?, ?], f32>)
  // CHECK: nn.slice {{.*}} -> !nn.tensor<[B, 4], f32>
  %last = nn.slice %y#0 {starts = array<i64: 0, -1, 0>, stops = array<i64: 9223372036854775807, 9223372036854775807, 9223372036854775807>, steps = array<i64: 1, 1, 1>, squeeze = array<i64: 1>} : (!nn.tensor<[?, ?, ?], f32>) -> !nn.tensor<[?, ?], f32>
  // CHECK: nn.transpose {{.*}} -> !nn.tensor<[4, B], f32>
  %t = nn.transpose %last {perm = array<i64: 1, 0>} : (!nn.tensor<[?, ?], f32>) -> !nn.tensor<[?, ?], f32>
  // CHECK: nn.reduce_mean {{.*}} -> !nn.tensor<[4, 1], f32>
  %m = nn.reduce_mean %t {axes = array<i64: 1>, keepdim = true} : (!nn.tensor<[?, ?], f32>) -> !nn.tensor<[?, ?], f32>
  // A trailing reserve result is kept as is.
  // CHECK: nn.lstm {{.*}} -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  %r:4 = nn.lstm %c weights(%wi, %wh) {hidden_size = 4 : i64, has_bias = false}
      : (!nn.tensor<[?, ?, ?], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>)
      -> (!nn.tensor<[?, ?, ?], f32>, !nn.tensor<[?, ?, ?], f32>, !nn.tensor<[?, ?, ?], f32>, !nn.reserve)
  return
}

// CHECK-LABEL: func.func @regions
func.func @regions(%x: !nn.tensor<[B, 8], f32>, %t0: !nn.tensor<[], f32>, %t1: !nn.tensor<[], f32>,
                   %seq: !nn.tensor<[B, T, 3], f32>, %times: !nn.tensor<[B, T], f32>) {
  // CHECK: nn.tanh {{.*}} -> !nn.tensor<[B, 8], f32>
  %h = nn.tanh %x : (!nn.tensor<[B, 8], f32>) -> !nn.tensor<[?, 8], f32>
  // CHECK: nn.reversible {{.*}} -> !nn.tensor<[B, 8], f32> f {
  // Region arguments are refined before the region body is visited.
  // CHECK-NEXT: ^bb0(%{{.*}}: !nn.tensor<[B, 4], f32>):
  %r = nn.reversible %h : (!nn.tensor<[?, 8], f32>) -> !nn.tensor<[?, 8], f32> f {
  ^bb0(%a: !nn.tensor<[?, 4], f32>):
    // CHECK-NEXT: nn.relu {{.*}} -> !nn.tensor<[B, 4], f32>
    %f = nn.relu %a : (!nn.tensor<[?, 4], f32>) -> !nn.tensor<[?, 4], f32>
    nn.yield %f : !nn.tensor<[?, 4], f32>
  } g {
  ^bb0(%a: !nn.tensor<[?, 4], f32>):
    nn.yield %a : !nn.tensor<[?, 4], f32>
  }
  // CHECK: nn.odesolve {{.*}} -> !nn.tensor<[B, 8], f32> {
  // CHECK-NEXT: ^bb0(%{{.*}}: !nn.tensor<[], f32>, %{{.*}}: !nn.tensor<[B, 8], f32>):
  %o = nn.odesolve euler %r, %t0, %t1 {steps = 4 : i64} : (!nn.tensor<[?, 8], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[?, 8], f32> {
  ^bb0(%t: !nn.tensor<[], f32>, %s: !nn.tensor<[?, 8], f32>):
    nn.yield %s : !nn.tensor<[?, 8], f32>
  }
  // CHECK: nn.ode_rnn {{.*}} -> !nn.tensor<[B, T, 5], f32> dynamics {
  // CHECK-NEXT: ^bb0(%{{.*}}: !nn.tensor<[B, 1], f32>, %{{.*}}: !nn.tensor<[B, 5], f32>):
  // CHECK: } cell {
  // CHECK-NEXT: ^bb0(%{{.*}}: !nn.tensor<[B, 3], f32>, %{{.*}}: !nn.tensor<[B, 5], f32>):
  %s = nn.ode_rnn euler %seq, %times {hidden_size = 5 : i64, steps = 1 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T], f32>) -> !nn.tensor<[?, ?, 5], f32> dynamics {
  ^bb0(%t: !nn.tensor<[?, 1], f32>, %state: !nn.tensor<[?, 5], f32>):
    nn.yield %state : !nn.tensor<[?, 5], f32>
  } cell {
  ^bb0(%xt: !nn.tensor<[?, ?], f32>, %state: !nn.tensor<[?, 5], f32>):
    nn.yield %state : !nn.tensor<[?, 5], f32>
  }
  return
}
