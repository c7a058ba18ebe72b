// RUN: nncc-opt --nncc-pipeline %s | FileCheck %s

nn.parameter @w1 : !nn.tensor<[64, 32], f32>
nn.parameter @b1 : !nn.tensor<[64], f32>
nn.parameter @w2 : !nn.tensor<[32, 64], f32>
nn.parameter @b2 : !nn.tensor<[32], f32>
nn.parameter @g : !nn.tensor<[32], f32>

// FFN with skip connection: linear -> gelu is one gemm, linear -> + x is
// one gemm with a residual, written into the output.
// CHECK-LABEL: func.func @ffn
// CHECK-SAME: (%[[X:.*]]: !nnk.buffer<[B, T, 32], f32>, %[[Y:.*]]: !nnk.buffer<[B, T, 32], f32> {nnk.output})
// CHECK-DAG: %[[W1:.*]] = nnk.weight @w1 : !nnk.buffer<[64, 32], f32>
// CHECK-DAG: %[[B1:.*]] = nnk.weight @b1 : !nnk.buffer<[64], f32>
// CHECK: %[[H:.*]] = nnk.alloc : !nnk.buffer<[B, T, 64], f32>
// CHECK: nnk.gemm ins(%[[X]], %[[W1]]) bias(%[[B1]]) outs(%[[H]]) {activation = #nnk<act gelu>}
// CHECK: nnk.gemm ins(%[[H]], %{{.*}}) bias(%{{.*}}) residual(%[[X]]) outs(%[[Y]])
// CHECK-NOT: nnk.elementwise
func.func @ffn(%x: !nn.tensor<[B, T, 32], f32>) -> !nn.tensor<[B, T, 32], f32> {
  %w1 = nn.get_parameter @w1 : !nn.tensor<[64, 32], f32>
  %b1 = nn.get_parameter @b1 : !nn.tensor<[64], f32>
  %w2 = nn.get_parameter @w2 : !nn.tensor<[32, 64], f32>
  %b2 = nn.get_parameter @b2 : !nn.tensor<[32], f32>
  %0 = nn.linear %x, %w1, %b1 : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[64, 32], f32>, !nn.tensor<[64], f32>) -> !nn.tensor<[B, T, 64], f32>
  %1 = nn.gelu %0 : (!nn.tensor<[B, T, 64], f32>) -> !nn.tensor<[B, T, 64], f32>
  %2 = nn.linear %1, %w2, %b2 : (!nn.tensor<[B, T, 64], f32>, !nn.tensor<[32, 64], f32>, !nn.tensor<[32], f32>) -> !nn.tensor<[B, T, 32], f32>
  %3 = nn.add %x, %2 : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[B, T, 32], f32>) -> !nn.tensor<[B, T, 32], f32>
  return %3 : !nn.tensor<[B, T, 32], f32>
}

// A linear without bias followed by + bias [N] and tanh: one gemm.
// CHECK-LABEL: func.func @bias_add
// CHECK: nnk.gemm ins(%{{.*}}, %{{.*}}) bias(%{{.*}}) outs(%{{.*}}) {activation = #nnk<act tanh>}
// CHECK-NOT: nnk.elementwise
func.func @bias_add(%x: !nn.tensor<[B, 32], f32>) -> !nn.tensor<[B, 64], f32> {
  %w1 = nn.get_parameter @w1 : !nn.tensor<[64, 32], f32>
  %b1 = nn.get_parameter @b1 : !nn.tensor<[64], f32>
  %0 = nn.linear %x, %w1 : (!nn.tensor<[B, 32], f32>, !nn.tensor<[64, 32], f32>) -> !nn.tensor<[B, 64], f32>
  %1 = nn.add %0, %b1 : (!nn.tensor<[B, 64], f32>, !nn.tensor<[64], f32>) -> !nn.tensor<[B, 64], f32>
  %2 = nn.tanh %1 : (!nn.tensor<[B, 64], f32>) -> !nn.tensor<[B, 64], f32>
  return %2 : !nn.tensor<[B, 64], f32>
}

