// RUN: nncc compile %s --emit cuda | FileCheck %s
// Training-mode attention dropout on CUDA: the _train launcher with the
// op's rate, its seed mixed with the run seed, and the counter offset of
// its B*H*T*T batch-major draws (the CPU's masks; docs/training.md, "Random
// streams").
module attributes {nn.dims = ["B", "T"], nn.model = "dropout"} {
  func.func @forward(%x: !nnk.buffer<[B, T, 24], f32> {nn.name = "x"},
                     %y: !nnk.buffer<[B, T, 8], f32> {nnk.output, nn.name = "y"}) {
    // CHECK: launch_flash_attention_train<real_t, 0>((int)4, (int)d_B, (int)d_T, 2, {{.*}}, (real_t *)NULL, 0.10000000000000001, nncc_ms_rng_key(m, 0ULL), nncc_ms_rng_offset(m, (uint64_t)(d_B) * 2ULL * 1ULL * (uint64_t)(d_T) * (uint64_t)(d_T)), stream)
    nnk.flash_attention ins(%x) outs(%y) {dropout = 0.1 : f64, num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>
    return
  }
}
