// RUN: nncc-opt --nncc-pipeline %s | FileCheck %s

// nn.ode_rnn whose dynamics read t: t is each row's own time, [B, 1] at the
// nn level and in nnk.ode_rnn's dynamics region alike, and the dynamics
// broadcast it against the state (f(t, h) = tanh(h) - t * h). Before, the
// nn region took t [] and the conversion failed with an unresolved
// materialization from [B, 1] to [].
// CHECK-LABEL: func.func @ode_rnn_time(
// CHECK-SAME: %[[X:[a-z0-9]+]]: !nnk.buffer<[B, T, 3], f32>, %[[TS:[a-z0-9]+]]: !nnk.buffer<[B, T], f32>
// CHECK: nnk.ode_rnn ins(%[[X]], %[[TS]]) outs(%{{.*}}) work(%{{.*}}, %{{.*}}) {hidden_size = 5 : i64, method = #nnk<ode_method rk4>, steps = 2 : i64}
// CHECK-SAME: dynamics {
// CHECK-NEXT: ^bb0(%[[T:.*]]: !nnk.buffer<[B, 1], f32>, %[[H:.*]]: !nnk.buffer<[B, 5], f32>, %[[DH:.*]]: !nnk.buffer<[B, 5], f32>):
// CHECK-NEXT: nnk.elementwise ins(%[[H]], %[[T]] : !nnk.buffer<[B, 5], f32>, !nnk.buffer<[B, 1], f32>) outs(%[[DH]] : !nnk.buffer<[B, 5], f32>) {
// CHECK-NEXT: ^bb0(%[[HV:.*]]: f32, %[[TV:.*]]: f32):
// CHECK-NEXT: %[[TH:.*]] = arith.mulf %[[TV]], %[[HV]] : f32
// CHECK-NEXT: %[[A:.*]] = math.tanh %[[HV]] : f32
// CHECK-NEXT: %[[D:.*]] = arith.subf %[[A]], %[[TH]] : f32
// CHECK-NEXT: nnk.yield %[[D]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: nnk.yield
// CHECK-NEXT: } cell {
func.func @ode_rnn_time(%x: !nn.tensor<[B, T, 3], f32>, %times: !nn.tensor<[B, T], f32>) -> !nn.tensor<[B, T, 5], f32> {
  %hs = nn.ode_rnn rk4 %x, %times {hidden_size = 5 : i64, steps = 2 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T], f32>) -> !nn.tensor<[B, T, 5], f32> dynamics {
  ^bb0(%t: !nn.tensor<[B, 1], f32>, %h: !nn.tensor<[B, 5], f32>):
    %a = nn.tanh %h : (!nn.tensor<[B, 5], f32>) -> !nn.tensor<[B, 5], f32>
    %th = nn.mul %t, %h : (!nn.tensor<[B, 1], f32>, !nn.tensor<[B, 5], f32>) -> !nn.tensor<[B, 5], f32>
    %dh = nn.sub %a, %th : (!nn.tensor<[B, 5], f32>, !nn.tensor<[B, 5], f32>) -> !nn.tensor<[B, 5], f32>
    nn.yield %dh : !nn.tensor<[B, 5], f32>
  } cell {
  ^bb0(%xt: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 5], f32>):
    %s = nn.reduce_sum %xt {axes = array<i64: 1>, keepdim = true} : (!nn.tensor<[B, 3], f32>) -> !nn.tensor<[B, 1], f32>
    %n = nn.add %h, %s : (!nn.tensor<[B, 5], f32>, !nn.tensor<[B, 1], f32>) -> !nn.tensor<[B, 5], f32>
    nn.yield %n : !nn.tensor<[B, 5], f32>
  }
  return %hs : !nn.tensor<[B, T, 5], f32>
}
