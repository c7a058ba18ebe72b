// RUN: nncc-opt --nncc-pipeline -split-input-file -verify-diagnostics %s | FileCheck %s

// Reversible blocks: expanded inline; the adds x1 + F(x2) and x2 + G(y1)
// become GEMM residuals; the split(concat) between blocks disappears.
nn.parameter @f : !nn.tensor<[4, 4], f32>
nn.parameter @g : !nn.tensor<[4, 4], f32>
// CHECK-LABEL: func.func @reversible
// CHECK: nnk.split ins(%{{.*}}) outs(%[[X1:.*]], %[[X2:.*]]) {axis = 1 : i64}
// CHECK: %[[Y1:.*]] = nnk.alloc
// CHECK: nnk.gemm ins(%[[X2]], %{{.*}}) residual(%[[X1]]) outs(%[[Y1]])
// CHECK: %[[Y2:.*]] = nnk.alloc
// CHECK: nnk.gemm ins(%[[Y1]], %{{.*}}) residual(%[[X2]]) outs(%[[Y2]])
// CHECK-NOT: nnk.split
// CHECK: nnk.gemm ins(%[[Y2]], %{{.*}}) residual(%[[Y1]])
// CHECK: nnk.gemm ins(%{{.*}}, %{{.*}}) residual(%[[Y2]])
// CHECK: nnk.concat
// CHECK-NOT: nnk.concat
func.func @reversible(%x: !nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32> {
  %0 = nn.reversible %x : (!nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32> f {
  ^bb0(%a: !nn.tensor<[B, 4], f32>):
    %w = nn.get_parameter @f : !nn.tensor<[4, 4], f32>
    %l = nn.linear %a, %w : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4, 4], f32>) -> !nn.tensor<[B, 4], f32>
    nn.yield %l : !nn.tensor<[B, 4], f32>
  } g {
  ^bb0(%a: !nn.tensor<[B, 4], f32>):
    %w = nn.get_parameter @g : !nn.tensor<[4, 4], f32>
    %l = nn.linear %a, %w : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4, 4], f32>) -> !nn.tensor<[B, 4], f32>
    nn.yield %l : !nn.tensor<[B, 4], f32>
  }
  %1 = nn.reversible %0 : (!nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32> f {
  ^bb0(%a: !nn.tensor<[B, 4], f32>):
    %w = nn.get_parameter @f : !nn.tensor<[4, 4], f32>
    %l = nn.linear %a, %w : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4, 4], f32>) -> !nn.tensor<[B, 4], f32>
    nn.yield %l : !nn.tensor<[B, 4], f32>
  } g {
  ^bb0(%a: !nn.tensor<[B, 4], f32>):
    %w = nn.get_parameter @g : !nn.tensor<[4, 4], f32>
    %l = nn.linear %a, %w : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4, 4], f32>) -> !nn.tensor<[B, 4], f32>
    nn.yield %l : !nn.tensor<[B, 4], f32>
  }
  return %1 : !nn.tensor<[B, 8], f32>
}

// -----

// RK4: one loop op; the body writes the derivative into its last argument;
// stage slots in a [5, ...] work buffer.
nn.parameter @w : !nn.tensor<[4, 4], f32>
// CHECK-LABEL: func.func @ode
// CHECK-SAME: %[[OUT:[^:]*]]: !nnk.buffer<[B, 4], f32> {nnk.output})
// CHECK: %[[T0:.*]] = nnk.alloc : !nnk.buffer<[], f32>
// CHECK: nnk.fill outs(%[[T0]]) {value = 0.000000e+00 : f64}
// CHECK: %[[W:.*]] = nnk.alloc : !nnk.buffer<[5, B, 4], f32>
// CHECK: nnk.ode_solve ins(%{{.*}}, %[[T0]], %{{.*}}) outs(%[[OUT]]) work(%[[W]]) {method = #nnk<ode_method rk4>, steps = 10 : i64}
// CHECK: ^bb0(%{{.*}}: !nnk.buffer<[], f32>, %[[H:.*]]: !nnk.buffer<[B, 4], f32>, %[[DH:.*]]: !nnk.buffer<[B, 4], f32>):
// CHECK: nnk.gemm ins(%[[H]], %{{.*}}) outs(%[[DH]]) {activation = #nnk<act tanh>}
// CHECK-NEXT: nnk.yield
func.func @ode(%h0: !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> {
  %t0 = nn.constant 0.000000e+00 : f32
  %t1 = nn.constant 1.000000e+00 : f32
  %h = nn.odesolve rk4 %h0, %t0, %t1 {steps = 10 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 4], f32> {
  ^bb0(%t: !nn.tensor<[], f32>, %z: !nn.tensor<[B, 4], f32>):
    %w = nn.get_parameter @w : !nn.tensor<[4, 4], f32>
    %l = nn.linear %z, %w : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4, 4], f32>) -> !nn.tensor<[B, 4], f32>
    %a = nn.tanh %l : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    nn.yield %a : !nn.tensor<[B, 4], f32>
  }
  return %h : !nn.tensor<[B, 4], f32>
}

// -----

// Unsupported input fails with a located error: a reversible block over a
// last dim that is not static cannot be split into halves.
func.func @bad_reversible(%x: !nn.tensor<[B, ?], f32>) -> !nn.tensor<[B, ?], f32> {
  // expected-error @+1 {{reversible blocks need a static, even last dim}}
  %0 = nn.reversible %x : (!nn.tensor<[B, ?], f32>) -> !nn.tensor<[B, ?], f32> f {
  ^bb0(%a: !nn.tensor<[B, ?], f32>):
    nn.yield %a : !nn.tensor<[B, ?], f32>
  } g {
  ^bb0(%a: !nn.tensor<[B, ?], f32>):
    nn.yield %a : !nn.tensor<[B, ?], f32>
  }
  return %0 : !nn.tensor<[B, ?], f32>
}

// -----

// A temporary with an unknown dim cannot be allocated.
func.func @unknown_dim(%a: !nn.tensor<[?, 4], f32>, %b: !nn.tensor<[?, 4], f32>) -> !nn.tensor<[?, 4], f32> {
  // expected-error @+2 {{cannot allocate a buffer of shape [?, 4]}}
  // expected-error @+1 {{failed to legalize operation 'nn.concat'}}
  %c = nn.concat %a, %b {axis = 0 : i64} : (!nn.tensor<[?, 4], f32>, !nn.tensor<[?, 4], f32>) -> !nn.tensor<[?, 4], f32>
  return %c : !nn.tensor<[?, 4], f32>
}
