// RUN: nncc compile %s --emit cuda | FileCheck %s
// Training-mode attention dropout on CUDA: the _train launcher with the
// op's rate and seed and the step's counter offset (the CPU's masks).
module attributes {nn.dims = ["B", "T"], nn.model = "dropout"} {
  func.func @forward(%x: !nnk.buffer<[B, T, 24], f32> {nn.name = "x"},
                     %y: !nnk.buffer<[B, T, 8], f32> {nnk.output, nn.name = "y"}) {
    // CHECK: launch_flash_attention_train<real_t, 0>((int)4, (int)d_B, (int)d_T, 2, {{.*}}, (real_t *)NULL, 0.10000000000000001, 0ULL, nncc_ms_dropout_offset(m), stream)
    nnk.flash_attention ins(%x) outs(%y) {dropout = 0.1 : f64, num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>
    return
  }
}
