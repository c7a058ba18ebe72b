// RUN: nncc-translate --nnk-to-cpp --split-input-file %s | FileCheck %s --check-prefix=CPU
// RUN: nncc-translate --nnk-to-cuda --split-input-file %s | FileCheck %s --check-prefix=CUDA

// The backward launches of the losses, layer norm, embeddings, slices and
// broadcasts: libnncc_kernels on the CPU, each family's <Family>Backward.cuh
// on CUDA (targets read as they are, i32 or i64; scratch from the device
// scratch).

module attributes {nn.dims = ["B"]} {
  // CPU-LABEL: // launches of @loss_grads
  // CUDA-LABEL: // launches of @loss_grads
  func.func @loss_grads(%p: !nnk.buffer<[B, 4], f32>, %t: !nnk.buffer<[B, 4], f32>,
                        %ids: !nnk.buffer<[B], i32>, %g: !nnk.buffer<[], f32>,
                        %dp: !nnk.buffer<[B, 4], f32> {nnk.output}) {
    // CPU: NNCC_KFN(nncc_mse_loss_backward)({{.*}}, in0, in1, in3, out0, NULL)
    // CUDA: launch_mse_loss_backward<real_t>((4LL * d_B), in0, in1, in3, out0, stream)
    nnk.loss_grad ins(%p, %t, %g) outs(%dp) {kind = #nnk<loss mse>} : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[B, 4], f32>, !nnk.buffer<[], f32>, !nnk.buffer<[B, 4], f32>
    // CPU: NNCC_KFN(nncc_cross_entropy_backward)({{.*}}, 4LL, in0, [[WIDE:wide[0-9]+]], -100, in3, out0)
    // CUDA: launch_cross_entropy_backward<real_t, int32_t>({{.*}}, 4LL, in0, in2, -100, in3, out0, (nncc_scratch + (0)), stream)
    nnk.loss_grad ins(%p, %ids, %g) outs(%dp) {kind = #nnk<loss cross_entropy>} : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[B], i32>, !nnk.buffer<[], f32>, !nnk.buffer<[B, 4], f32>
    // CPU: NNCC_KFN(nncc_bce_with_logits_backward)({{.*}}, 4LL, in0, in1, NULL, in3, out0)
    // CUDA: launch_bce_with_logits_backward<real_t>({{.*}}, 4LL, in0, in1, (const real_t *)NULL, in3, out0, stream)
    nnk.loss_grad ins(%p, %t, %g) outs(%dp) {kind = #nnk<loss bce_with_logits>} : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[B, 4], f32>, !nnk.buffer<[], f32>, !nnk.buffer<[B, 4], f32>
    return
  }
}

// -----

module attributes {nn.dims = ["B"]} {
  nn.parameter @g : !nn.tensor<[16], f32>
  // CPU-LABEL: // launches of @norm_grad
  // CUDA-LABEL: // launches of @norm_grad
  func.func @norm_grad(%x: !nnk.buffer<[B, 16], f32>, %dy: !nnk.buffer<[B, 16], f32>,
                       %dx: !nnk.buffer<[B, 16], f32> {nnk.output},
                       %dg: !nnk.buffer<[16], f32> {nnk.output}) {
    %g = nnk.weight @g : !nnk.buffer<[16], f32>
    // The rows' statistics go to the device scratch for the column pass.
    // CPU: NNCC_KFN(nncc_layer_norm_backward)((d_B), 16LL, in0, NULL, w0, NULL, NULL, 1.0000000000000001e-05, in1, NULL, out0, out1, NULL)
    // CUDA: launch_layer_norm_backward<real_t>((d_B), 16LL, in0, (const real_t *)NULL, w0, 1.0000000000000001e-05, in1, (const real_t *)NULL, out0, out1, (real_t *)NULL, (nncc_scratch + (0)), stream)
    nnk.layer_norm_grad ins(%x, %dy) weight(%g) outs(%dx) dweight(%dg) : !nnk.buffer<[B, 16], f32>, !nnk.buffer<[B, 16], f32>, !nnk.buffer<[16], f32>, !nnk.buffer<[B, 16], f32>, !nnk.buffer<[16], f32>
    return
  }
}

// -----

module attributes {nn.dims = ["B"]} {
  // CPU-LABEL: // launches of @data_grads
  // CUDA-LABEL: // launches of @data_grads
  func.func @data_grads(%ids: !nnk.buffer<[B, 3], i64>, %dy: !nnk.buffer<[B, 3, 8], f32>,
                        %dpos: !nnk.buffer<[3, 8], f32>, %dmean: !nnk.buffer<[B, 8], f32>,
                        %dt: !nnk.buffer<[10, 8], f32> {nnk.output},
                        %dp: !nnk.buffer<[5, 8], f32> {nnk.output},
                        %db: !nnk.buffer<[8], f32> {nnk.output},
                        %dx: !nnk.buffer<[B, 3, 8], f32> {nnk.output}) {
    // Scatter-add in index order per column (no atomics), the table zeroed first;
    // on CUDA the positions are radix-sorted by id in a planned device scratch.
    // CPU: NNCC_KFN(nncc_embedding_backward)({{.*}}, 10LL, 8LL, in0, in1, -1, out0)
    // CUDA: launch_embedding_backward<real_t, int64_t>({{.*}}, 10LL, 8LL, in0, in1, -1, out0, (nncc_scratch + (0)), stream)
    nnk.embedding_grad ins(%ids, %dy) outs(%dt) : !nnk.buffer<[B, 3], i64>, !nnk.buffer<[B, 3, 8], f32>, !nnk.buffer<[10, 8], f32>
    // The rows of a position table a slice read: zeros, then the slice's rows.
    // CPU: memset(out1, 0, (int64_t)40 * sizeof(real_t));
    // CUDA: cudaMemsetAsync(out1, 0, (int64_t)40 * sizeof(real_t), stream)
    // CUDA: launch_copy_nd<real_t>(c, out1 + (0 + 0 * (int64_t)8 + 0 * (int64_t)1), in2, stream)
    nnk.slice_grad ins(%dpos) outs(%dp) {squeeze = array<i64>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : !nnk.buffer<[3, 8], f32>, !nnk.buffer<[5, 8], f32>
    // A bias gradient: the leading dims summed (nnk.reduce's kernel).
    // CPU: NNCC_MS_REDUCE(3, shape, 3u, 0, in1, out2);
    // CUDA: r.mask = 3u;
    // CUDA: launch_reduce<real_t>(r, 0, in1, out2, (nncc_scratch + (0)), stream)
    nnk.reduce_to_shape ins(%dy) outs(%db) : !nnk.buffer<[B, 3, 8], f32>, !nnk.buffer<[8], f32>
    // The adjoint of a mean over axis 1.
    // CPU: nncc::grad::broadcast_axes<real_t>(3, shape, 2u, 1, in3, out3);
    // CUDA: r.rank = 3;
    // CUDA-NEXT: r.mask = 2u;
    // CUDA: launch_broadcast_axes<real_t>(r, 1, in3, out3, stream)
    nnk.broadcast_axes ins(%dmean) outs(%dx) {axes = array<i64: 1>, mean = true} : !nnk.buffer<[B, 8], f32>, !nnk.buffer<[B, 3, 8], f32>
    return
  }
}
