// RUN: nncc-opt %s | nncc-opt | FileCheck %s

// nn.attention and nn.attention_grad with Hugging Face's (Longformer's)
// dilated convention: per-example global tokens (global_mask) and the
// global queries' own projections stacked after q, k, v ([6E, E]).

// CHECK-LABEL: func.func @longformer
// CHECK-SAME: (%[[X:[^:]*]]: !nn.tensor<[B, T, 8], f32>, %{{[^:]*}}: !nn.tensor<[48, 8], f32>, %{{[^:]*}}: !nn.tensor<[48], f32>, %{{[^:]*}}: !nn.tensor<[8, 8], f32>, %[[PAD:[^:]*]]: !nn.tensor<[B, T], i1>, %[[GLOB:[^:]*]]: !nn.tensor<[B, T], i1>
func.func @longformer(%x: !nn.tensor<[B, T, 8], f32>, %win: !nn.tensor<[48, 8], f32>, %bin: !nn.tensor<[48], f32>, %wout: !nn.tensor<[8, 8], f32>, %pad: !nn.tensor<[B, T], i1>, %glob: !nn.tensor<[B, T], i1>, %dy: !nn.tensor<[B, T, 8], f32>) {
  // CHECK: nn.attention %[[X]], %{{.*}} in_bias %{{.*}} out %{{.*}} mask %[[PAD]] global_mask %[[GLOB]] {kind = #nn.dilated<window = 4, dilation = 1, convention = "hf">, num_heads = 2 : i64}
  %0 = nn.attention %x, %win in_bias %bin out %wout mask %pad global_mask %glob {kind = #nn.dilated<window = 4, dilation = 1, convention = "hf">, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[48, 8], f32>, !nn.tensor<[48], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T], i1>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T, 8], f32>
  // CHECK: nn.attention_grad %[[X]], %{{.*}} in_bias %{{.*}} out %{{.*}} mask %[[PAD]] global_mask %[[GLOB]] grad %{{.*}} {kind = #nn.dilated<window = 4, dilation = 1, convention = "hf">, num_heads = 2 : i64}
  %1:4 = nn.attention_grad %x, %win in_bias %bin out %wout mask %pad global_mask %glob grad %dy {kind = #nn.dilated<window = 4, dilation = 1, convention = "hf">, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[48, 8], f32>, !nn.tensor<[48], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T], i1>, !nn.tensor<[B, T], i1>, !nn.tensor<[B, T, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[48, 8], f32>, !nn.tensor<[48], f32>, !nn.tensor<[8, 8], f32>)
  return
}

// The default convention is left out; a per-example mask also serves it.
// CHECK-LABEL: func.func @nncc_convention
func.func @nncc_convention(%x: !nn.tensor<[B, T, 8], f32>, %win: !nn.tensor<[24, 8], f32>, %wout: !nn.tensor<[8, 8], f32>, %glob: !nn.tensor<[B, T], i1>) {
  // CHECK: nn.attention %{{.*}} global_mask %{{.*}} {kind = #nn.dilated<window = 4, dilation = 2>, num_heads = 2 : i64}
  %0 = nn.attention %x, %win out %wout global_mask %glob {kind = #nn.dilated<window = 4, dilation = 2, convention = "nncc">, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T, 8], f32>
  return
}
