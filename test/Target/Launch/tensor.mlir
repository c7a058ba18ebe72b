// RUN: nncc-translate --nnk-to-cpp --split-input-file %s | FileCheck %s --check-prefix=CPU
// RUN: nncc-translate --nnk-to-cuda --split-input-file %s | FileCheck %s --check-prefix=CUDA

// Data movement and reductions: the index math is computed once
// (TensorLaunch.cpp); strided copies run as nncc_ms_copy_nd on the CPU and
// launch_copy_nd on CUDA.

module attributes {nn.dims = ["B"]} {
  // CPU-LABEL: // launches of @fill_copy
  // CUDA-LABEL: // launches of @fill_copy
  func.func @fill_copy(%x: !nnk.buffer<[B, 4], f32>, %y: !nnk.buffer<[B, 4], f32> {nnk.output}) {
    // CPU: for (int64_t i = 0; i < (4LL * d_B); ++i) out0[i] = (real_t)0.5;
    // CUDA: fill_kernel<real_t><<<grid_for((4LL * d_B), 256), 256, 0, stream>>>((4LL * d_B), nncc_gen_real(0.5), out0);
    nnk.fill outs(%y) {value = 0.5 : f64} : !nnk.buffer<[B, 4], f32>
    // CPU: memcpy(out0, in0, (4LL * d_B) * sizeof(*out0));
    // CUDA: cudaMemcpyAsync(out0, in0, (4LL * d_B) * sizeof(*out0), cudaMemcpyDeviceToDevice, stream)
    nnk.copy ins(%x) outs(%y) : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[B, 4], f32>
    return
  }
}

// -----

module {
  // CPU-LABEL: // launches of @moves
  // CUDA-LABEL: // launches of @moves
  func.func @moves(%x: !nnk.buffer<[2, 3, 4], f32>, %t: !nnk.buffer<[3, 2, 4], f32> {nnk.output},
                   %s: !nnk.buffer<[2, 2], f32> {nnk.output}, %c: !nnk.buffer<[2, 6, 4], f32> {nnk.output}) {
    // Transpose: shape of the result, source strides permuted.
    // CPU: const int64_t shape[] = {3LL, 2LL, 4LL}, ds[] = {(int64_t)8, (int64_t)4, (int64_t)1}, ss[] = {(int64_t)4, (int64_t)12, (int64_t)1};
    // CPU-NEXT: nncc_ms_copy_nd(sizeof(real_t), 3, shape, out0, ds, in0, ss);
    // CUDA: c.rank = 3;
    // CUDA-NEXT: c.shape[0] = 3LL; c.dst_stride[0] = (int64_t)8; c.src_stride[0] = (int64_t)4;
    // CUDA-NEXT: c.shape[1] = 2LL; c.dst_stride[1] = (int64_t)4; c.src_stride[1] = (int64_t)12;
    // CUDA: launch_copy_nd<real_t>(c, out0, in0, stream)
    nnk.transpose ins(%x) outs(%t) {perm = array<i64: 1, 0, 2>} : !nnk.buffer<[2, 3, 4], f32>, !nnk.buffer<[3, 2, 4], f32>
    // x[:, 1, ::2]: start 1 on dim 1 (squeezed), step 2 on dim 2.
    // CPU: const int64_t shape[] = {2LL, 2LL}, ds[] = {(int64_t)2, (int64_t)1}, ss[] = {1 * (int64_t)12, 2 * (int64_t)1};
    // CPU-NEXT: nncc_ms_copy_nd(sizeof(real_t), 2, shape, out1, ds, in0 + (0 + 0 * (int64_t)12 + 1 * (int64_t)4 + 0 * (int64_t)1), ss);
    // CUDA: c.shape[1] = 2LL; c.dst_stride[1] = (int64_t)1; c.src_stride[1] = 2 * (int64_t)1;
    // CUDA: launch_copy_nd<real_t>(c, out1, in0 + (0 + 0 * (int64_t)12 + 1 * (int64_t)4 + 0 * (int64_t)1), stream)
    nnk.slice ins(%x) outs(%s) {starts = array<i64: 0, 1, 0>, steps = array<i64: 1, 1, 2>, squeeze = array<i64: 1>} : !nnk.buffer<[2, 3, 4], f32>, !nnk.buffer<[2, 2], f32>
    // Concat along dim 1: the second piece starts at offset 3.
    // CPU: nncc_ms_copy_nd(sizeof(real_t), 3, shape, out2 + (0) * (int64_t)4, ds, in0, ss);
    // CPU: nncc_ms_copy_nd(sizeof(real_t), 3, shape, out2 + (0 + 3LL) * (int64_t)4, ds, in0, ss);
    // CUDA: launch_copy_nd<real_t>(c, out2 + (0) * (int64_t)4, in0, stream)
    // CUDA: launch_copy_nd<real_t>(c, out2 + (0 + 3LL) * (int64_t)4, in0, stream)
    nnk.concat ins(%x, %x) outs(%c) {axis = 1 : i64} : !nnk.buffer<[2, 3, 4], f32>, !nnk.buffer<[2, 3, 4], f32>, !nnk.buffer<[2, 6, 4], f32>
    return
  }
}

// -----

module {
  // CPU-LABEL: // launches of @reduce
  // CUDA-LABEL: // launches of @reduce
  func.func @reduce(%x: !nnk.buffer<[2, 3, 4], f32>, %s: !nnk.buffer<[2], f32> {nnk.output}) {
    // Mean over dims 1 and 2: mask 0b110.
    // CPU: const int64_t shape[] = {2LL, 3LL, 4LL};
    // CPU-NEXT: NNCC_MS_REDUCE(3, shape, 6u, 1, in0, out0);
    // CUDA: r.mask = 6u;
    // CUDA: launch_reduce<real_t>(r, 1, in0, out0, (nncc_scratch + (0)), stream)
    nnk.reduce ins(%x) outs(%s) {kind = #nnk<reduce mean>, axes = array<i64: 1, 2>, keepdim = false} : !nnk.buffer<[2, 3, 4], f32>, !nnk.buffer<[2], f32>
    return
  }
}
