// RUN: nncc-translate --nnk-to-cpp %s | FileCheck %s
// RUN: not nncc-translate --nnk-to-cuda %s 2>&1 | FileCheck %s --check-prefix=CUDA

// Per-example global tokens and Hugging Face's (Longformer's) dilated
// convention on the CPU: the parameter block points at the global mask and
// names the convention; the workspace is sized for B rows of global tables.
// q, k, v stay the first three blocks of the [B, T, 6E] rows (the kernel
// finds the global projections 3E further). CUDA has no such kernel yet.

module attributes {nn.dims = ["B", "T"]} {
  // CHECK-LABEL: // launches of @longformer
  func.func @longformer(%qkv: !nnk.buffer<[B, T, 48], f32>, %pad: !nnk.buffer<[B, T], i1>,
                        %glob: !nnk.buffer<[B, T], i1>,
                        %o: !nnk.buffer<[B, T, 8], f32> {nnk.output}) {
    // CHECK: p.kind = NNCC_ATTN_DILATED; p.window = 4; p.dilation = 1; p.global_mask = [[G:in[0-9]+]]; p.dilated_convention = NNCC_DILATED_HF;
    // CHECK: NNCC_KFN(nncc_attention)(&p, d_B, d_T, 2, (8LL / 2), [[Q:in[0-9]+]], [[Q]] + 8LL, [[Q]] + 2 * 8LL, 48LL, out0, 8LL, [[M:in[0-9]+]], nncc_ms_buffer_ptr(m, 0), NULL, NULL)
    // CUDA: error: per-example global tokens (global_mask) and dilated attention in convention hf (Longformer's global projections) are not supported on CUDA yet; compile with --target cpu
    nnk.banded_attention ins(%qkv) mask(%pad) global_mask(%glob) outs(%o) {convention = "hf", num_heads = 2 : i64, window = 4 : i64} : !nnk.buffer<[B, T, 48], f32>, !nnk.buffer<[B, T], i1>, !nnk.buffer<[B, T], i1>, !nnk.buffer<[B, T, 8], f32>
    return
  }
}
