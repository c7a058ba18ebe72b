// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// The verifiers of #nn.dilated's convention and nn.attention's global_mask.

// expected-error @+1 {{dilated attention convention must be "hf" or "nncc", got "roberta"}}
func.func private @f() attributes {kind = #nn.dilated<window = 4, dilation = 1, convention = "roberta">}

// -----

// expected-error @+1 {{dilated attention in convention "hf" takes its global tokens from the attention's global_mask, not a global list}}
func.func private @f() attributes {kind = #nn.dilated<window = 4, dilation = 1, global = [0], convention = "hf">}

// -----

func.func @hf_projections(%x: !nn.tensor<[B, T, 8], f32>, %win: !nn.tensor<[24, 8], f32>, %wout: !nn.tensor<[8, 8], f32>) {
  // expected-error @+2 {{'nn.attention' op expected in_proj_weight [6A, E] of shape [48, 8], got [24, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %win out %wout {kind = #nn.dilated<window = 4, dilation = 1, convention = "hf">, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  return
}

// -----

func.func @global_mask_kind(%x: !nn.tensor<[B, T, 8], f32>, %win: !nn.tensor<[24, 8], f32>, %wout: !nn.tensor<[8, 8], f32>, %glob: !nn.tensor<[B, T], i1>) {
  // expected-error @+2 {{'nn.attention' op global_mask is only allowed with #nn.dilated attention}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %win out %wout global_mask %glob {kind = #nn.dense, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T, 8], f32>
  return
}

// -----

func.func @global_mask_and_list(%x: !nn.tensor<[B, T, 8], f32>, %win: !nn.tensor<[24, 8], f32>, %wout: !nn.tensor<[8, 8], f32>, %glob: !nn.tensor<[B, T], i1>) {
  // expected-error @+2 {{'nn.attention' op global_mask and a global list exclude each other}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %win out %wout global_mask %glob {kind = #nn.dilated<window = 4, dilation = 1, global = [0]>, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T, 8], f32>
  return
}

// -----

func.func @global_mask_shape(%x: !nn.tensor<[B, T, 8], f32>, %win: !nn.tensor<[24, 8], f32>, %wout: !nn.tensor<[8, 8], f32>, %glob: !nn.tensor<[B, 4], i1>) {
  // expected-error @+2 {{'nn.attention' op expected global_mask [B, T] of shape [B, T], got [B, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %win out %wout global_mask %glob {kind = #nn.dilated<window = 4, dilation = 1>, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, 4], i1>) -> !nn.tensor<[B, T, 8], f32>
  return
}

// -----

func.func @global_mask_type(%x: !nn.tensor<[B, T, 8], f32>, %win: !nn.tensor<[24, 8], f32>, %wout: !nn.tensor<[8, 8], f32>, %glob: !nn.tensor<[B, T], f32>) {
  // expected-error @+1 {{'nn.attention' op operand #3 must be nn tensor of i1 values, but got '!nn.tensor<[B, T], f32>'}}
  %0 = nn.attention %x, %win out %wout global_mask %glob {kind = #nn.dilated<window = 4, dilation = 1>, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T], f32>) -> !nn.tensor<[B, T, 8], f32>
  return
}
