// RUN: nncc-opt --nncc-pipeline %s | FileCheck %s

// Dense attention + residual: packed in-projection [B, T, 3E], flash core,
// out-projection with bias and the residual, written into the output.
// CHECK-LABEL: func.func @dense_residual
// CHECK-SAME: (%[[X:[^:]*]]: !nnk.buffer<[B, T, 8], f32>, %[[M:[^:]*]]: !nnk.buffer<[B, T], i1>, %[[WI:[^:]*]]: {{.*}}, %[[BI:[^:]*]]: {{.*}}, %[[WO:[^:]*]]: {{.*}}, %[[BO:[^:]*]]: {{.*}}, %[[Y:[^:]*]]: !nnk.buffer<[B, T, 8], f32> {nnk.output})
// CHECK: %[[QKV:.*]] = nnk.alloc : !nnk.buffer<[B, T, 24], f32>
// CHECK: nnk.gemm ins(%[[X]], %[[WI]]) bias(%[[BI]]) outs(%[[QKV]])
// CHECK: %[[CTX:.*]] = nnk.alloc : !nnk.buffer<[B, T, 8], f32>
// CHECK: nnk.flash_attention ins(%[[QKV]]) mask(%[[M]]) outs(%[[CTX]]) {causal = true, num_heads = 2 : i64}
// CHECK: nnk.gemm ins(%[[CTX]], %[[WO]]) bias(%[[BO]]) residual(%[[X]]) outs(%[[Y]])
// CHECK-NOT: nnk.elementwise
func.func @dense_residual(%x: !nn.tensor<[B, T, 8], f32>, %m: !nn.tensor<[B, T], i1>, %wi: !nn.tensor<[24, 8], f32>, %bi: !nn.tensor<[24], f32>, %wo: !nn.tensor<[8, 8], f32>, %bo: !nn.tensor<[8], f32>) -> !nn.tensor<[B, T, 8], f32> {
  %a = nn.attention %x, %wi in_bias %bi out %wo out_bias %bo mask %m {kind = #nn.dense, num_heads = 2 : i64, causal = true} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[24], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[8], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T, 8], f32>
  %r = nn.add %a, %x : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  return %r : !nn.tensor<[B, T, 8], f32>
}

// Dilated sliding window with global tokens: banded core.
// CHECK-LABEL: func.func @dilated
// CHECK: nnk.banded_attention ins(%{{.*}}) outs(%{{.*}}) {dilation = 2 : i64, global = array<i64: 0>, num_heads = 2 : i64, window = 4 : i64}
func.func @dilated(%x: !nn.tensor<[B, T, 8], f32>, %wi: !nn.tensor<[24, 8], f32>, %wo: !nn.tensor<[8, 8], f32>) -> !nn.tensor<[B, T, 8], f32> {
  %a = nn.attention %x, %wi out %wo {kind = #nn.dilated<window = 4, dilation = 2, global = [0]>, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  return %a : !nn.tensor<[B, T, 8], f32>
}

// LSH: shared-QK projection [B, T, 2E], rotations passed through, the
// convention with them (hf, the default, is not printed).
// CHECK-LABEL: func.func @lsh
// CHECK: %[[QKV:.*]] = nnk.alloc : !nnk.buffer<[B, T, 16], f32>
// CHECK: nnk.gemm ins(%{{.*}}, %{{.*}}) outs(%[[QKV]])
// CHECK: nnk.lsh_attention ins(%[[QKV]]) rotations(%{{.*}}) outs(%{{.*}}) {chunk = 4 : i64, convention = "nncc", hashes = 2 : i64, num_heads = 2 : i64}
// CHECK: nnk.gemm
func.func @lsh(%x: !nn.tensor<[B, T, 8], f32>, %wi: !nn.tensor<[16, 8], f32>, %wo: !nn.tensor<[8, 8], f32>, %rot: !nn.tensor<[2, 4, 2], f32>) -> !nn.tensor<[B, T, 8], f32> {
  %a = nn.attention %x, %wi out %wo rotations %rot {kind = #nn.lsh<hashes = 2, chunk = 4, convention = "nncc">, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[2, 4, 2], f32>) -> !nn.tensor<[B, T, 8], f32>
  return %a : !nn.tensor<[B, T, 8], f32>
}

// CHECK-LABEL: func.func @lsh_hf
// CHECK: nnk.lsh_attention ins(%{{.*}}) rotations(%{{.*}}) outs(%{{.*}}) {chunk = 4 : i64, hashes = 2 : i64, num_heads = 2 : i64} : !nnk.buffer<[B, T, 16], f32>, !nnk.buffer<[2, 4, 2, 2], f32>
func.func @lsh_hf(%x: !nn.tensor<[B, T, 8], f32>, %wi: !nn.tensor<[16, 8], f32>, %wo: !nn.tensor<[8, 8], f32>, %rot: !nn.tensor<[2, 4, 2, 2], f32>) -> !nn.tensor<[B, T, 8], f32> {
  %a = nn.attention %x, %wi out %wo rotations %rot {kind = #nn.lsh<hashes = 2, chunk = 4>, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[2, 4, 2, 2], f32>) -> !nn.tensor<[B, T, 8], f32>
  return %a : !nn.tensor<[B, T, 8], f32>
}

// Local (Reformer's LocalSelfAttention): the packed [B, T, 3E] projection,
// chunk and window on nnk.local_attention (one chunk back, none ahead: the
// defaults, not printed).
// CHECK-LABEL: func.func @local
// CHECK: %[[QKV:.*]] = nnk.alloc : !nnk.buffer<[B, T, 24], f32>
// CHECK: nnk.gemm ins(%{{.*}}, %{{.*}}) outs(%[[QKV]])
// CHECK: nnk.local_attention ins(%[[QKV]]) mask(%{{.*}}) outs(%{{.*}}) {causal = true, chunk = 4 : i64, num_heads = 2 : i64}
// CHECK: nnk.gemm
func.func @local(%x: !nn.tensor<[B, T, 8], f32>, %wi: !nn.tensor<[24, 8], f32>, %wo: !nn.tensor<[8, 8], f32>, %m: !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T, 8], f32> {
  %a = nn.attention %x, %wi out %wo mask %m {causal = true, kind = #nn.local<chunk = 4, before = 1, after = 0>, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T, 8], f32>
  return %a : !nn.tensor<[B, T, 8], f32>
}
