// RUN: nncc-translate --nnk-to-cpp --split-input-file %s | FileCheck %s --check-prefix=CPU
// RUN: nncc-translate --nnk-to-cuda --split-input-file %s | FileCheck %s --check-prefix=CUDA

// Token ops (TokenLaunch.cpp): the embedding lookup.

module attributes {nn.dims = ["B", "T"]} {
  nn.parameter @table : !nn.tensor<[10, 8], f32>
  // CPU-LABEL: // launches of @embedding
  // CUDA-LABEL: // launches of @embedding
  func.func @embedding(%ids: !nnk.buffer<[B, T], i32>, %y: !nnk.buffer<[B, T, 8], f32> {nnk.output}) {
    %w = nnk.weight @table : !nnk.buffer<[10, 8], f32>
    // i32 ids on the CPU take the _i32 entry; CUDA checks the range on the
    // device (index-check code 1).
    // CPU: NNCC_KFN(nncc_embedding_i32)((d_B * d_T), 10LL, 8LL, in0, w0, out0)
    // CUDA: launch_embedding<real_t, int32_t>((d_B * d_T), 10LL, 8LL, in0, w0, out0, st->flag, 1, stream)
    nnk.embedding ins(%ids, %w) outs(%y) : !nnk.buffer<[B, T], i32>, !nnk.buffer<[10, 8], f32>, !nnk.buffer<[B, T, 8], f32>
    return
  }
}
