// RUN: nncc-opt --nncc-pipeline %s | FileCheck %s

// Dilated attention in Hugging Face's (Longformer's) convention: the packed
// in-projection [B, T, 6E] (q, k, v, then the global queries' own),
// the banded core with the per-example global mask and the convention, and
// in the backward the same on nnk.attention_grad, whose dqkv [B, T, 6E]
// feeds the in-projection's gradients.

// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:[^:]*]]: !nnk.buffer<[B, T, 8], f32>, %[[PAD:[^:]*]]: !nnk.buffer<[B, T], i1>, %[[GLOB:[^:]*]]: !nnk.buffer<[B, T], i1>, %[[WI:[^:]*]]: !nnk.buffer<[48, 8], f32>
// CHECK: %[[QKV:.*]] = nnk.alloc : !nnk.buffer<[B, T, 48], f32>
// CHECK: nnk.gemm ins(%[[X]], %[[WI]]) bias(%{{.*}}) outs(%[[QKV]])
// CHECK: nnk.banded_attention ins(%[[QKV]]) mask(%[[PAD]]) global_mask(%[[GLOB]]) outs(%{{.*}}) {convention = "hf", num_heads = 2 : i64, window = 4 : i64}
func.func @forward(%x: !nn.tensor<[B, T, 8], f32>, %pad: !nn.tensor<[B, T], i1>, %glob: !nn.tensor<[B, T], i1>, %wi: !nn.tensor<[48, 8], f32>, %bi: !nn.tensor<[48], f32>, %wo: !nn.tensor<[8, 8], f32>) -> !nn.tensor<[B, T, 8], f32> {
  %a = nn.attention %x, %wi in_bias %bi out %wo mask %pad global_mask %glob {kind = #nn.dilated<window = 4, dilation = 1, convention = "hf">, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[48, 8], f32>, !nn.tensor<[48], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T], i1>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T, 8], f32>
  return %a : !nn.tensor<[B, T, 8], f32>
}

// CHECK-LABEL: func.func @backward
// CHECK-SAME: (%[[X:[^:]*]]: !nnk.buffer<[B, T, 8], f32>, %[[PAD:[^:]*]]: !nnk.buffer<[B, T], i1>, %[[GLOB:[^:]*]]: !nnk.buffer<[B, T], i1>, %[[WI:[^:]*]]: !nnk.buffer<[48, 8], f32>
// CHECK: %[[QKV:.*]] = nnk.alloc : !nnk.buffer<[B, T, 48], f32>
// CHECK: nnk.gemm ins(%[[X]], %[[WI]]) outs(%[[QKV]])
// CHECK: %[[DQKV:.*]] = nnk.alloc : !nnk.buffer<[B, T, 48], f32>
// CHECK: nnk.attention_grad ins(%[[QKV]], %{{.*}}) mask(%[[PAD]]) global_mask(%[[GLOB]]) outs(%[[DQKV]]) core(%{{.*}}) {dilated_convention = "hf", kind = #nnk<attention dilated>, num_heads = 2 : i64, window = 4 : i64}
// CHECK: nnk.matmul ins(%[[DQKV]], %[[WI]])
// CHECK: nnk.linear_weight_grad ins(%[[DQKV]], %[[X]])
func.func @backward(%x: !nn.tensor<[B, T, 8], f32>, %pad: !nn.tensor<[B, T], i1>, %glob: !nn.tensor<[B, T], i1>, %wi: !nn.tensor<[48, 8], f32>, %wo: !nn.tensor<[8, 8], f32>, %dy: !nn.tensor<[B, T, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[48, 8], f32>, !nn.tensor<[8, 8], f32>) {
  %g:3 = nn.attention_grad %x, %wi out %wo mask %pad global_mask %glob grad %dy {kind = #nn.dilated<window = 4, dilation = 1, convention = "hf">, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[48, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T], i1>, !nn.tensor<[B, T], i1>, !nn.tensor<[B, T, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[48, 8], f32>, !nn.tensor<[8, 8], f32>)
  return %g#0, %g#1, %g#2 : !nn.tensor<[B, T, 8], f32>, !nn.tensor<[48, 8], f32>, !nn.tensor<[8, 8], f32>
}
