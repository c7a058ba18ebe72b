// RUN: nncc-translate --nnk-to-cpp --split-input-file %s | FileCheck %s --check-prefix=CPU
// RUN: nncc-translate --nnk-to-cuda --split-input-file %s | FileCheck %s --check-prefix=CUDA

// The attention cores: one nncc_attention_params block on the CPU (forward
// and backward alike), one launcher per kind on CUDA.

module attributes {nn.dims = ["B", "T"]} {
  // CPU-LABEL: // launches of @cores
  // CUDA-LABEL: // launches of @cores
  func.func @cores(%qkv: !nnk.buffer<[B, T, 24], f32>, %qk: !nnk.buffer<[B, T, 16], f32>,
                   %o: !nnk.buffer<[B, T, 8], f32> {nnk.output}) {
    // CPU: p.kind = NNCC_ATTN_DENSE;
    // CPU: NNCC_KFN(nncc_attention)(&p, d_B, d_T, 2, (8LL / 2), in0, in0 + 8LL, in0 + 2 * 8LL, 24LL, out0, 8LL, NULL, nncc_ms_buffer_ptr(m, 0), NULL, NULL)
    // CUDA: const acc_t<real_t> scale = (acc_t<real_t>)1 / sqrt((acc_t<real_t>)4);
    // CUDA: launch_flash_attention_dyn<real_t>((int)4, (int)d_B, (int)d_T, 2, in0, in0 + 8LL, in0 + 2 * 8LL, 24LL, out0, 8LL, (const uint8_t *)NULL, 1, scale, (acc_t<real_t> *)NULL, stream)
    nnk.flash_attention ins(%qkv) outs(%o) {causal = true, num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>
    // CPU: p.kind = NNCC_ATTN_DILATED; p.window = 4; p.dilation = 2; static const int32_t kGlobal[] = {0}; p.global_pos = kGlobal; p.n_global = 1;
    // CPU: NNCC_KFN(nncc_attention)(&p, d_B, d_T, 2, (8LL / 2), in0, in0 + 8LL, in0 + 2 * 8LL, 24LL, out0, 8LL, NULL, nncc_ms_buffer_ptr(m, 1), NULL, NULL)
    // CUDA: static const int32_t kGlobal[] = {0};
    // CUDA: launch_dilated_attention_dyn<real_t, 0>((int)4, (int)d_B, (int)d_T, 2, in0, in0 + 8LL, in0 + 2 * 8LL, 24LL, out0, 8LL, (const uint8_t *)NULL, 0, scale, 4, 2, kGlobal, 1, (nncc_scratch + (0)), stream)
    nnk.banded_attention ins(%qkv) outs(%o) {dilation = 2 : i64, global = array<i64: 0>, num_heads = 2 : i64, window = 4 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>
    // LSH (convention nncc) with drawn rotations: the seeded N(0, 1) draw
    // (stream 0x15A) on the CPU, the same values from a kernel on CUDA;
    // shared QK.
    // CPU: p.kind = NNCC_ATTN_LSH; p.n_hashes = 2; p.chunk = 4; p.lsh_convention = NNCC_LSH_NNCC; p.n_buckets = (int32_t)nncc_gen_lsh_buckets(d_T, 4);
    // CPU: NNCC_RNG_NORMAL(rot, (uint64_t)(2 * (8LL / 2) * (nncc_gen_lsh_buckets(d_T, 4) / 2) * sizeof(real_t) / sizeof(real_t)), 9ULL, 0x15AULL, 0, 0, 1);
    // CPU: NNCC_KFN(nncc_attention)(&p, d_B, d_T, 2, (8LL / 2), in1, in1, in1 + 8LL, 16LL, out0, 8LL, NULL, nncc_ms_buffer_ptr(m, 2), NULL, NULL)
    // CUDA: lsh_rotations_kernel<real_t><<<grid_for(nrot, 256), 256, 0, stream>>>(nrot, 9ULL, rot);
    // CUDA: launch_lsh_attention<real_t, 0>((int)4, (int)d_B, (int)d_T, 2, 2, (int)nbuckets, 4, 0, scale, 0, in1, in1 + 8LL, 16LL, rot, out0, 8LL, (const uint8_t *)NULL,
    nnk.lsh_attention ins(%qk) outs(%o) {chunk = 4 : i64, convention = "nncc", hashes = 2 : i64, num_heads = 2 : i64, seed = 9 : i64} : !nnk.buffer<[B, T, 16], f32>, !nnk.buffer<[B, T, 8], f32>
    return
  }
}

// -----

module attributes {nn.dims = ["B", "T"]} {
  // CPU-LABEL: // launches of @training
  // CUDA-LABEL: // launches of @training
  func.func @training(%qkv: !nnk.buffer<[B, T, 24], f32>, %dout: !nnk.buffer<[B, T, 8], f32>,
                      %o: !nnk.buffer<[B, T, 8], f32> {nnk.output}, %lse: !nnk.buffer<[B, 2, T], f32> {nnk.output},
                      %dqkv: !nnk.buffer<[B, T, 24], f32> {nnk.output}) {
    // Training forward: dropout from the op's seed at the step's offset, and
    // the log-sum-exp kept for the backward (the _train launchers on CUDA).
    // CPU: p.dropout = 0.10000000000000001; p.dropout_seed = nncc_ms_rng_key(m, 7ULL); p.dropout_offset = nncc_ms_rng_offset(m, (uint64_t)(d_B) * 2ULL * 1ULL * (uint64_t)(d_T) * (uint64_t)(d_T));
    // CPU: NNCC_KFN(nncc_attention)(&p, {{.*}}, out0, 8LL, NULL, nncc_ms_buffer_ptr(m, 0), NULL, out1)
    // CUDA: launch_flash_attention_train<real_t, 0>((int)4, (int)d_B, (int)d_T, 2, in0, in0 + 8LL, in0 + 2 * 8LL, 24LL, out0, 8LL, (const uint8_t *)NULL, 0, scale, out1, 0.10000000000000001, nncc_ms_rng_key(m, 7ULL), nncc_ms_rng_offset(m, (uint64_t)(d_B) * 2ULL * 1ULL * (uint64_t)(d_T) * (uint64_t)(d_T)), stream)
    nnk.flash_attention ins(%qkv) outs(%o) lse(%lse) {dropout = 0.1 : f64, num_heads = 2 : i64, seed = 7 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, 2, T], f32>
    // The backward of the dilated core from the kept output and lse.
    // CPU: p.kind = NNCC_ATTN_DILATED; p.window = 4; p.dilation = 1;
    // CPU: NNCC_KFN(nncc_attention_backward)(&p, d_B, d_T, 2, (8LL / 2), in0, in0 + 8LL, in0 + 2 * 8LL, 24LL, in1, 8LL, out2, out2 + 8LL, out2 + 2 * 8LL, 24LL, NULL, nncc_ms_buffer_ptr(m, 1), out0, out1)
    // CUDA: launch_dilated_attention_backward<real_t, 0>((int)4, (int)d_B, (int)d_T, 2, in0, in0 + 8LL, in0 + 2 * 8LL, 24LL, in1, 8LL, out2, out2 + 8LL, out2 + 2 * 8LL, 24LL, (const uint8_t *)NULL, 0, scale, 4, 1, (const int32_t *)NULL, 0, 0.0, 0ULL, 0ULL, out0, out1, (real_t *)NULL, (nncc_scratch + (0)), stream)
    nnk.attention_grad ins(%qkv, %dout) saved(%o, %lse) outs(%dqkv) {kind = #nnk<attention dilated>, num_heads = 2 : i64, window = 4 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, 2, T], f32>, !nnk.buffer<[B, T, 24], f32>
    return
  }
}
