// RUN: nncc-opt %s --split-input-file --nncc-autodiff --nncc-pipeline | FileCheck %s
// RUN: nncc compile %models/ode_rnn.nn --emit nn-grad | nncc-opt --nncc-pipeline | FileCheck %s --check-prefix=RNN

// nn.odesolve_grad (adjoint = true) -> nnk.ode_solve_grad: the saved h(t1),
// the loss adjoint, dh0 and one dparams buffer per parameter (here the
// function's grad output); the vjp region's yields become copies into its
// destination arguments (forwarded: the matmul and the weight-gradient GEMM
// write them directly).
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
// CHECK-SAME: %[[GW:[a-z0-9]+]]: !nnk.buffer<[4, 4], f32> {nn.name = "grad.f.weight", nnk.output}
// CHECK: nnk.ode_solve ins(%{{.*}}) outs(%[[H1:.*]]) work
// CHECK: nnk.boundary
// CHECK: nnk.loss_grad ins(%[[H1]], %{{.*}}, %{{.*}}) outs(%[[A1:.*]]) {kind = #nnk<loss mse>}
// CHECK: nnk.ode_solve_grad ins(%[[H1]], %{{.*}}, %{{.*}}, %[[A1]]) outs(%{{.*}}) dparams(%[[GW]]) {adjoint = true, method = #nnk<ode_method rk4>, steps = 8 : i64}
// CHECK-SAME: dynamics {
// CHECK-NEXT: ^bb0(%{{.*}}: !nnk.buffer<[], f32>, %[[DH:.*]]: !nnk.buffer<[B, 4], f32>, %[[DOUT:.*]]: !nnk.buffer<[B, 4], f32>):
// CHECK: nnk.gemm ins(%[[DH]], %{{.*}}) outs(%[[DOUT]]) {activation = #nnk<act tanh>}
// CHECK: nnk.yield
// CHECK: } vjp {
// CHECK-NEXT: ^bb0(%{{.*}}: !nnk.buffer<[], f32>, %[[VH:.*]]: !nnk.buffer<[B, 4], f32>, %[[VA:.*]]: !nnk.buffer<[B, 4], f32>, %[[VDH:.*]]: !nnk.buffer<[B, 4], f32>, %[[VDW:.*]]: !nnk.buffer<[4, 4], f32>):
// CHECK: nnk.elementwise ins(%[[VA]], %{{.*}} : {{.*}}) outs(%[[D:.*]] : !nnk.buffer<[B, 4], f32>)
// CHECK: nnk.matmul ins(%[[D]], %{{.*}}) outs(%[[VDH]])
// CHECK: nnk.linear_weight_grad ins(%[[D]], %[[VH]]) outs(%[[VDW]])
// CHECK-NEXT: nnk.yield
// CHECK-NEXT: }

// -----

// adjoint = false: the op gets the saved h(t0) (backprop through the steps).
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
// CHECK: nnk.elementwise ins(%arg0 : {{.*}}) outs(%[[H0:.*]] : !nnk.buffer<[B, 4], f32>)
// CHECK: nnk.ode_solve ins(%[[H0]],
// CHECK: nnk.boundary
// CHECK: nnk.ode_solve_grad ins(%[[H0]], %{{.*}}, %{{.*}}, %{{.*}}) outs(%{{.*}}) dparams(%{{.*}}) {method = #nnk<ode_method euler>, steps = 4 : i64}
// CHECK: } vjp {
// CHECK: nnk.matmul
// CHECK: nnk.linear_weight_grad

// ODE-RNN with a GRU cell: nnk.ode_rnn_grad with the dynamics' per-row time
// [B, 1], the dynamics VJP and the cell VJP, whose nn.gru_cell_grad becomes
// the input-projection GEMM, nnk.recurrent_cell_grad and the dx / dW_ih /
// db_ih GEMMs and reduction. dparams: 4 dynamics, then 4 cell gradients.
// RNN-LABEL: func.func @forward_backward(
// RNN: nnk.ode_rnn ins(
// RNN: nnk.boundary
// RNN: nnk.ode_rnn_grad ins(%arg0, %arg1, %{{.*}}, %{{.*}}) outs(%{{.*}}, %{{.*}}) dparams(%{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}) {{{.*}}hidden_size = 32 : i64, method = #nnk<ode_method rk4>, num_dynamics_params = 4 : i64
// RNN-SAME: dynamics {
// RNN-NEXT: ^bb0(%{{.*}}: !nnk.buffer<[B, 1], f32>, %{{.*}}: !nnk.buffer<[B, 32], f32>, %{{.*}}: !nnk.buffer<[B, 32], f32>):
// RNN: } dynamics_vjp {
// RNN-NEXT: ^bb0(%{{.*}}: !nnk.buffer<[B, 1], f32>, %{{.*}}: !nnk.buffer<[B, 32], f32>, %{{.*}}: !nnk.buffer<[B, 32], f32>, %{{.*}}: !nnk.buffer<[B, 32], f32>, %{{.*}}: !nnk.buffer<[32], f32>, %{{.*}}: !nnk.buffer<[32, 64], f32>, %{{.*}}: !nnk.buffer<[64], f32>, %{{.*}}: !nnk.buffer<[64, 32], f32>):
// RNN: } cell_vjp {
// RNN-NEXT: ^bb0(%[[CX:.*]]: !nnk.buffer<[B, 4], f32>, %[[CH:.*]]: !nnk.buffer<[B, 32], f32>, %[[CA:.*]]: !nnk.buffer<[B, 32], f32>, %[[CDX:.*]]: !nnk.buffer<[B, 4], f32>, %[[CDH:.*]]: !nnk.buffer<[B, 32], f32>, %[[DBHH:.*]]: !nnk.buffer<[96], f32>, %[[DBIH:.*]]: !nnk.buffer<[96], f32>, %[[DWHH:.*]]: !nnk.buffer<[96, 32], f32>, %[[DWIH:.*]]: !nnk.buffer<[96, 4], f32>):
// RNN: nnk.gemm ins(%[[CX]], %{{.*}}) bias(%{{.*}}) outs(%[[XP:.*]]) :
// RNN: nnk.recurrent_cell_grad ins(%[[XP]], %[[CH]]) w_hh(%{{.*}}) b_hh(%{{.*}}) dh_out(%[[CA]]) outs(%[[DXP:.*]], %[[CDH]]) dw_hh(%[[DWHH]]) db_hh(%[[DBHH]]) {cell = #nnk<cell gru>}
// RNN: nnk.matmul ins(%[[DXP]], %{{.*}}) outs(%[[CDX]])
// RNN: nnk.linear_weight_grad ins(%[[DXP]], %[[CX]]) outs(%[[DWIH]])
// RNN: nnk.reduce_to_shape ins(%[[DXP]]) outs(%[[DBIH]])
