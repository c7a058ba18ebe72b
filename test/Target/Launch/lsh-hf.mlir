// RUN: nncc-translate --nnk-to-cpp %s | FileCheck %s --check-prefix=CPU
// RUN: nncc-translate --nnk-to-cuda %s | FileCheck %s --check-prefix=CUDA

// LSH attention in Hugging Face's convention (the default): the CPU's
// parameter block says NNCC_LSH_HF, and the drawn rotations are per head,
// [heads, dh, hashes, buckets / 2] (2 * 2 * dh * buckets / 2 normals); given
// ones read their buckets / 2 from dimension 3. On CUDA the launchers' flags
// argument 2 (kLshHfConvention), scale 1 (HF's keys carry the 1/sqrt(dh)),
// the same per-head draw.

module attributes {nn.dims = ["B", "T"]} {
  // CPU-LABEL: // launches of @hf
  func.func @hf(%qk: !nnk.buffer<[B, T, 16], f32>, %rot: !nnk.buffer<[2, 4, 3, 2], f32>,
                %o: !nnk.buffer<[B, T, 8], f32> {nnk.output}) {
    // CPU: p.kind = NNCC_ATTN_LSH; p.n_hashes = 2; p.chunk = 4; p.lsh_convention = NNCC_LSH_HF; p.n_buckets = (int32_t)nncc_gen_lsh_buckets(d_T, 4);
    // CPU: NNCC_RNG_NORMAL(rot, (uint64_t)(2 * 2 * (8LL / 2) * (nncc_gen_lsh_buckets(d_T, 4) / 2) * sizeof(real_t) / sizeof(real_t)), 9ULL, 0x15AULL, 0, 0, 1);
    // CUDA-LABEL: // launches of @hf
    // CUDA: const acc_t<real_t> scale = (acc_t<real_t>)1;
    // CUDA: const int64_t nrot = 2 * 2 * 4 * (nncc_gen_lsh_buckets(d_T, 4) / 2);
    // CUDA: launch_lsh_attention<real_t, 0>((int)4, (int)d_B, (int)d_T, 2, 2, (int)nbuckets, 4, 0, scale, 2, in0, in0 + 8LL, 16LL, rot, out0, 8LL, (const uint8_t *)NULL,
    nnk.lsh_attention ins(%qk) outs(%o) {chunk = 4 : i64, hashes = 2 : i64, num_heads = 2 : i64, seed = 9 : i64} : !nnk.buffer<[B, T, 16], f32>, !nnk.buffer<[B, T, 8], f32>
    // CPU: p.kind = NNCC_ATTN_LSH; p.n_hashes = 3; p.chunk = 4; p.lsh_convention = NNCC_LSH_HF; p.n_buckets = (int32_t)(2 * 2LL);
    // CUDA: const int64_t nbuckets = 2 * 2LL;
    // CUDA: lsh_rotations_acc<real_t>(in1, 2 * 3 * 4 * 2LL,
    // CUDA: launch_lsh_attention<real_t, 0>((int)4, (int)d_B, (int)d_T, 2, 3, (int)nbuckets, 4, 0, scale, 2, in0, in0 + 8LL, 16LL, rot, out0, 8LL,
    nnk.lsh_attention ins(%qk) rotations(%rot) outs(%o) {chunk = 4 : i64, hashes = 3 : i64, num_heads = 2 : i64} : !nnk.buffer<[B, T, 16], f32>, !nnk.buffer<[2, 4, 3, 2], f32>, !nnk.buffer<[B, T, 8], f32>
    return
  }
}
