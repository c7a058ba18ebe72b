// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// The verifiers of nnk.banded_attention's and nnk.attention_grad's global
// tokens and dilated convention.

func.func @convention(%q: !nnk.buffer<[B, T, 24], f32>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{dilated convention must be "hf" or "nncc", got "x"}}
  nnk.banded_attention ins(%q) outs(%o) {convention = "x", num_heads = 2 : i64, window = 4 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

func.func @hf_packs(%q: !nnk.buffer<[B, T, 24], f32>, %g: !nnk.buffer<[B, T], i1>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{qkv must have shape [B, T, 48], got [B, T, 24]}}
  nnk.banded_attention ins(%q) global_mask(%g) outs(%o) {convention = "hf", num_heads = 2 : i64, window = 4 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T], i1>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

func.func @hf_list(%q: !nnk.buffer<[B, T, 48], f32>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{convention "hf" takes its global tokens from global_mask}}
  nnk.banded_attention ins(%q) outs(%o) {convention = "hf", global = array<i64: 0>, num_heads = 2 : i64, window = 4 : i64} : !nnk.buffer<[B, T, 48], f32>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

func.func @mask_and_list(%q: !nnk.buffer<[B, T, 24], f32>, %g: !nnk.buffer<[B, T], i1>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{global_mask and a global list exclude each other}}
  nnk.banded_attention ins(%q) global_mask(%g) outs(%o) {global = array<i64: 1>, num_heads = 2 : i64, window = 4 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T], i1>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

func.func @mask_shape(%q: !nnk.buffer<[B, T, 24], f32>, %g: !nnk.buffer<[B, 3], i1>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{global_mask must have shape [B, T], got [B, 3]}}
  nnk.banded_attention ins(%q) global_mask(%g) outs(%o) {num_heads = 2 : i64, window = 4 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, 3], i1>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

func.func @grad_kind(%q: !nnk.buffer<[B, T, 24], f32>, %g: !nnk.buffer<[B, T], i1>, %o: !nnk.buffer<[B, T, 8], f32>, %dq: !nnk.buffer<[B, T, 24], f32>) {
  // expected-error @+1 {{global_mask, global and dilated_convention apply only to kind dilated}}
  nnk.attention_grad ins(%q, %o) global_mask(%g) outs(%dq) {kind = #nnk<attention dense>, num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T], i1>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, T, 24], f32>
  return
}

// -----

func.func @grad_convention(%q: !nnk.buffer<[B, T, 48], f32>, %o: !nnk.buffer<[B, T, 8], f32>, %dq: !nnk.buffer<[B, T, 48], f32>) {
  // expected-error @+1 {{convention "hf" takes its global tokens from global_mask}}
  nnk.attention_grad ins(%q, %o) outs(%dq) {dilated_convention = "hf", global = array<i64: 2>, kind = #nnk<attention dilated>, num_heads = 2 : i64, window = 4 : i64} : !nnk.buffer<[B, T, 48], f32>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, T, 48], f32>
  return
}
