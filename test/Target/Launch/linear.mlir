// RUN: nncc-translate --nnk-to-cpp --split-input-file %s | FileCheck %s --check-prefix=CPU
// RUN: nncc-translate --nnk-to-cuda --split-input-file --verify-diagnostics %s | FileCheck %s --check-prefix=CUDA

// The GEMM family: libnncc_kernels' nncc_linear / nncc_gemm on the CPU,
// cuBLAS (+ the epilogue kernel when there is one) on CUDA, the weight
// gradient too (dW^T = x^T dy, column-major). A gemm whose epilogue
// cuBLASLt has is one cublasLtMatmul (lt_gemm of LtGemm.cuh) unless gemm_lt is
// off (NNCC_CUDA_GEMM=cublas, fp64): then the cuBLAS path beside it.

module attributes {nn.dims = ["B"]} {
  nn.parameter @w : !nn.tensor<[64, 32], f32>
  nn.parameter @b : !nn.tensor<[64], f32>
  // CPU-LABEL: // launches of @gemm
  // CUDA-LABEL: // launches of @gemm
  func.func @gemm(%x: !nnk.buffer<[B, 32], f32>, %r: !nnk.buffer<[B, 64], f32>,
                  %y: !nnk.buffer<[B, 64], f32> {nnk.output}) {
    %w = nnk.weight @w : !nnk.buffer<[64, 32], f32>
    %b = nnk.weight @b : !nnk.buffer<[64], f32>
    // CPU: NNCC_GEN_CHECK(NNCC_KFN(nncc_linear)((d_B), 64LL, 32LL, in0, w0, w1, in1, 3, 0.01, out0)
    // The erf GELU is not cuBLASLt's GELU: cuBLAS + the epilogue kernel.
    // CUDA-NOT: gemm_lt
    // CUDA: NNCC_CUBLAS_CHECK(NNCC_CUBLAS_GEMM(blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)64LL, (int)(d_B), (int)32LL, &one, w0, (int)32LL, in0, (int)32LL, &zero, out0, (int)64LL)
    // CUDA-NEXT: NNCC_CUDA_CHECK((nncc::kernels::cuda::launch_linear_epilogue<real_t>((d_B), 64LL, out0, w1, 3, (acc_t<real_t>)0.01, in1, stream))
    nnk.gemm ins(%x, %w) bias(%b) residual(%r) outs(%y) {activation = #nnk<act gelu>} : !nnk.buffer<[B, 32], f32>, !nnk.buffer<[64, 32], f32>, !nnk.buffer<[64], f32>, !nnk.buffer<[B, 64], f32>, !nnk.buffer<[B, 64], f32>
    // A plain GEMM needs no epilogue.
    // CPU: NNCC_KFN(nncc_linear)((d_B), 64LL, 32LL, in0, w0, NULL, NULL, 2, 0.29999999999999999, out0)
    // CUDA: NNCC_CUBLAS_GEMM(blas
    // CUDA-NEXT: launch_linear_epilogue<real_t>({{.*}}, NULL, 2, (acc_t<real_t>)0.29999999999999999, NULL, stream)
    nnk.gemm ins(%x, %w) outs(%y) {activation = #nnk<act leaky_relu>, alpha = 0.3 : f64} : !nnk.buffer<[B, 32], f32>, !nnk.buffer<[64, 32], f32>, !nnk.buffer<[B, 64], f32>
    // CUDA-NOT: gemm_lt
    // CUDA: NNCC_CUBLAS_GEMM(blas
    // CUDA-NOT: launch_linear_epilogue
    nnk.gemm ins(%x, %w) outs(%y) : !nnk.buffer<[B, 32], f32>, !nnk.buffer<[64, 32], f32>, !nnk.buffer<[B, 64], f32>
    // Fused: relu after the bias.
    // CUDA: if (gemm_lt) {
    // CUDA-NEXT: NNCC_CUBLASLT_CHECK(lt_gemm<real_t>(&st->lt, [[#PLAN:]], CUBLASLT_EPILOGUE_RELU_BIAS, (d_B), 64LL, 32LL, w0, in0, w1, (const real_t *)NULL, out0, stream), "launch
    // CUDA-NEXT: } else {
    // CUDA-NEXT: NNCC_CUBLAS_CHECK(NNCC_CUBLAS_GEMM(blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)64LL, (int)(d_B), (int)32LL, &one, w0, (int)32LL, in0, (int)32LL, &zero, out0, (int)64LL)
    // CUDA-NEXT: launch_linear_epilogue<real_t>((d_B), 64LL, out0, w1, 1, (acc_t<real_t>)0.01, NULL, stream)
    // CUDA-NEXT: }
    nnk.gemm ins(%x, %w) bias(%b) outs(%y) {activation = #nnk<act relu>} : !nnk.buffer<[B, 32], f32>, !nnk.buffer<[64, 32], f32>, !nnk.buffer<[64], f32>, !nnk.buffer<[B, 64], f32>
    // Fused: the residual is C (beta = 1), the bias the epilogue's; the next site has the next plan.
    // CUDA: if (gemm_lt) {
    // CUDA-NEXT: lt_gemm<real_t>(&st->lt, [[#PLAN+1]], CUBLASLT_EPILOGUE_BIAS, (d_B), 64LL, 32LL, w0, in0, w1, in1, out0, stream)
    nnk.gemm ins(%x, %w) bias(%b) residual(%r) outs(%y) : !nnk.buffer<[B, 32], f32>, !nnk.buffer<[64, 32], f32>, !nnk.buffer<[64], f32>, !nnk.buffer<[B, 64], f32>, !nnk.buffer<[B, 64], f32>
    // Fused: the tanh GELU (cuBLASLt's) without a bias.
    // CUDA: lt_gemm<real_t>(&st->lt, {{[0-9]+}}, CUBLASLT_EPILOGUE_GELU, (d_B), 64LL, 32LL, w0, in0, (const real_t *)NULL, (const real_t *)NULL, out0, stream)
    nnk.gemm ins(%x, %w) outs(%y) {activation = #nnk<act gelu_tanh>} : !nnk.buffer<[B, 32], f32>, !nnk.buffer<[64, 32], f32>, !nnk.buffer<[B, 64], f32>
    // Not fused: the residual after an activation (cuBLASLt adds C before it).
    // CUDA: // launch {{[0-9]+}}: nnk.gemm
    // CUDA-NEXT: NNCC_CUBLAS_CHECK(NNCC_CUBLAS_GEMM(blas
    // CUDA-NEXT: launch_linear_epilogue<real_t>((d_B), 64LL, out0, w1, 1, (acc_t<real_t>)0.01, in1, stream)
    nnk.gemm ins(%x, %w) bias(%b) residual(%r) outs(%y) {activation = #nnk<act relu>} : !nnk.buffer<[B, 32], f32>, !nnk.buffer<[64, 32], f32>, !nnk.buffer<[64], f32>, !nnk.buffer<[B, 64], f32>, !nnk.buffer<[B, 64], f32>
    return
  }
}

// -----

module {
  // CPU-LABEL: // launches of @matmul
  // CUDA-LABEL: // launches of @matmul
  func.func @matmul(%a: !nnk.buffer<[4, 8, 16], f32>, %c: !nnk.buffer<[16, 2], f32>,
                    %d: !nnk.buffer<[4, 8, 2], f32> {nnk.output}) {
    // A batch of [8, 16] x [16, 2]; the right operand is shared (stride 0):
    // on the CPU the batch folds into M, one GEMM of 4 * 8 rows.
    // CPU-NOT: for (int64_t bi
    // CPU: NNCC_KFN(nncc_gemm)(0, 0, ((int64_t)4) * 8LL, 2LL, 16LL, (real_t)1, in0, 16LL, in1, 2LL, (real_t)0, out0, 2LL)
    // CUDA: NNCC_CUBLAS_GEMM_BATCHED(blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)2LL, (int)8LL, (int)16LL, &one, in1, (int)2LL, (long long)0, in0, (int)16LL, (long long)8LL * 16LL, &zero, out0, (int)2LL, (long long)8LL * 2LL, (int)(int64_t)4)
    nnk.matmul ins(%a, %c) outs(%d) : !nnk.buffer<[4, 8, 16], f32>, !nnk.buffer<[16, 2], f32>, !nnk.buffer<[4, 8, 2], f32>
    return
  }
}

// -----

module {
  // CPU-LABEL: // launches of @matmul_batched
  // CUDA-LABEL: // launches of @matmul_batched
  func.func @matmul_batched(%a: !nnk.buffer<[4, 8, 16], f32>, %c: !nnk.buffer<[4, 16, 2], f32>,
                            %d: !nnk.buffer<[4, 8, 2], f32> {nnk.output}) {
    // Both operands batched: one GEMM per batch element.
    // CPU: for (int64_t bi = 0; bi < (int64_t)4; ++bi)
    // CPU-NEXT: NNCC_KFN(nncc_gemm)(0, 0, 8LL, 2LL, 16LL, (real_t)1, in0 + bi * 8LL * 16LL, 16LL, in1 + bi * 16LL * 2LL, 2LL, (real_t)0, out0 + bi * 8LL * 2LL, 2LL)
    // CUDA: NNCC_CUBLAS_GEMM_BATCHED(blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)2LL, (int)8LL, (int)16LL, &one, in1, (int)2LL, (long long)16LL * 2LL, in0, (int)16LL, (long long)8LL * 16LL, &zero, out0, (int)2LL, (long long)8LL * 2LL, (int)(int64_t)4)
    nnk.matmul ins(%a, %c) outs(%d) : !nnk.buffer<[4, 8, 16], f32>, !nnk.buffer<[4, 16, 2], f32>, !nnk.buffer<[4, 8, 2], f32>
    return
  }
}

// -----

module {
  // CPU-LABEL: // launches of @weight_grad
  // CUDA-LABEL: // launches of @weight_grad
  func.func @weight_grad(%dy: !nnk.buffer<[6, 4], f32>, %x: !nnk.buffer<[6, 3], f32>,
                         %dw: !nnk.buffer<[4, 3], f32> {nnk.output}) {
    // dW = dy^T x.
    // CPU: NNCC_KFN(nncc_gemm)(1, 0, 4LL, 3LL, (int64_t)6, (real_t)1, in0, 4LL, in1, 3LL, (real_t)0, out0, 3LL)
    // CUDA: NNCC_CUBLAS_GEMM(blas, CUBLAS_OP_N, CUBLAS_OP_T, (int)3LL, (int)4LL, (int)(int64_t)6, &one, in1, (int)3LL, in0, (int)4LL, &zero, out0, (int)3LL)
    nnk.linear_weight_grad ins(%dy, %x) outs(%dw) : !nnk.buffer<[6, 4], f32>, !nnk.buffer<[6, 3], f32>, !nnk.buffer<[4, 3], f32>
    return
  }
}