// layer_norm(a + b) with a non-GEMM add: one layer norm with a residual.
// CHECK-LABEL: func.func @layer_norm_residual
// CHECK-SAME: (%[[A:.*]]: !nnk.buffer<[B, 32], f32>, %[[R:.*]]: !nnk.buffer<[B, 32], f32>, %[[Y:.*]]: !nnk.buffer<[B, 32], f32> {nnk.output})
// CHECK: %[[G:.*]] = nnk.weight @g
// CHECK: nnk.layer_norm ins(%[[A]]) residual(%[[R]]) weight(%[[G]]) outs(%[[Y]]) {eps = 9.9999999999999995E-7 : f64}
// CHECK-NOT: nnk.elementwise
func.func @layer_norm_residual(%a: !nn.tensor<[B, 32], f32>, %r: !nn.tensor<[B, 32], f32>) -> !nn.tensor<[B, 32], f32> {
  %g = nn.get_parameter @g : !nn.tensor<[32], f32>
  %0 = nn.add %a, %r : (!nn.tensor<[B, 32], f32>, !nn.tensor<[B, 32], f32>) -> !nn.tensor<[B, 32], f32>
  %1 = nn.layer_norm %0 weight %g {eps = 1.000000e-06 : f64} : (!nn.tensor<[B, 32], f32>, !nn.tensor<[32], f32>) -> !nn.tensor<[B, 32], f32>
  return %1 : !nn.tensor<[B, 32], f32>
}

// Post-LN: the add goes into the GEMM epilogue, the layer norm has no residual.
// CHECK-LABEL: func.func @post_ln
// CHECK: %[[S:.*]] = nnk.alloc : !nnk.buffer<[B, 32], f32>
// CHECK: nnk.gemm ins(%{{.*}}, %{{.*}}) bias(%{{.*}}) residual(%{{.*}}) outs(%[[S]])
// CHECK: nnk.layer_norm ins(%[[S]]) outs(%{{.*}})
func.func @post_ln(%x: !nn.tensor<[B, 64], f32>, %r: !nn.tensor<[B, 32], f32>) -> !nn.tensor<[B, 32], f32> {
  %w2 = nn.get_parameter @w2 : !nn.tensor<[32, 64], f32>
  %b2 = nn.get_parameter @b2 : !nn.tensor<[32], f32>
  %0 = nn.linear %x, %w2, %b2 : (!nn.tensor<[B, 64], f32>, !nn.tensor<[32, 64], f32>, !nn.tensor<[32], f32>) -> !nn.tensor<[B, 32], f32>
  %1 = nn.add %0, %r : (!nn.tensor<[B, 32], f32>, !nn.tensor<[B, 32], f32>) -> !nn.tensor<[B, 32], f32>
  %2 = nn.layer_norm %1 : (!nn.tensor<[B, 32], f32>) -> !nn.tensor<[B, 32], f32>
  return %2 : !nn.tensor<[B, 32], f32>
}

// A linear whose output has two users keeps its epilogue empty.
// CHECK-LABEL: func.func @shared_output
// CHECK: %[[L:.*]] = nnk.alloc : !nnk.buffer<[B, 64], f32>
// CHECK: nnk.gemm ins(%{{.*}}, %{{.*}}) bias(%{{.*}}) outs(%[[L]]) :
// CHECK: nnk.elementwise ins(%[[L]] : !nnk.buffer<[B, 64], f32>)
// CHECK: math.tanh
// CHECK: nnk.elementwise ins(%[[L]] : !nnk.buffer<[B, 64], f32>)
// CHECK: arith.maximumf
// CHECK: nnk.matmul ins(%{{.*}}, %{{.*}}) outs(%{{.*}})
func.func @shared_output(%x: !nn.tensor<[B, 32], f32>, %m: !nn.tensor<[64, 8], f32>) -> (!nn.tensor<[B, 64], f32>, !nn.tensor<[B, 64], f32>, !nn.tensor<[B, 8], f32>) {
  %w1 = nn.get_parameter @w1 : !nn.tensor<[64, 32], f32>
  %b1 = nn.get_parameter @b1 : !nn.tensor<[64], f32>
  %0 = nn.linear %x, %w1, %b1 : (!nn.tensor<[B, 32], f32>, !nn.tensor<[64, 32], f32>, !nn.tensor<[64], f32>) -> !nn.tensor<[B, 64], f32>
  %1 = nn.tanh %0 : (!nn.tensor<[B, 64], f32>) -> !nn.tensor<[B, 64], f32>
  %2 = nn.relu %0 : (!nn.tensor<[B, 64], f32>) -> !nn.tensor<[B, 64], f32>
  %3 = nn.matmul %0, %m : (!nn.tensor<[B, 64], f32>, !nn.tensor<[64, 8], f32>) -> !nn.tensor<[B, 8], f32>
  return %1, %2, %3 : !nn.tensor<[B, 64], f32>, !nn.tensor<[B, 64], f32>, !nn.tensor<[B, 8], f32>
}
