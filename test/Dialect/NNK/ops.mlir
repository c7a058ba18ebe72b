// RUN: nncc-opt %s | FileCheck %s
// RUN: nncc-opt %s | nncc-opt | FileCheck %s
// RUN: nncc-opt -mlir-print-op-generic %s | nncc-opt | FileCheck %s

nn.parameter @w : !nn.tensor<[64, 32], f32>
nn.parameter @b : !nn.tensor<[64], f32>
nn.parameter @table : !nn.tensor<[100, 32], f32>

// CHECK-LABEL: func.func @memory
func.func @memory(%x: !nnk.buffer<[B, 32], f32>, %out: !nnk.buffer<[B, 32], f32> {nnk.output}) {
  // CHECK: %[[T:.*]] = nnk.alloc : !nnk.buffer<[B, 32], f32>
  %t = nnk.alloc : !nnk.buffer<[B, 32], f32>
  // CHECK: nnk.weight @w : !nnk.buffer<[64, 32], f32>
  %w = nnk.weight @w : !nnk.buffer<[64, 32], f32>
  // CHECK: nnk.fill outs(%[[T]]) {value = 0.000000e+00 : f64} : !nnk.buffer<[B, 32], f32>
  nnk.fill outs(%t) {value = 0.0 : f64} : !nnk.buffer<[B, 32], f32>
  // CHECK: nnk.copy ins(%[[T]]) outs(%{{.*}}) : !nnk.buffer<[B, 32], f32>, !nnk.buffer<[B, 32], f32>
  nnk.copy ins(%t) outs(%out) : !nnk.buffer<[B, 32], f32>, !nnk.buffer<[B, 32], f32>
  return
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: !nnk.buffer<[B, 64], f32>, %b: !nnk.buffer<[64], f32>, %y: !nnk.buffer<[B, 64], f32>) {
  // CHECK: nnk.elementwise ins(%{{.*}}, %{{.*}} : !nnk.buffer<[B, 64], f32>, !nnk.buffer<[64], f32>) outs(%{{.*}} : !nnk.buffer<[B, 64], f32>) {
  // CHECK: ^bb0(%[[X:.*]]: f32, %[[Z:.*]]: f32):
  // CHECK:   %[[S:.*]] = arith.addf %[[X]], %[[Z]] : f32
  // CHECK:   %[[R:.*]] = math.tanh %[[S]] : f32
  // CHECK:   nnk.yield %[[R]] : f32
  nnk.elementwise ins(%a, %b : !nnk.buffer<[B, 64], f32>, !nnk.buffer<[64], f32>) outs(%y : !nnk.buffer<[B, 64], f32>) {
  ^bb0(%x: f32, %z: f32):
    %s = arith.addf %x, %z : f32
    %r = math.tanh %s : f32
    nnk.yield %r : f32
  }
  return
}

