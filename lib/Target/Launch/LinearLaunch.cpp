//===- LinearLaunch.cpp - launches of the GEMM-shaped nnk ops -------------===//
//
// gemm (x W^T + fused epilogue), matmul and linear_weight_grad: OpenBLAS
// through libnncc_kernels on the CPU, cuBLAS (+ the epilogue kernel of
// Elementwise.cuh) on CUDA, or one cuBLASLt matmul with the epilogue fused
// where cuBLASLt has it (ltEpilogue). Row-major y[M,N] = x[M,K] w[N,K]^T
// is, to a column-major BLAS, y^T = w^T x^T.
//
//===----------------------------------------------------------------------===//
#include "../Common/LaunchEmitter.h"

#include <optional>

using namespace mlir;

namespace nncc::target {
namespace {

/// The cuBLASLt epilogue that computes the gemm's act(acc + bias) +
/// residual, if any: relu and the tanh GELU (cuBLASLt's GELU) with or
/// without a bias, and a residual (C with beta = 1) only without an
/// activation, since cuBLASLt adds C before it. None for a plain GEMM
/// (nothing to fuse) and for the other activations.
std::optional<std::string> ltEpilogue(nnk::GemmOp o) {
  const bool bias = static_cast<bool>(o.getBias());
  switch (o.getActivation()) {
  case nnk::Activation::none:
    if (bias)
      return std::string("CUBLASLT_EPILOGUE_BIAS");
    if (o.getResidual())
      return std::string("CUBLASLT_EPILOGUE_DEFAULT");
    return std::nullopt;
  case nnk::Activation::relu:
    if (o.getResidual())
      return std::nullopt;
    return std::string(bias ? "CUBLASLT_EPILOGUE_RELU_BIAS" : "CUBLASLT_EPILOGUE_RELU");
  case nnk::Activation::gelu_tanh:
    if (o.getResidual())
      return std::nullopt;
    return std::string(bias ? "CUBLASLT_EPILOGUE_GELU_BIAS" : "CUBLASLT_EPILOGUE_GELU");
  default:
    return std::nullopt;
  }
}

LogicalResult emitGemm(LaunchEmitter &e, nnk::GemmOp o) {
  auto M = e.numel(o.getX(), 0, e.bufferType(o.getX()).getRank() - 1);
  auto K = e.dim(o.getX(), -1);
  auto N = e.dim(o.getWeight(), 0);
  if (failed(M) || failed(K) || failed(N))
    return failure();
  std::string activation = std::to_string(static_cast<int>(o.getActivation()));
  if (!e.isCuda()) {
    e.call({"NNCC_KFN(nncc_linear)",
            {*M, *N, *K, e.name(o.getX()), e.name(o.getWeight()), e.nameOrNull(o.getBias()),
             e.nameOrNull(o.getResidual()), activation, fmtDouble(o.getAlpha()),
             e.name(o.getOut())}});
    return success();
  }
  const std::string what = cString(e.launchComment(e.op()));
  // Fusable: one cuBLASLt matmul unless NNCC_CUDA_GEMM=cublas (or fp64)
  // chose the cuBLAS GEMM + epilogue kernel below (gemm_lt, per sequence).
  std::optional<std::string> epilogue = ltEpilogue(o);
  if (epilogue) {
    e.out() << "if (gemm_lt) {\n";
    e.out() << "  NNCC_CUBLASLT_CHECK(lt_gemm<real_t>(&st->lt, " << e.addLtPlan() << ", " << *epilogue
            << ", " << *M << ", " << *N << ", " << *K << ", " << e.name(o.getWeight()) << ", "
            << e.name(o.getX()) << ", " << e.nameOr(o.getBias(), "const real_t *") << ", "
            << e.nameOr(o.getResidual(), "const real_t *") << ", " << e.name(o.getOut())
            << ", stream), " << what << ");\n";
    e.out() << "} else {\n";
    e.out().indent();
  }
  e.out() << "NNCC_CUBLAS_CHECK(NNCC_CUBLAS_GEMM(blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)" << *N
          << ", (int)" << *M << ", (int)" << *K << ", &one, " << e.name(o.getWeight())
          << ", (int)" << *K << ", " << e.name(o.getX()) << ", (int)" << *K << ", &zero, "
          << e.name(o.getOut()) << ", (int)" << *N << "), " << what << ");\n";
  if (o.getBias() || o.getResidual() || o.getActivation() != nnk::Activation::none)
    e.call({"nncc::kernels::cuda::launch_linear_epilogue<real_t>",
            {*M, *N, e.name(o.getOut()), e.nameOrNull(o.getBias()), activation,
             "(acc_t<real_t>)" + fmtDouble(o.getAlpha()), e.nameOrNull(o.getResidual()),
             "stream"}});
  if (epilogue) {
    e.out().unindent();
    e.out() << "}\n";
  }
  return success();
}

LogicalResult emitMatmul(LaunchEmitter &e, nnk::MatmulOp o) {
  auto ta = e.bufferType(o.getLhs()), tb = e.bufferType(o.getRhs()),
       tc = e.bufferType(o.getOut());
  int64_t rc = tc.getRank();
  auto M = e.dim(o.getOut(), -2), N = e.dim(o.getOut(), -1), K = e.dim(o.getLhs(), -1);
  auto batch = e.numel(o.getOut(), 0, rc - 2);
  if (failed(M) || failed(N) || failed(K) || failed(batch))
    return failure();
  // Operands are [M, K] / [K, N] or carry the result's batch dims.
  auto sameBatch = [&](nnk::BufferType t) {
    if (t.getRank() == 2)
      return true;
    if (t.getRank() != rc)
      return false;
    for (int64_t i = 0; i < rc - 2; ++i)
      if (t.getDim(i) != tc.getDim(i))
        return false;
    return true;
  };
  if (!sameBatch(ta) || !sameBatch(tb))
    return o.emitError("nnk.matmul: broadcasting batch dims other than a missing batch is "
                       "not supported by the emitters yet");
  std::string strideA = ta.getRank() == 2 ? "0" : *M + " * " + *K;
  std::string strideB = tb.getRank() == 2 ? "0" : *K + " * " + *N;
  if (!e.isCuda() && ta.getRank() == rc && tb.getRank() == 2 && rc > 2) {
    // A shared right operand (the dx = dy W of a linear's backward): the
    // batch folds into M, one GEMM of batch * M rows instead of `batch`
    // small ones that each re-pack W.
    e.call({"NNCC_KFN(nncc_gemm)",
            {"0", "0", "(" + *batch + ") * " + *M, *N, *K, "(real_t)1", e.name(o.getLhs()), *K,
             e.name(o.getRhs()), *N, "(real_t)0", e.name(o.getOut()), *N}});
    return success();
  }
  if (!e.isCuda()) {
    e.out() << "for (int64_t bi = 0; bi < " << *batch << "; ++bi)\n";
    e.out().indent();
    e.call({"NNCC_KFN(nncc_gemm)",
            {"0", "0", *M, *N, *K, "(real_t)1", e.name(o.getLhs()) + " + bi * " + strideA, *K,
             e.name(o.getRhs()) + " + bi * " + strideB, *N, "(real_t)0",
             e.name(o.getOut()) + " + bi * " + *M + " * " + *N, *N}});
    e.out().unindent();
    return success();
  }
  e.out() << "NNCC_CUBLAS_CHECK(NNCC_CUBLAS_GEMM_BATCHED(blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)"
          << *N << ", (int)" << *M << ", (int)" << *K << ", &one, " << e.name(o.getRhs())
          << ", (int)" << *N << ", (long long)" << strideB << ", " << e.name(o.getLhs())
          << ", (int)" << *K << ", (long long)" << strideA << ", &zero, " << e.name(o.getOut())
          << ", (int)" << *N << ", (long long)" << *M << " * " << *N << ", (int)" << *batch
          << "), " << cString(e.launchComment(e.op())) << ");\n";
  return success();
}

LogicalResult emitLinearWeightGrad(LaunchEmitter &e, nnk::LinearWeightGradOp o) {
  auto rows = e.numel(o.getDy(), 0, e.bufferType(o.getDy()).getRank() - 1);
  auto N = e.dim(o.getDy(), -1), K = e.dim(o.getX(), -1);
  if (failed(rows) || failed(N) || failed(K))
    return failure();
  // dW[N, K] = dy^T x. Column-major, that is dW^T [K, N] = x^T dy: x as
  // stored is x^T (K x rows), dy as stored is dy^T (N x rows), transposed.
  if (e.isCuda()) {
    e.out() << "NNCC_CUBLAS_CHECK(NNCC_CUBLAS_GEMM(blas, CUBLAS_OP_N, CUBLAS_OP_T, (int)" << *K
            << ", (int)" << *N << ", (int)" << *rows << ", &one, " << e.name(o.getX())
            << ", (int)" << *K << ", " << e.name(o.getDy()) << ", (int)" << *N << ", &zero, "
            << e.name(o.getOut()) << ", (int)" << *K << "), "
            << cString(e.launchComment(e.op())) << ");\n";
    return success();
  }
  e.call({"NNCC_KFN(nncc_gemm)",
          {"1", "0", *N, *K, *rows, "(real_t)1", e.name(o.getDy()), *N, e.name(o.getX()), *K,
           "(real_t)0", e.name(o.getOut()), *K}});
  return success();
}

} // namespace

void attachLinearLaunches(MLIRContext &ctx) {
  attachLaunch<nnk::GemmOp, emitGemm, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::MatmulOp, emitMatmul, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::LinearWeightGradOp, emitLinearWeightGrad, Bf16Kernel::Yes>(ctx);
}

} // namespace nncc::target
