//===- CudaEmitter.cpp - nnk -> CUDA C++ ----------------------------------===//
//
// Prints <model>.cu: one generated __global__ kernel per nnk.elementwise,
// cuBLAS for nnk.gemm / nnk.matmul (+ the epilogue kernel of
// Elementwise.cuh, or the gemm as one cuBLASLt matmul with its epilogue
// fused: lt_gemm of LtGemm.cuh), the .cuh kernels of
// runtime/include/nncc/Kernels/CUDA for every other op (layer norm,
// attention cores, the persistent recurrent scan, data movement, losses, the
// ODE host drivers of ODE.cuh; CudaOdeLoops.cpp), and
// `nncc_<model>_forward_cuda`, the launch sequence on the context's stream.
// Buffers are the same arena slots as the CPU plan (device memory); kernel
// scratch (recurrent W_hh^T, LSH buffers, loss partials, ODE temporaries) is
// one device buffer of the CUDA state, sized at the start of each forward
// from the bound dims (the max over launches). Every CUDA / cuBLAS(Lt) call is
// checked and turned into an nncc_status naming the launch. docs/cuda.md.
//
//===----------------------------------------------------------------------===//
#include "nncc/Target/Emitters.h"

#include "CudaEmitter.h"

using namespace mlir;

namespace nncc::target {

void CudaEmitter::emitPrecision(raw_indented_ostream &os) {
  os << R"(// real_t is the storage type of every float buffer; kernels compute in
// acc_t<real_t> (float for bf16). bf16 GEMMs run on cuBLAS's fp32
// accumulation (CUBLAS_COMPUTE_32F) with float alpha / beta.
#if defined(NNCC_PRECISION_F64)
typedef double real_t;
#define NNCC_CUBLAS_GEMM cublasDgemm
#define NNCC_CUBLAS_GEMM_BATCHED cublasDgemmStridedBatched
#elif defined(NNCC_PRECISION_BF16)
typedef nncc::kernels::bf16_t real_t;
#define NNCC_CUBLAS_GEMM nncc_gen_gemm_bf16
#define NNCC_CUBLAS_GEMM_BATCHED nncc_gen_gemm_batched_bf16
static cublasStatus_t nncc_gen_gemm_bf16(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const real_t *a, int lda,
                                         const real_t *b, int ldb, const float *beta,
                                         real_t *c, int ldc) {
  return cublasGemmEx(h, ta, tb, m, n, k, alpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, beta,
                      c, CUDA_R_16BF, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
static cublasStatus_t nncc_gen_gemm_batched_bf16(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const float *alpha, const real_t *a, int lda, long long sa, const real_t *b, int ldb,
    long long sb, const float *beta, real_t *c, int ldc, long long sc, int batch) {
  return cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, alpha, a, CUDA_R_16BF, lda, sa, b,
                                    CUDA_R_16BF, ldb, sb, beta, c, CUDA_R_16BF, ldc, sc, batch,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
#else
typedef float real_t;
#define NNCC_CUBLAS_GEMM cublasSgemm
#define NNCC_CUBLAS_GEMM_BATCHED cublasSgemmStridedBatched
#endif
using nncc::kernels::acc_t;
using nncc::kernels::load_acc;
using nncc::kernels::store_acc;
// A float constant as real_t (rounded once, on the host).
[[maybe_unused]] static inline real_t nncc_gen_real(double v) {
  return store_acc<real_t>((acc_t<real_t>)v);
}

)";
}

LogicalResult CudaEmitter::emitSequence(raw_indented_ostream &f, StringRef fnName,
                                        func::FuncOp fn, ArrayRef<Operation *> ops) {
  // The launches first: they decide the scratch and the index checks.
  std::string body;
  std::vector<std::string> scratchNeeds;
  size_t checksBefore = indexChecks.size();
  const int ltPlansBefore = numLtPlans;
  {
    llvm::raw_string_ostream bs(body);
    raw_indented_ostream b(bs);
    b.indent();
    if (failed(emitLaunchSequence(b, ops, [&] {
          if (scratchCur != "0")
            scratchNeeds.push_back(scratchCur);
        })))
      return failure();
  }
  f << "extern \"C\" nncc_status nncc_" << modelName << "_" << fnName
    << "(nncc_model *m, nncc_error *err) {\n";
  f.indent();
  f << "cudaStream_t stream = (cudaStream_t)nncc_ms_cuda_stream(m);\n";
  f << "NNCCCudaState *st = (NNCCCudaState *)nncc_ms_cuda_state(m);\n";
  f << "if (!st)\n"
       "  return nncc_error_set(err, NNCC_ERROR_INTERNAL, \"CUDA state missing (cuda_setup not run)\");\n";
  f << "cublasHandle_t blas = st->blas; (void)blas;\n";
  f << "NNCC_CUBLAS_CHECK(cublasSetStream(blas, stream), \"cublasSetStream\");\n";
  f << "const acc_t<real_t> one = 1, zero = 0; (void)one; (void)zero;\n";
  auto runsRecurrentKernel = [](Operation *top) {
    return top
        ->walk([](Operation *o) {
          return isa<nnk::RecurrentScanOp, nnk::RecurrentCellOp, nnk::RecurrentForwardOp,
                     nnk::RecurrentGradOp>(o)
                     ? WalkResult::interrupt()
                     : WalkResult::advance();
        })
        .wasInterrupted();
  };
  if (llvm::any_of(ops, runsRecurrentKernel))
    f << "// The recurrent kernel (NNCC_CUDA_RNN), checked before any launch.\n"
         "if (nncc::kernels::cuda::rnn_kernel_choice() == nncc::kernels::cuda::RnnKernelBad)\n"
         "  return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, \"NNCC_CUDA_RNN=%s: expected \"\n"
         "                        \"auto, scan or grid\", getenv(\"NNCC_CUDA_RNN\"));\n";
  if (numLtPlans > ltPlansBefore)
    f << "// The fused GEMMs: cuBLASLt, or cuBLAS + the epilogue kernel (NNCC_CUDA_GEMM).\n"
         "const int gemm_lt = lt_gemm_choice<real_t>();\n"
         "if (gemm_lt < 0)\n"
         "  return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, \"NNCC_CUDA_GEMM=%s: expected \"\n"
         "                        \"lt or cublas\", getenv(\"NNCC_CUDA_GEMM\"));\n";
  if (failed(emitForwardPrologue(f, fn)))
    return failure();
  if (!scratchNeeds.empty()) {
    f << "// Kernel scratch: the most any single launch needs for these dims.\n";
    f << "uint64_t scratch_bytes = 0;\n";
    for (const std::string &need : scratchNeeds)
      f << "scratch_bytes = std::max<uint64_t>(scratch_bytes, (uint64_t)(" << need << "));\n";
    f << "NNCC_CUDA_CHECK(nncc::ms::cuda_ensure_scratch(st, scratch_bytes, stream), "
         "\"allocating the CUDA kernel scratch\");\n";
    f << "char *nncc_scratch = (char *)st->scratch;\n";
  }
  f << "NNCC_CUDA_CHECK(cudaMemsetAsync(st->flag, 0, sizeof(int), stream), "
       "\"clearing the index-check flag\");\n";
  f.unindent();
  f << body;
  f.indent();
  if (indexChecks.size() > checksBefore) {
    f << "// Index checks of the launches above (embedding, cross-entropy targets).\n";
    f << "int flag = 0;\n";
    f << "NNCC_CUDA_CHECK(cudaMemcpyAsync(&flag, st->flag, sizeof(int), "
         "cudaMemcpyDeviceToHost, stream), \"reading the index-check flag\");\n";
    f << "NNCC_CUDA_CHECK(cudaStreamSynchronize(stream), \"synchronizing the stream\");\n";
    f << "switch (flag) {\n";
    for (size_t i = checksBefore; i < indexChecks.size(); ++i)
      f << "case " << indexChecks[i].first
        << ":\n  return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "
        << "\"%s: an index input is out of range\", " << cString(indexChecks[i].second)
        << ");\n";
    f << "default:\n  break;\n}\n";
  }
  f << "return NNCC_OK;\n";
  f.unindent();
  f << "}\n";
  return success();
}

LogicalResult CudaEmitter::emitTraining(raw_indented_ostream &f) {
  // Emitted as a unit: the first launch without a CUDA kernel makes the
  // whole training path unavailable (the reason goes into the library, the
  // kernels it had generated are dropped), the forward stays.
  std::string text, kernelsBefore = generatedKernels;
  int kernelsCount = numKernels, ltPlansCount = numLtPlans;
  size_t checksBefore = indexChecks.size();
  std::string why, whyMessage;
  std::optional<Location> whyLoc;
  LogicalResult ok = success();
  {
    ScopedDiagnosticHandler capture(module.getContext(), [&](Diagnostic &d) {
      if (why.empty() && d.getSeverity() == DiagnosticSeverity::Error) {
        std::string loc = locString(d.getLocation());
        why = (loc.empty() ? "" : loc + ": ") + d.str();
        whyLoc = d.getLocation();
        whyMessage = d.str();
      }
      return success();
    });
    llvm::raw_string_ostream ts(text);
    raw_indented_ostream t(ts);
    auto [fwd, bwd] = trainHalves();
    ok = success(succeeded(emitSequence(t, "forward_train_cuda", train, fwd)) &&
                 succeeded(emitSequence(t, "backward_cuda", train, bwd)));
  }
  // bf16 has no CPU path to train on instead: the reason is the error.
  if (failed(ok) && isBf16() && whyLoc) {
    mlir::emitError(*whyLoc) << whyMessage;
    return failure();
  }
  f << "// CUDA training: forward_train and backward (the CPU pair's split), the\n"
       "// global gradient norm and the optimizer update over every parameter.\n";
  if (failed(ok)) {
    generatedKernels = kernelsBefore;
    numKernels = kernelsCount;
    numLtPlans = ltPlansCount;
    indexChecks.resize(checksBefore);
    f << "extern \"C\" const char *nncc_" << modelName << "_cuda_train_unsupported(void) {\n"
      << "  return " << cString(why.empty() ? "a launch has no CUDA kernel" : why) << ";\n}\n";
    f << "extern \"C\" nncc_status nncc_" << modelName
      << "_forward_train_cuda(nncc_model *m, nncc_error *err) {\n  (void)m;\n"
      << "  return nncc_error_set(err, NNCC_ERROR_UNSUPPORTED, \"%s\", nncc_" << modelName
      << "_cuda_train_unsupported());\n}\n";
    f << "extern \"C\" nncc_status nncc_" << modelName
      << "_backward_cuda(nncc_model *m, nncc_error *err) {\n"
      << "  return nncc_" << modelName << "_forward_train_cuda(m, err);\n}\n";
  } else {
    f << "extern \"C\" const char *nncc_" << modelName
      << "_cuda_train_unsupported(void) {\n  return NULL;\n}\n";
    f << text;
  }
  emitOptimizer(f);
  return success();
}

void CudaEmitter::emitOptimizer(raw_indented_ostream &f) {
  // The optimizer: parameters have static shapes.
  f << "static const int64_t kParamNumel[] = {";
  for (size_t i = 0; i < params.size(); ++i) {
    int64_t n = 1;
    for (auto d : params[i].type.getDims())
      n *= d.getSize();
    f << (i ? ", " : "") << n;
  }
  f << (params.empty() ? "0" : "") << "};\n";
  // Both optimizer entries see the parameters as Optim.cuh's multi-tensor
  // tables: a few launches for all of them instead of one or two per tensor.
  // Frozen parameters (set_frozen, ABI 10; nncc_ms_frozen) are left out of
  // the tables: not in the norm, not updated, their state untouched.
  const size_t numParams = params.size(), arrayLen = std::max<size_t>(numParams, 1);
  emitGradSumSquares(f, numParams, arrayLen);
  emitOptimizerUpdate(f, numParams, arrayLen);
  emitGradMean(f, numParams, arrayLen);
}

void CudaEmitter::emitGradSumSquares(raw_indented_ostream &f, size_t numParams,
                                     size_t arrayLen) {
  f << "extern \"C\" nncc_status nncc_" << modelName
    << "_grad_sum_squares_cuda(nncc_model *m, double *out, nncc_error *err) {\n";
  f.indent();
  f << "cudaStream_t stream = (cudaStream_t)nncc_ms_cuda_stream(m);\n"
       "NNCCCudaState *st = (NNCCCudaState *)nncc_ms_cuda_state(m);\n"
       "const int32_t *frozen = nncc_ms_frozen(m);\n"
       "const real_t *grads[" << arrayLen << "];\n"
       "int64_t numel[" << arrayLen << "];\n"
       "int32_t n = 0;\n"
       "for (int32_t i = 0; i < " << numParams << "; ++i) {\n"
       "  if (frozen && frozen[i])\n"
       "    continue;\n"
       "  grads[n] = (const real_t *)nncc_ms_grad(m, i);\n"
       "  numel[n++] = kParamNumel[i];\n"
       "}\n"
       "OptimTensors<real_t> ts;\n"
       "ts.count = n, ts.n = numel, ts.g = grads;\n"
       "// One partial per chunk of every gradient, then one ordered sum.\n"
       "const uint64_t bytes = sum_squares_scratch_bytes(n, numel);\n"
       "NNCC_CUDA_CHECK(nncc::ms::cuda_ensure_scratch(st, bytes, stream), \"allocating the norm scratch\");\n"
       "double *partials = (double *)st->scratch;\n"
       "double *total = partials + (bytes / sizeof(double) - 1);\n"
       "NNCC_CUDA_CHECK(launch_sum_squares<real_t>(ts, partials, total, stream), "
       "\"the gradient norm\");\n"
       "NNCC_CUDA_CHECK(cudaMemcpyAsync(out, total, sizeof(double), cudaMemcpyDeviceToHost, stream), "
       "\"reading the gradient norm\");\n"
       "NNCC_CUDA_CHECK(cudaStreamSynchronize(stream), \"synchronizing the stream\");\n"
       "return NNCC_OK;\n";
  f.unindent();
  f << "}\n";
}

void CudaEmitter::emitOptimizerUpdate(raw_indented_ostream &f, size_t numParams,
                                      size_t arrayLen) {
  f << "extern \"C\" nncc_status nncc_" << modelName
    << "_update_cuda(nncc_model *m, const nncc_ms_cuda_update *u, nncc_error *err) {\n";
  f.indent();
  f << "cudaStream_t stream = (cudaStream_t)nncc_ms_cuda_stream(m);\n"
       "const int32_t *frozen = nncc_ms_frozen(m);\n"
       "real_t *p[" << arrayLen << "];\n"
       "const real_t *g[" << arrayLen << "];\n"
       "// The optimizer state (and bf16's master copies) in acc_t<real_t>.\n"
       "acc_t<real_t> *s1[" << arrayLen << "], *s2[" << arrayLen << "], *w[" << arrayLen << "];\n"
       "int64_t numel[" << arrayLen << "];\n"
       "double lr[" << arrayLen << "], wd[" << arrayLen << "];\n"
       "int32_t n = 0;\n"
       "for (int32_t i = 0; i < " << numParams << "; ++i) {\n"
       "  if (frozen && frozen[i])\n"
       "    continue;\n"
       "  p[n] = (real_t *)nncc_ms_param(m, i);\n"
       "  g[n] = (const real_t *)nncc_ms_grad(m, i);\n"
       "  s1[n] = u->state1 ? (acc_t<real_t> *)u->state1[i] : NULL;\n"
       "  s2[n] = u->state2 ? (acc_t<real_t> *)u->state2[i] : NULL;\n"
       "  w[n] = u->master ? (acc_t<real_t> *)u->master[i] : NULL;\n"
       "  numel[n] = kParamNumel[i];\n"
       "  lr[n] = u->lr[i], wd[n] = u->weight_decay[i];\n"
       "  ++n;\n"
       "}\n"
       "OptimTensors<real_t> ts;\n"
       "ts.count = n, ts.n = numel, ts.p = p, ts.g = g, ts.s1 = s1, ts.s2 = s2;\n"
       "ts.lr = lr, ts.wd = wd;\n"
       "if (u->master)\n"
       "  ts.master = w, ts.init_master = u->init_master != 0;\n"
       "if (u->optimizer == NNCC_OPTIM_SGD)\n"
       "  NNCC_CUDA_CHECK((launch_sgd_steps<real_t>(ts, u->grad_scale, u->momentum, u->nesterov, "
       "u->first, stream)), \"the SGD update\");\n"
       "else\n"
       "  NNCC_CUDA_CHECK((launch_adam_steps<real_t>(ts, u->grad_scale, u->beta1, u->beta2, u->eps, "
       "u->optimizer == NNCC_OPTIM_ADAMW, u->step, stream)), \"the Adam update\");\n"
       "return NNCC_OK;\n";
  f.unindent();
  f << "}\n";
}

void CudaEmitter::emitGradMean(raw_indented_ostream &f, size_t numParams, size_t arrayLen) {
  f << "extern \"C\" nncc_status nncc_" << modelName
    << "_grad_mean_cuda(nncc_model *m, void *const *means, int32_t mode, double alpha, "
       "nncc_error *err) {\n";
  f.indent();
  f << "cudaStream_t stream = (cudaStream_t)nncc_ms_cuda_stream(m);\n"
       "real_t *g[" << arrayLen << "];\n"
       "acc_t<real_t> *mean[" << arrayLen << "];\n"
       "for (int32_t i = 0; i < " << numParams << "; ++i) {\n"
       "  g[i] = (real_t *)nncc_ms_grad(m, i);\n"
       "  mean[i] = (acc_t<real_t> *)means[i];\n"
       "}\n"
       "NNCC_CUDA_CHECK((launch_grad_mean<real_t>(" << numParams
    << ", kParamNumel, g, mean, mode, alpha, stream)), \"the gradient mean\");\n"
       "return NNCC_OK;\n";
  f.unindent();
  f << "}\n";
}

void CudaEmitter::emitIncludes(raw_indented_ostream &os) {
  // The kernels every .cu uses (elementwise, fills, copies, reductions,
  // cuBLAS), the training step's optimizers, and the headers
  // the module's ops ask for (KernelLaunchOpInterface::getCudaHeaders).
  unsigned headers = 0;
  module.walk([&](KernelLaunchOpInterface op) { headers |= op.getCudaHeaders(); });
  os << "// Generated by nncc from model '" << modelName
     << "': the CUDA launch sequence. Do not edit.\n"
     << "#include \"nncc/ModelSupport/ModelSupport.h\"\n"
     << "#include \"nncc/ModelSupport/CudaState.cuh\"\n"
     << "#include \"nncc/Kernels/CUDA/Elementwise.cuh\"\n"
     << "#include \"nncc/Kernels/CUDA/Tensor.cuh\"\n"
     << "#include \"nncc/Kernels/CUDA/Blas.cuh\"\n"
     << "#include \"nncc/Kernels/AttentionMath.h\"\n"; // nncc_gen_lsh_buckets
  if (train)
    os << "#include \"nncc/Kernels/CUDA/Optim.cuh\"\n";
  if (numLtPlans)
    os << "#include \"nncc/Kernels/CUDA/LtGemm.cuh\"\n";
  for (auto [bit, path] : cudaHeaderPaths())
    if (headers & bit)
      os << "#include \"" << path << "\"\n";
  os << "#include <cublas_v2.h>\n#include <cublasLt.h>\n#include <cuda_runtime.h>\n"
     << "#include <math.h>\n"
     << "#include <stdlib.h>\n#include <string.h>\n#include <algorithm>\n#include <initializer_list>\n\n";
}

void CudaEmitter::emitCheckMacros(raw_indented_ostream &os) {
  os << "// Every CUDA / cuBLAS call is checked; the first failure returns a status\n"
        "// naming the launch (never an abort).\n"
        "#define NNCC_CUDA_CHECK(call, what)                                        \\\n"
        "  do {                                                                     \\\n"
        "    cudaError_t e_ = (call);                                               \\\n"
        "    if (e_ != cudaSuccess)                                                 \\\n"
        "      return nncc_error_set(err, e_ == cudaErrorMemoryAllocation             \\\n"
        "                                     ? NNCC_ERROR_OUT_OF_MEMORY              \\\n"
        "                                     : NNCC_ERROR_CUDA,                      \\\n"
        "                            \"%s: %s (%s)\", what, cudaGetErrorName(e_),       \\\n"
        "                            cudaGetErrorString(e_));                       \\\n"
        "  } while (0)\n"
        "#define NNCC_CUBLAS_CHECK(call, what)                                      \\\n"
        "  do {                                                                     \\\n"
        "    cublasStatus_t s_ = (call);                                            \\\n"
        "    if (s_ != CUBLAS_STATUS_SUCCESS)                                       \\\n"
        "      return nncc_error_set(err, NNCC_ERROR_CUDA, \"%s: %s (cuBLAS status %d)\", \\\n"
        "                            what, cublasGetStatusString(s_), (int)s_);     \\\n"
        "  } while (0)\n"
        "// A fused GEMM (lt_gemm, LtGemm.cuh): also names the cuBLASLt call that failed.\n"
        "#define NNCC_CUBLASLT_CHECK(call, what)                                    \\\n"
        "  do {                                                                     \\\n"
        "    cublasStatus_t s_ = (call);                                            \\\n"
        "    if (s_ != CUBLAS_STATUS_SUCCESS)                                       \\\n"
        "      return nncc_error_set(err, s_ == CUBLAS_STATUS_ALLOC_FAILED            \\\n"
        "                                     ? NNCC_ERROR_OUT_OF_MEMORY              \\\n"
        "                                     : NNCC_ERROR_CUDA,                      \\\n"
        "                            \"%s: %s: %s (cuBLAS status %d)\", what,        \\\n"
        "                            st->lt.failed, cublasGetStatusString(s_), (int)s_); \\\n"
        "  } while (0)\n\n";
}

void CudaEmitter::emitState(raw_indented_ostream &os) {
  os << "// The model-independent part (CudaState.cuh) and the fused GEMMs' plans.\n"
        "struct NNCCCudaState : nncc::ms::CudaStateBase {\n";
  if (numLtPlans)
    os << "  LtPlan lt_plans[" << numLtPlans << "]; // one per fused nnk.gemm site\n"
       << "  LtState lt; // cuBLASLt (LtGemm.cuh), over lt_plans\n";
  os << "};\n";
}

void CudaEmitter::emitTeardown(raw_indented_ostream &os) {
  os << "extern \"C\" void nncc_" << modelName << "_cuda_teardown(void *state) {\n"
     << "  NNCCCudaState *s = (NNCCCudaState *)state;\n"
     << "  if (!s)\n    return;\n"
     << "  // Teardown cannot report; errors here leave nothing behind to fix.\n"
     << "  nncc::ms::cuda_state_release(s);\n";
  if (numLtPlans)
    os << "  lt_destroy(&s->lt);\n";
  os << "  delete s;\n}\n\n";
}

void CudaEmitter::emitSetup(raw_indented_ostream &os) {
  os << "// Runs only after libnncc_model_support found a driver and a device\n"
        "// (NNCC_ERROR_CUDA_UNAVAILABLE with the reason otherwise), so cudart is\n"
        "// never the first to touch a missing driver. A failure frees what it made.\n";
  os << "extern \"C\" nncc_status nncc_" << modelName
     << "_cuda_setup(nncc_model *m, void **state, nncc_error *err) {\n"
        "  (void)m;\n"
        "  NNCCCudaState *s = new NNCCCudaState();\n"
        "  cublasStatus_t cs = cublasCreate(&s->blas);\n"
        "  if (cs != CUBLAS_STATUS_SUCCESS) {\n"
        "    s->blas = nullptr;\n"
        "    nncc_" << modelName << "_cuda_teardown(s);\n"
        "    return nncc_error_set(err, NNCC_ERROR_CUDA, \"cublasCreate failed: %s (status %d)\",\n"
        "                          cublasGetStatusString(cs), (int)cs);\n"
        "  }\n"
        "  // TF32 tensor cores for the cuBLAS GEMMs only when the user allows\n"
        "  // them (torch.backends.cuda.matmul.allow_tf32's default is off too).\n"
        "  const char *tf32 = getenv(\"NNCC_CUDA_ALLOW_TF32\");\n"
        "  const bool allow_tf32 = tf32 && *tf32 && strcmp(tf32, \"0\") != 0;\n"
        "  if (allow_tf32 &&\n"
        "      (cs = cublasSetMathMode(s->blas, CUBLAS_TF32_TENSOR_OP_MATH)) != CUBLAS_STATUS_SUCCESS) {\n"
        "    nncc_" << modelName << "_cuda_teardown(s);\n"
        "    return nncc_error_set(err, NNCC_ERROR_CUDA, \"cublasSetMathMode(TF32) failed: %s (status %d)\",\n"
        "                          cublasGetStatusString(cs), (int)cs);\n"
        "  }\n";
  if (numLtPlans)
    os << "  // The fused GEMMs' compute type follows the same rule.\n"
          "  if ((cs = lt_create(&s->lt, s->lt_plans, " << numLtPlans
       << ", allow_tf32)) != CUBLAS_STATUS_SUCCESS) {\n"
          "    nncc_" << modelName << "_cuda_teardown(s);\n"
          "    return nncc_error_set(err, NNCC_ERROR_CUDA, \"cublasLtCreate failed: %s (status %d)\",\n"
          "                          cublasGetStatusString(cs), (int)cs);\n"
          "  }\n";
  os << "  cudaError_t e = cudaMalloc(&s->flag, sizeof(int));\n"
        "  if (e != cudaSuccess) {\n"
        "    nncc_" << modelName << "_cuda_teardown(s);\n"
        "    return nncc_error_set(err, e == cudaErrorMemoryAllocation ? NNCC_ERROR_OUT_OF_MEMORY\n"
        "                                                            : NNCC_ERROR_CUDA,\n"
        "                          \"cudaMalloc of the index-check flag: %s (%s)\",\n"
        "                          cudaGetErrorName(e), cudaGetErrorString(e));\n"
        "  }\n"
        "  *state = s;\n"
        "  return NNCC_OK;\n}\n";
}

LogicalResult CudaEmitter::emit(raw_indented_ostream &os) {
  if (failed(analyze()))
    return failure();
  profileLaunches = true;
  std::string fwd;
  {
    llvm::raw_string_ostream fs(fwd);
    raw_indented_ostream f(fs);
    SmallVector<Operation *> ops;
    for (Operation &op : forward.getBody().front().without_terminator())
      ops.push_back(&op);
    if (failed(emitSequence(f, "forward_cuda", forward, ops)))
      return failure();
    if (train && failed(emitTraining(f)))
      return failure();
  }
  emitIncludes(os);
  emitPrecision(os);
  emitCheckMacros(os);
  // The scalar math of elementwise bodies: external linkage (a named
  // namespace), so that the helpers a model does not use raise no warning.
  os << "namespace nncc_gen_math {\n";
  emitMathPrelude(os, "__device__ __forceinline__", /*hostPolynomials=*/false);
  os << "inline uint64_t nncc_gen_align(uint64_t n) { return (n + 255) & ~(uint64_t)255; }\n";
  emitSharedHelpers(os, "inline");
  os << "} // namespace nncc_gen_math\n\n";
  os << "namespace {\n";
  os << "using namespace nncc::kernels::cuda;\n";
  os << "using namespace nncc_gen_math;\n";
  emitState(os);
  os << generatedKernels;
  os << "} // namespace\n\n";
  emitTeardown(os);
  emitSetup(os);
  os << fwd;
  return success();
}

LogicalResult CudaEmitter::copyNd(const StridedCopy &c) {
  auto ct = cType(c.elementType);
  if (failed(ct))
    return failure();
  if (c.shape.size() > 16)
    return op()->emitError("the CUDA strided copy serves rank <= 16");
  out() << "{\n";
  out().indent();
  out() << "CopyNd c{};\n";
  out() << "c.rank = " << c.shape.size() << ";\n";
  for (size_t d = 0; d < c.shape.size(); ++d)
    out() << "c.shape[" << d << "] = " << c.shape[d] << "; c.dst_stride[" << d
          << "] = " << c.dstStrides[d] << "; c.src_stride[" << d << "] = " << c.srcStrides[d]
          << ";\n";
  out() << checked("launch_copy_nd<" + *ct + ">(c, " + c.dst + ", " + c.src + ", stream)");
  out().unindent();
  out() << "}\n";
  return success();
}

std::unique_ptr<LaunchEmitter> createCudaLaunchEmitter(ModuleOp module) {
  return std::make_unique<CudaEmitter>(module);
}

LogicalResult emitCuda(ModuleOp module, llvm::raw_ostream &os, Precision precision) {
  CudaEmitter emitter(module, precision);
  return printIfEmitted(os, [&](raw_indented_ostream &out) { return emitter.emit(out); });
}

LogicalResult emitHeader(ModuleOp module, llvm::raw_ostream &os) {
  std::string m = modelIdentifier(module);
  std::string guard = "NNCC_GENERATED_" + llvm::StringRef(m).upper() + "_H";
  os << "/* Generated by nncc: the C API of lib" << m << ".so (see nncc_model.h). */\n"
     << "#ifndef " << guard << "\n#define " << guard << "\n\n"
     << "#include \"nncc/Runtime/nncc_model.h\"\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
     << "/* The model's signature and entry points: create, destroy, load_weights,\n"
     << " * init_weights, save_weights, set_input, forward, get_output, memory_stats. */\n"
     << "const nncc_model_abi *nncc_" << m << "_get_abi(void);\n"
     << "const nncc_model_abi *nncc_model_get_abi(void);\n\n"
     << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  return success();
}

} // namespace nncc::target
