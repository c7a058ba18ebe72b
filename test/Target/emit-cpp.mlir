// RUN: nncc compile %s --emit cpp | FileCheck %s
// RUN: nncc compile %S/Inputs/mlp.mlir --emit cpp | FileCheck %s --check-prefix=MLP

// The launch sequence of a small model: one call per nnk op, in order, with
// sizes from the bound dims and the planned arena buffers.
// MLP: static const nncc_tensor_info kInputs[] = {
// MLP-NEXT:   {"x", NNCC_REAL_DTYPE, 2, kInputsDims0},
// MLP: {NNCC_MS_INIT_ONES, 0, 0}, // ln.weight
// MLP: static const nncc_ms_buffer kBuffers[] = {
// MLP-NEXT:   {"t0", 2, kBufferDims0, sizeof(real_t), 3, 7},
// MLP: extern "C" NNCC_MODEL_EXPORT const nncc_model_abi *nncc_tiny_mlp_get_abi(void)
// MLP-LABEL: static nncc_status forward_cpu(nncc_model *m, nncc_error *err) {
// MLP: const int64_t d_N = dims[0];
// MLP: NNCC_KFN(nncc_linear)((d_N), 16LL, 8LL, in0, w0, w1, NULL, 3, 0.01, t0)
// MLP: NNCC_KFN(nncc_layer_norm)((d_N), 16LL, t0, NULL, w2, w3, {{.*}}, t1, NULL, NULL, NULL)
// MLP: NNCC_KFN(nncc_linear)((d_N), 4LL, 16LL, t1, w4, NULL, NULL, 0, 0.01, t2)
// The fused elementwise loop reads its buffers through local pointers (a
// pointer read through the step lambda's closure keeps it from vectorising).
// MLP: const real_t *const [[BIAS:ewIn1]] = w5;
// MLP-NEXT: real_t *const ewOut = t3;
// MLP-NEXT: #pragma omp parallel for simd
// MLP: const acc_t<real_t> a1 = load_acc([[BIAS]][(i % (int64_t)4)]);
// MLP: [[RELU:v[0-9]+]] = nncc_maximum(
// MLP-NEXT: ewOut[i] = store_acc<real_t>([[RELU]]);
// MLP: NNCC_KFN(nncc_softmax)((d_N), 4LL, (int64_t)1, t3, out0)
// MLP: NNCC_KFN(nncc_mse_loss)((4LL * d_N), out0, in1, out1)
// MLP: return NNCC_OK;

// Data movement, reductions and attention.
module attributes {nn.dims = ["B", "T"], nn.model = "moves"} {
  nn.parameter @attn.in_proj_weight : !nn.tensor<[96, 32], f32>
  // CHECK-LABEL: static nncc_status forward_cpu(nncc_model *m, nncc_error *err) {
  func.func @forward(%x: !nnk.buffer<[B, T, 32], f32> {nn.name = "x"},
                     %y: !nnk.buffer<[T, B, 32], f32> {nnk.output, nn.name = "y"},
                     %s: !nnk.buffer<[B], f32> {nnk.output, nn.name = "s"},
                     %a: !nnk.buffer<[B, T, 32], f32> {nnk.output, nn.name = "a"}) {
    // CHECK: nncc_ms_copy_nd(sizeof(real_t), 3, shape, out0, ds, in0, ss);
    nnk.transpose ins(%x) outs(%y) {perm = array<i64: 1, 0, 2>} : !nnk.buffer<[B, T, 32], f32>, !nnk.buffer<[T, B, 32], f32>
    // CHECK: NNCC_MS_REDUCE(3, shape, 6u, 1, in0, out1);
    nnk.reduce ins(%x) outs(%s) {kind = #nnk<reduce mean>, axes = array<i64: 1, 2>, keepdim = false} : !nnk.buffer<[B, T, 32], f32>, !nnk.buffer<[B], f32>
    %w = nnk.weight @attn.in_proj_weight : !nnk.buffer<[96, 32], f32>
    %qkv = nnk.alloc : !nnk.buffer<[B, T, 96], f32>
    nnk.gemm ins(%x, %w) outs(%qkv) : !nnk.buffer<[B, T, 32], f32>, !nnk.buffer<[96, 32], f32>, !nnk.buffer<[B, T, 96], f32>
    // CHECK: p.kind = NNCC_ATTN_DILATED; p.window = 4; p.dilation = 2;
    // CHECK: NNCC_KFN(nncc_attention)(&p, d_B, d_T, 4, (32LL / 4), t0, t0 + 32LL, t0 + 2 * 32LL, 96LL, out2, 32LL, NULL, nncc_ms_buffer_ptr(m, 1), NULL, NULL)
    nnk.banded_attention ins(%qkv) outs(%a) {num_heads = 4 : i64, window = 4 : i64, dilation = 2 : i64} : !nnk.buffer<[B, T, 96], f32>, !nnk.buffer<[B, T, 32], f32>
    return
  }
}
