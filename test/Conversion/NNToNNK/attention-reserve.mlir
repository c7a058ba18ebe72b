// RUN: nncc-opt --nncc-pipeline %s | FileCheck %s

// An attention whose `reserve` result (built by nncc-autodiff) its gradient
// reads keeps the packed projection, the core's output and each query's
// log-sum-exp [B, heads, T]: the three buffers the !nn.reserve value maps
// to (1:N). The gradient reads them (saved(...)) instead of recomputing the
// projection and the core. Without the edge, it recomputes both.

// CHECK-LABEL: func.func @paired
// CHECK: nnk.gemm ins(%{{.*}}, %{{.*}}) outs(%[[QKV:[^)]+]])
// CHECK: %[[LSE:.*]] = nnk.alloc : !nnk.buffer<[B, 2, T], f32>
// CHECK: nnk.flash_attention ins(%[[QKV]]) outs(%[[CORE:[^)]+]]) lse(%[[LSE]]) {dropout = 1.000000e-01 : f64, num_heads = 2 : i64, seed = 4 : i64}
// CHECK-NOT: nnk.flash_attention
// CHECK: nnk.attention_grad ins(%[[QKV]], %{{.*}}) saved(%[[CORE]], %[[LSE]]) outs(%{{.*}}) {dropout = 1.000000e-01 : f64, kind = #nnk<attention dense>, num_heads = 2 : i64, seed = 4 : i64}
// CHECK: nnk.linear_weight_grad ins(%{{.*}}, %[[CORE]])
func.func @paired(%x: !nn.tensor<[B, T, 8], f32>, %wi: !nn.tensor<[24, 8], f32>, %wo: !nn.tensor<[8, 8], f32>, %dy: !nn.tensor<[B, T, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>) attributes {nn.training} {
  %a, %r = nn.attention %x, %wi out %wo {kind = #nn.dense, num_heads = 2 : i64, dropout = 0.1 : f64, seed = 4 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.reserve)
  %dx, %dwi, %dwo = nn.attention_grad %x, %wi out %wo grad %dy reserve %r {kind = #nn.dense, num_heads = 2 : i64, dropout = 0.1 : f64, seed = 4 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T, 8], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>)
  return %a, %dwi : !nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>
}

// CHECK-LABEL: func.func @unpaired
// CHECK: nnk.banded_attention ins(%{{.*}}) outs(%{{.*}}) {
// CHECK: nnk.gemm
// CHECK: nnk.attention_grad ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) core(%{{.*}})
// CHECK: return
func.func @unpaired(%x: !nn.tensor<[B, T, 8], f32>, %wi: !nn.tensor<[24, 8], f32>, %wo: !nn.tensor<[8, 8], f32>, %dy: !nn.tensor<[B, T, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>) attributes {nn.training} {
  %a = nn.attention %x, %wi out %wo {kind = #nn.dilated<window = 4, dilation = 2, global = [0]>, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  %dx, %dwi, %dwo = nn.attention_grad %x, %wi out %wo grad %dy {kind = #nn.dilated<window = 4, dilation = 2, global = [0]>, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>)
  return %a, %dwi : !nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>
}

// The out-projection absorbs a residual add (the chain ends at the add): the
// reserve still maps to the kept buffers.
// CHECK-LABEL: func.func @residual
// CHECK: nnk.gemm ins(%{{.*}}, %{{.*}}) outs(%[[QKV:[^)]+]])
// CHECK: %[[LSE:.*]] = nnk.alloc : !nnk.buffer<[B, 2, T], f32>
// CHECK: nnk.flash_attention ins(%[[QKV]]) outs(%[[CORE:[^)]+]]) lse(%[[LSE]])
// CHECK: nnk.gemm ins(%[[CORE]], %{{.*}}) residual(%{{.*}}) outs(
// CHECK: nnk.attention_grad ins(%[[QKV]], %{{.*}}) saved(%[[CORE]], %[[LSE]])
func.func @residual(%x: !nn.tensor<[B, T, 8], f32>, %wi: !nn.tensor<[24, 8], f32>, %wo: !nn.tensor<[8, 8], f32>, %dy: !nn.tensor<[B, T, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>) attributes {nn.training} {
  %a, %r = nn.attention %x, %wi out %wo {kind = #nn.dense, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.reserve)
  %s = nn.add %a, %x : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  %dx, %dwi, %dwo = nn.attention_grad %x, %wi out %wo grad %dy reserve %r {kind = #nn.dense, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T, 8], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>)
  return %s, %dwi : !nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>
}
