// RUN: nncc-opt %s | nncc-opt | FileCheck %s

// nnk.banded_attention and nnk.attention_grad with per-example global
// tokens and Hugging Face's (Longformer's) convention: qkv [B, T, 6E].

// CHECK-LABEL: func.func @longformer
func.func @longformer(%qkv: !nnk.buffer<[B, T, 48], f32>, %pad: !nnk.buffer<[B, T], i1>, %glob: !nnk.buffer<[B, T], i1>, %o: !nnk.buffer<[B, T, 8], f32>, %dqkv: !nnk.buffer<[B, T, 48], f32>) {
  // CHECK: nnk.banded_attention ins(%{{.*}}) mask(%{{.*}}) global_mask(%[[G:[^)]*]]) outs(%{{.*}}) {convention = "hf", num_heads = 2 : i64, window = 4 : i64}
  nnk.banded_attention ins(%qkv) mask(%pad) global_mask(%glob) outs(%o) {convention = "hf", num_heads = 2 : i64, window = 4 : i64} : !nnk.buffer<[B, T, 48], f32>, !nnk.buffer<[B, T], i1>, !nnk.buffer<[B, T], i1>, !nnk.buffer<[B, T, 8], f32>
  // CHECK: nnk.attention_grad ins(%{{.*}}, %{{.*}}) mask(%{{.*}}) global_mask(%[[G]]) outs(%{{.*}}) {dilated_convention = "hf", kind = #nnk<attention dilated>, num_heads = 2 : i64, window = 4 : i64}
  nnk.attention_grad ins(%qkv, %o) mask(%pad) global_mask(%glob) outs(%dqkv) {dilated_convention = "hf", kind = #nnk<attention dilated>, num_heads = 2 : i64, window = 4 : i64} : !nnk.buffer<[B, T, 48], f32>, !nnk.buffer<[B, T], i1>, !nnk.buffer<[B, T], i1>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, T, 48], f32>
  return
}