// CHECK-LABEL: func.func @gemm
func.func @gemm(%x: !nnk.buffer<[B, T, 32], f32>, %r: !nnk.buffer<[B, T, 64], f32>, %y: !nnk.buffer<[B, T, 64], f32>,
                %a: !nnk.buffer<[4, 8, 16], f32>, %c: !nnk.buffer<[16, 2], f32>, %d: !nnk.buffer<[4, 8, 2], f32>) {
  %w = nnk.weight @w : !nnk.buffer<[64, 32], f32>
  %b = nnk.weight @b : !nnk.buffer<[64], f32>
  // CHECK: nnk.gemm ins(%{{.*}}, %{{.*}}) bias(%{{.*}}) residual(%{{.*}}) outs(%{{.*}}) {activation = #nnk<act gelu>}
  nnk.gemm ins(%x, %w) bias(%b) residual(%r) outs(%y) {activation = #nnk<act gelu>} : !nnk.buffer<[B, T, 32], f32>, !nnk.buffer<[64, 32], f32>, !nnk.buffer<[64], f32>, !nnk.buffer<[B, T, 64], f32>, !nnk.buffer<[B, T, 64], f32>
  // CHECK: nnk.gemm ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) {activation = #nnk<act leaky_relu>, alpha = 3.000000e-01 : f64}
  nnk.gemm ins(%x, %w) outs(%y) {activation = #nnk<act leaky_relu>, alpha = 0.3 : f64} : !nnk.buffer<[B, T, 32], f32>, !nnk.buffer<[64, 32], f32>, !nnk.buffer<[B, T, 64], f32>
  // CHECK: nnk.matmul ins(%{{.*}}, %{{.*}}) outs(%{{.*}})
  nnk.matmul ins(%a, %c) outs(%d) : !nnk.buffer<[4, 8, 16], f32>, !nnk.buffer<[16, 2], f32>, !nnk.buffer<[4, 8, 2], f32>
  return
}

// CHECK-LABEL: func.func @attention
func.func @attention(%qkv: !nnk.buffer<[B, T, 24], f32>, %qk: !nnk.buffer<[B, T, 16], f32>,
                     %o: !nnk.buffer<[B, T, 8], f32>, %dqkv: !nnk.buffer<[B, T, 24], f32>,
                     %lse: !nnk.buffer<[B, 2, T], f32>) {
  // CHECK: nnk.flash_attention ins(%{{.*}}) outs(%{{.*}}) {causal = true, dropout = 1.000000e-01 : f64, num_heads = 2 : i64, seed = 7 : i64}
  nnk.flash_attention ins(%qkv) outs(%o) {causal = true, dropout = 0.1 : f64, num_heads = 2 : i64, seed = 7 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>
  // CHECK: nnk.banded_attention ins(%{{.*}}) outs(%{{.*}}) {dilation = 2 : i64, dropout = 2.000000e-01 : f64, global = array<i64: 0>, num_heads = 2 : i64, seed = 8 : i64, window = 4 : i64}
  nnk.banded_attention ins(%qkv) outs(%o) {dilation = 2 : i64, dropout = 0.2 : f64, global = array<i64: 0>, num_heads = 2 : i64, seed = 8 : i64, window = 4 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>
  // CHECK: nnk.lsh_attention ins(%{{.*}}) outs(%{{.*}}) {chunk = 4 : i64, dropout = 3.000000e-01 : f64, hashes = 2 : i64, num_heads = 2 : i64, seed = 9 : i64}
  nnk.lsh_attention ins(%qk) outs(%o) {chunk = 4 : i64, dropout = 0.3 : f64, hashes = 2 : i64, num_heads = 2 : i64, seed = 9 : i64} : !nnk.buffer<[B, T, 16], f32>, !nnk.buffer<[B, T, 8], f32>
  // CHECK: nnk.local_attention ins(%{{.*}}) outs(%{{.*}}) lse(%{{.*}}) {causal = true, chunk = 4 : i64, chunks_after = 1 : i64, num_heads = 2 : i64}
  nnk.local_attention ins(%qkv) outs(%o) lse(%lse) {causal = true, chunk = 4 : i64, chunks_after = 1 : i64, chunks_before = 1 : i64, num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, 2, T], f32>
  // CHECK: nnk.attention_grad ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) {chunk = 4 : i64, chunks_before = 2 : i64, kind = #nnk<attention local>, num_heads = 2 : i64}
  nnk.attention_grad ins(%qkv, %o) outs(%dqkv) {chunk = 4 : i64, chunks_before = 2 : i64, kind = #nnk<attention local>, num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, T, 24], f32>
  // CHECK: nnk.attention_grad ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) core(%{{.*}}) {dropout = 1.000000e-01 : f64, kind = #nnk<attention dense>, num_heads = 2 : i64, seed = 7 : i64}
  nnk.attention_grad ins(%qkv, %o) outs(%dqkv) core(%o) {dropout = 0.1 : f64, kind = #nnk<attention dense>, num_heads = 2 : i64, seed = 7 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>
  // CHECK: nnk.flash_attention ins(%{{.*}}) outs(%{{.*}}) lse(%{{.*}}) {num_heads = 2 : i64}
  nnk.flash_attention ins(%qkv) outs(%o) lse(%lse) {num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, 2, T], f32>
  // CHECK: nnk.attention_grad ins(%{{.*}}, %{{.*}}) saved(%{{.*}}, %{{.*}}) outs(%{{.*}}) {kind = #nnk<attention dense>, num_heads = 2 : i64}
  nnk.attention_grad ins(%qkv, %o) saved(%o, %lse) outs(%dqkv) {kind = #nnk<attention dense>, num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, 2, T], f32>, !nnk.buffer<[B, T, 24], f32>
  return
}
