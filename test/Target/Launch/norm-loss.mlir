// RUN: nncc-translate --nnk-to-cpp --split-input-file %s | FileCheck %s --check-prefix=CPU
// RUN: nncc-translate --nnk-to-cuda --split-input-file %s | FileCheck %s --check-prefix=CUDA

// Layer norm, softmax, losses and dropout.

module attributes {nn.dims = ["B"]} {
  nn.parameter @g : !nn.tensor<[16], f32>
  nn.parameter @b : !nn.tensor<[16], f32>
  // CPU-LABEL: // launches of @norm
  // CUDA-LABEL: // launches of @norm
  func.func @norm(%x: !nnk.buffer<[B, 16], f32>, %r: !nnk.buffer<[B, 16], f32>,
                  %y: !nnk.buffer<[B, 16], f32> {nnk.output}, %s: !nnk.buffer<[B, 16], f32> {nnk.output}) {
    %g = nnk.weight @g : !nnk.buffer<[16], f32>
    %b = nnk.weight @b : !nnk.buffer<[16], f32>
    // Residual add fused; the sum is kept.
    // CPU: NNCC_KFN(nncc_layer_norm)((d_B), 16LL, in0, in1, w0, w1, 1.0000000000000001e-05, out0, out1, NULL, NULL)
    // CUDA: nncc::kernels::cuda::launch_layer_norm<real_t>((d_B), 16LL, in0, in1, w0, w1, (acc_t<real_t>)1.0000000000000001e-05, out0, out1, NULL, NULL, stream)
    nnk.layer_norm ins(%x) residual(%r) weight(%g) bias(%b) outs(%y) sum(%s) : !nnk.buffer<[B, 16], f32>, !nnk.buffer<[B, 16], f32>, !nnk.buffer<[16], f32>, !nnk.buffer<[16], f32>, !nnk.buffer<[B, 16], f32>, !nnk.buffer<[B, 16], f32>
    // CPU: NNCC_KFN(nncc_softmax)((d_B), 16LL, (int64_t)1, in0, out0)
    // CUDA: softmax_axis_kernel<real_t><<<grid_for((d_B) * (int64_t)1, 256), 256, 0, stream>>>((d_B), 16LL, (int64_t)1, in0, out0);
    nnk.softmax ins(%x) outs(%y) {axis = 1 : i64} : !nnk.buffer<[B, 16], f32>, !nnk.buffer<[B, 16], f32>
    return
  }
}

// -----

module attributes {nn.dims = ["B"]} {
  // CPU-LABEL: // launches of @losses
  // CUDA-LABEL: // launches of @losses
  func.func @losses(%logits: !nnk.buffer<[B, 5], f32>, %cls: !nnk.buffer<[B], i32>,
                    %t: !nnk.buffer<[B, 5], f32>, %l: !nnk.buffer<[], f32> {nnk.output}) {
    // CPU: NNCC_KFN(nncc_mse_loss)((5LL * d_B), in0, in2, out0)
    // CUDA: launch_mse_loss<real_t>((5LL * d_B), in0, in2, out0, (nncc_scratch + (0)), stream)
    nnk.loss ins(%logits, %t) outs(%l) {kind = #nnk<loss mse>} : !nnk.buffer<[B, 5], f32>, !nnk.buffer<[B, 5], f32>, !nnk.buffer<[], f32>
    // i32 class targets: widened to int64 in a workspace on the CPU; read as
    // they are (range-checked) on CUDA.
    // CPU: int64_t *[[WIDE:wide[0-9]+]] = (int64_t *)nncc_ms_buffer_ptr(m, 0);
    // CPU: NNCC_KFN(nncc_cross_entropy)((d_B), 5LL, in0, [[WIDE]], -100, out0)
    // CUDA: launch_cross_entropy<real_t, int32_t>((d_B), 5LL, in0, in1, -100LL, out0, {{.*}}, st->flag, 1, stream)
    nnk.loss ins(%logits, %cls) outs(%l) {kind = #nnk<loss cross_entropy>} : !nnk.buffer<[B, 5], f32>, !nnk.buffer<[B], i32>, !nnk.buffer<[], f32>
    // CPU: NNCC_KFN(nncc_bce_with_logits)((d_B), 5LL, in0, in2, NULL, out0)
    // CUDA: launch_bce_with_logits<real_t>((d_B), 5LL, in0, in2, (const real_t *)NULL, out0, {{.*}}, stream)
    nnk.loss ins(%logits, %t) outs(%l) {kind = #nnk<loss bce_with_logits>} : !nnk.buffer<[B, 5], f32>, !nnk.buffer<[B, 5], f32>, !nnk.buffer<[], f32>
    return
  }
}

// -----

module attributes {nn.dims = ["B"]} {
  // CPU-LABEL: // launches of @dropout
  // CUDA-LABEL: // launches of @dropout
  func.func @dropout(%x: !nnk.buffer<[B, 8], f32>, %y: !nnk.buffer<[B, 8], f32> {nnk.output}) {
    // The CPU's mask moves with the training step; the seed is the op's.
    // CPU: NNCC_KFN(nncc_dropout)((8LL * d_B), 0.25, nncc_ms_rng_key(m, 11ULL), nncc_ms_rng_offset(m, (uint64_t)((8LL * d_B))), in0, out0, (uint8_t *)NULL)
    // CUDA: launch_dropout<real_t>((8LL * d_B), 0.25, nncc_ms_rng_key(m, 11ULL), nncc_ms_rng_offset(m, (uint64_t)((8LL * d_B))), in0, out0, (uint8_t *)NULL, stream)
    nnk.dropout ins(%x) outs(%y) {p = 0.25 : f64, seed = 11 : i64} : !nnk.buffer<[B, 8], f32>, !nnk.buffer<[B, 8], f32>
    return
  }
}
