//===- CudaEmitter.cpp - nnk -> CUDA C++ ----------------------------------===//
//
// Prints <model>.cu: one generated __global__ kernel per nnk.elementwise,
// cuBLAS for nnk.gemm / nnk.matmul (+ the epilogue kernel of
// Elementwise.cuh), the .cuh kernels of include/nncc/Kernels/CUDA for every
// other op (layer norm, attention cores, the persistent recurrent scan, data
// movement, losses, ODE stage combinations), and
// `nncc_<model>_forward_cuda`, the launch sequence on the context's stream.
// Buffers are the same arena slots as the CPU plan (device memory); kernel
// scratch (recurrent W_hh^T, LSH buffers, loss partials, ODE temporaries) is
// one device buffer of the CUDA state, sized at the start of each forward
// from the bound dims (the max over launches). Every CUDA / cuBLAS call is
// checked and turned into an nncc_status naming the launch. docs/cuda.md.
//
//===----------------------------------------------------------------------===//
#include "nncc/Target/Emitters.h"

#include "../Common/ModelEmitter.h"
#include "nncc/Kernels/ODESolver.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace nncc::target {
namespace {

class CudaEmitter : public ModelEmitter {
public:
  using ModelEmitter::ModelEmitter;
  LogicalResult emit(raw_indented_ostream &os);

private:
  std::string kernels; // generated __global__ functions
  int numKernels = 0;
  int numLocals = 0;   // unique suffixes of generated host locals
  std::string scratchCur = "0";           // bytes taken by the current launch
  std::vector<std::string> scratchNeeds;  // per top-level launch
  std::vector<std::pair<int, std::string>> flagCodes; // index checks
  LogicalResult emitOp(raw_indented_ostream &os, Operation *op);
  /// Device scratch of `bytes` (C++ expression) for the current top-level
  /// launch; returns a `char *` expression.
  std::string takeScratch(const std::string &bytes) {
    std::string at = "(nncc_scratch + (" + scratchCur + "))";
    scratchCur += " + nncc_gen_align((uint64_t)(" + bytes + "))";
    return at;
  }
  int flagCode(Operation *op) {
    int code = static_cast<int>(flagCodes.size()) + 1;
    flagCodes.push_back({code, launchComment(op)});
    return code;
  }
  std::string local(const std::string &base) {
    return base + std::to_string(numLocals++);
  }
  /// Emits the ops of a region (nnk.ode_solve / ode_rnn bodies) with the
  /// given names for its block arguments: inner weights become parameter
  /// pointers, inner allocs scratch.
  LogicalResult emitRegion(raw_indented_ostream &os, Region &region, Operation *parent,
                           llvm::ArrayRef<std::string> argNames);
  LogicalResult emitCopyNd(raw_indented_ostream &os, Operation *op, Type elt,
                           llvm::ArrayRef<std::string> shape,
                           llvm::ArrayRef<std::string> dstStrides, const std::string &dst,
                           llvm::ArrayRef<std::string> srcStrides, const std::string &src);
  LogicalResult emitOdeSolve(raw_indented_ostream &os, nnk::ODESolveOp op);
  LogicalResult emitOdeRnn(raw_indented_ostream &os, nnk::ODERNNOp op);
  LogicalResult emitOdeSteps(raw_indented_ostream &os, Operation *op, nn::ODEMethod method);
  std::string check(Operation *op, const std::string &call) {
    // The call is parenthesised: template argument lists contain commas.
    return "NNCC_CUDA_CHECK((" + call + "), " + cString(launchComment(op)) + ");\n";
  }
};

LogicalResult CudaEmitter::emit(raw_indented_ostream &os) {
  if (failed(analyze()))
    return failure();
  // The launch sequence first: it decides the scratch and the index checks.
  std::string body;
  {
    llvm::raw_string_ostream bs(body);
    raw_indented_ostream b(bs);
    b.indent();
    for (Operation &op : forward.getBody().front().without_terminator()) {
      scratchCur = "0";
      if (failed(emitOp(b, &op)))
        return failure();
      if (scratchCur != "0")
        scratchNeeds.push_back(scratchCur);
    }
  }
  std::string fwd;
  {
    llvm::raw_string_ostream fs(fwd);
    raw_indented_ostream f(fs);
    f << "extern \"C\" nncc_status nncc_" << modelName
      << "_forward_cuda(nncc_model *m, nncc_error *err) {\n";
    f.indent();
    f << "cudaStream_t stream = (cudaStream_t)nncc_ms_cuda_stream(m);\n";
    f << "NNCCCudaState *st = (NNCCCudaState *)nncc_ms_cuda_state(m);\n";
    f << "if (!st)\n"
         "  return nncc_error_set(err, NNCC_ERROR_INTERNAL, \"CUDA state missing (cuda_setup not run)\");\n";
    f << "cublasHandle_t blas = st->blas; (void)blas;\n";
    f << "NNCC_CUBLAS_CHECK(cublasSetStream(blas, stream), \"cublasSetStream\");\n";
    f << "const real_t one = 1, zero = 0; (void)one; (void)zero;\n";
    if (failed(emitForwardPrologue(f)))
      return failure();
    f << "// Kernel scratch: the most any single launch needs for these dims.\n";
    f << "uint64_t scratch_bytes = 0;\n";
    for (const std::string &need : scratchNeeds)
      f << "scratch_bytes = std::max<uint64_t>(scratch_bytes, (uint64_t)(" << need << "));\n";
    f << "NNCC_CUDA_CHECK(nncc_gen_ensure_scratch(st, scratch_bytes, stream), "
         "\"allocating the CUDA kernel scratch\");\n";
    f << "char *nncc_scratch = (char *)st->scratch; (void)nncc_scratch;\n";
    f << "NNCC_CUDA_CHECK(cudaMemsetAsync(st->flag, 0, sizeof(int), stream), "
         "\"clearing the index-check flag\");\n";
    f.unindent();
    f << body;
    f.indent();
    if (!flagCodes.empty()) {
      f << "// Index checks of the launches above (embedding, cross-entropy targets).\n";
      f << "int flag = 0;\n";
      f << "NNCC_CUDA_CHECK(cudaMemcpyAsync(&flag, st->flag, sizeof(int), "
           "cudaMemcpyDeviceToHost, stream), \"reading the index-check flag\");\n";
      f << "NNCC_CUDA_CHECK(cudaStreamSynchronize(stream), \"synchronizing the stream\");\n";
      f << "switch (flag) {\n";
      for (auto &[code, what] : flagCodes)
        f << "case " << code << ":\n  return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "
          << "\"%s: an index input is out of range\", " << cString(what) << ");\n";
      f << "default:\n  break;\n}\n";
    }
    f << "return NNCC_OK;\n";
    f.unindent();
    f << "}\n";
  }
  os << "// Generated by nncc from model '" << modelName
     << "': the CUDA launch sequence. Do not edit.\n"
     << "#include \"nncc/Runtime/ModelSupport.h\"\n"
     << "#include \"nncc/Kernels/CUDA/Elementwise.cuh\"\n"
     << "#include \"nncc/Kernels/CUDA/LayerNorm.cuh\"\n"
     << "#include \"nncc/Kernels/CUDA/Attention.cuh\"\n"
     << "#include \"nncc/Kernels/CUDA/LshAttention.cuh\"\n"
     << "#include \"nncc/Kernels/CUDA/Recurrent.cuh\"\n"
     << "#include \"nncc/Kernels/CUDA/Data.cuh\"\n"
     << "#include \"nncc/Kernels/CUDA/Ode.cuh\"\n"
     << "#include <cublas_v2.h>\n#include <cuda_runtime.h>\n#include <math.h>\n"
     << "#include <algorithm>\n\n";
  os << "#ifdef NNCC_PRECISION_F64\n"
        "typedef double real_t;\n"
        "#define NNCC_CUBLAS_GEMM cublasDgemm\n"
        "#define NNCC_CUBLAS_GEMM_BATCHED cublasDgemmStridedBatched\n"
        "#else\n"
        "typedef float real_t;\n"
        "#define NNCC_CUBLAS_GEMM cublasSgemm\n"
        "#define NNCC_CUBLAS_GEMM_BATCHED cublasSgemmStridedBatched\n"
        "#endif\n\n";
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
        "  } while (0)\n\n";
  // The scalar math of elementwise bodies: external linkage (a named
  // namespace), so that the helpers a model does not use raise no warning.
  os << "namespace nncc_gen_math {\n";
  emitMathPrelude(os, "__device__ __forceinline__", /*hostPolynomials=*/false);
  os << "inline uint64_t nncc_gen_align(uint64_t n) { return (n + 255) & ~(uint64_t)255; }\n";
  os << "// HuggingFace's bucket rule for LSH without given rotations (as the CPU).\n"
        "inline int64_t nncc_gen_lsh_buckets(int64_t T, int64_t chunk) {\n"
        "  return nncc::kernels::lsh_num_buckets(T, chunk);\n}\n";
  os << "} // namespace nncc_gen_math\n\n";
  os << "namespace {\n";
  os << "using namespace nncc::kernels::cuda;\n";
  os << "using namespace nncc_gen_math;\n";
  os << "template <typename T> __global__ void nncc_gen_fill(int64_t n, T v, T *y) {\n"
        "  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;\n"
        "       i += (int64_t)gridDim.x * blockDim.x)\n"
        "    y[i] = v;\n}\n";
  os << "// softmax along the middle axis of [outer, N, inner]: one thread per row.\n"
        "template <typename T> __global__ void nncc_gen_softmax(int64_t outer, int64_t n,\n"
        "                                                      int64_t inner, const T *x, T *y) {\n"
        "  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < outer * inner;\n"
        "       r += (int64_t)gridDim.x * blockDim.x) {\n"
        "    const int64_t o = r / inner, in = r % inner, base = o * n * inner + in;\n"
        "    T mx = x[base];\n"
        "    for (int64_t k = 1; k < n; ++k) mx = x[base + k * inner] > mx ? x[base + k * inner] : mx;\n"
        "    double s = 0;\n"
        "    for (int64_t k = 0; k < n; ++k) s += exp((double)(x[base + k * inner] - mx));\n"
        "    for (int64_t k = 0; k < n; ++k)\n"
        "      y[base + k * inner] = (T)(exp((double)(x[base + k * inner] - mx)) / s);\n"
        "  }\n}\n";
  os << "struct NNCCCudaState {\n"
        "  cublasHandle_t blas = nullptr;\n"
        "  void *scratch = nullptr;   // kernel scratch (grown on demand)\n"
        "  uint64_t scratch_bytes = 0;\n"
        "  int *flag = nullptr;       // first failing index check (0 = none)\n"
        "};\n";
  os << "static cudaError_t nncc_gen_ensure_scratch(NNCCCudaState *st, uint64_t bytes,\n"
        "                                           cudaStream_t stream) {\n"
        "  if (bytes <= st->scratch_bytes)\n    return cudaSuccess;\n"
        "  cudaError_t e = cudaStreamSynchronize(stream);\n"
        "  if (e != cudaSuccess)\n    return e;\n"
        "  if (st->scratch && (e = cudaFree(st->scratch)) != cudaSuccess)\n    return e;\n"
        "  st->scratch = nullptr;\n  st->scratch_bytes = 0;\n"
        "  if ((e = cudaMalloc(&st->scratch, bytes)) != cudaSuccess)\n    return e;\n"
        "  st->scratch_bytes = bytes;\n  return cudaSuccess;\n}\n";
  os << kernels;
  os << "} // namespace\n\n";
  os << "// Runs only after libnncc_model_support found a driver and a device\n"
        "// (NNCC_ERROR_CUDA_UNAVAILABLE with the reason otherwise), so cudart is\n"
        "// never the first to touch a missing driver.\n";
  os << "extern \"C\" nncc_status nncc_" << modelName
     << "_cuda_setup(nncc_model *m, void **state, nncc_error *err) {\n"
        "  (void)m;\n"
        "  NNCCCudaState *s = new NNCCCudaState();\n"
        "  cublasStatus_t cs = cublasCreate(&s->blas);\n"
        "  if (cs != CUBLAS_STATUS_SUCCESS) {\n"
        "    delete s;\n"
        "    return nncc_error_set(err, NNCC_ERROR_CUDA, \"cublasCreate failed: %s (status %d)\",\n"
        "                          cublasGetStatusString(cs), (int)cs);\n"
        "  }\n"
        "  cudaError_t e = cudaMalloc(&s->flag, sizeof(int));\n"
        "  if (e != cudaSuccess) {\n"
        "    cublasDestroy(s->blas);\n"
        "    delete s;\n"
        "    return nncc_error_set(err, e == cudaErrorMemoryAllocation ? NNCC_ERROR_OUT_OF_MEMORY\n"
        "                                                            : NNCC_ERROR_CUDA,\n"
        "                          \"cudaMalloc of the index-check flag: %s (%s)\",\n"
        "                          cudaGetErrorName(e), cudaGetErrorString(e));\n"
        "  }\n"
        "  *state = s;\n"
        "  return NNCC_OK;\n}\n";
  os << "extern \"C\" void nncc_" << modelName << "_cuda_teardown(void *state) {\n"
     << "  NNCCCudaState *s = (NNCCCudaState *)state;\n"
     << "  if (!s)\n    return;\n"
     << "  // Teardown cannot report; errors here leave nothing behind to fix.\n"
     << "  if (s->scratch)\n    (void)cudaFree(s->scratch);\n"
     << "  if (s->flag)\n    (void)cudaFree(s->flag);\n"
     << "  if (s->blas)\n    (void)cublasDestroy(s->blas);\n"
     << "  delete s;\n}\n\n";
  os << fwd;
  return success();
}

LogicalResult CudaEmitter::emitOp(raw_indented_ostream &os, Operation *op) {
  if (isa<nnk::AllocOp, nnk::WeightOp>(op))
    return success();
  os << "// " << launchComment(op) << "\n";
  auto T = [](Value v) { return cast<nnk::BufferType>(v.getType()); };
  auto N = [&](Value v, int64_t from = 0, int64_t to = -1) {
    return numel(op, T(v), from, to);
  };
  auto D = [&](Value v, int64_t i) {
    auto t = T(v);
    return dimExpr(op, t.getDim(i < 0 ? t.getRank() + i : i));
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<nnk::FillOp>([&](nnk::FillOp o) -> LogicalResult {
        auto n = N(o.getOut());
        auto ct = cType(op, T(o.getOut()).getElementType());
        if (failed(n) || failed(ct))
          return failure();
        os << "nncc_gen_fill<" << *ct << "><<<nncc::kernels::cuda::grid_for(" << *n
           << ", 256), 256, 0, stream>>>(" << *n << ", (" << *ct << ")"
           << fmtDouble(o.getValue()) << ", " << name(o.getOut()) << ");\n";
        os << check(op, "cudaGetLastError()");
        return success();
      })
      .Case<nnk::CopyOp>([&](nnk::CopyOp o) -> LogicalResult {
        auto n = N(o.getOut());
        if (failed(n))
          return failure();
        os << check(op, "cudaMemcpyAsync(" + name(o.getOut()) + ", " + name(o.getIn()) +
                            ", " + *n + " * sizeof(*" + name(o.getOut()) +
                            "), cudaMemcpyDeviceToDevice, stream)");
        return success();
      })
      .Case<nnk::ElementwiseOp>([&](nnk::ElementwiseOp o) -> LogicalResult {
        Value out = o->getOperand(o->getNumOperands() - 1);
        auto n = N(out);
        if (failed(n))
          return failure();
        // The kernel takes the dims it needs as parameters (d_*).
        std::string kname = "nncc_ew_" + std::to_string(numKernels++);
        std::string params = "int64_t n";
        std::string args = *n;
        for (auto &d : dims) {
          params += ", int64_t d_" + cIdentifier(d);
          args += ", d_" + cIdentifier(d);
        }
        std::string loads;
        for (auto [k, in] : llvm::enumerate(o.getInputs())) {
          auto ct = cType(op, T(in).getElementType());
          auto idx = broadcastIndex(op, T(in), T(out), "i");
          if (failed(ct) || failed(idx))
            return failure();
          params += ", const " + *ct + " *__restrict__ in" + std::to_string(k);
          args += ", " + name(in);
          loads += "const " + *ct + " a" + std::to_string(k) + " = in" + std::to_string(k) +
                   "[" + *idx + "];\n";
        }
        params += ", real_t *__restrict__ out";
        args += ", " + name(out);
        std::string k;
        llvm::raw_string_ostream ks(k);
        raw_indented_ostream kos(ks);
        kos << "// " << launchComment(op) << "\n";
        kos << "__global__ void " << kname << "(" << params << ") {\n";
        kos.indent();
        for (auto &d : dims)
          kos << "(void)d_" << cIdentifier(d) << ";\n";
        kos << "for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;\n"
               "     i += (int64_t)gridDim.x * blockDim.x) {\n";
        kos.indent();
        kos << loads;
        if (failed(emitElementwiseBody(kos, o, "out", "i")))
          return failure();
        kos.unindent();
        kos << "}\n";
        kos.unindent();
        kos << "}\n";
        kernels += k;
        os << "if (" << *n << " > 0) {\n";
        os << "  " << kname << "<<<nncc::kernels::cuda::grid_for(" << *n
           << ", 256), 256, 0, stream>>>(" << args << ");\n";
        os << "  " << check(op, "cudaGetLastError()");
        os << "}\n";
        return success();
      })
      .Case<nnk::GemmOp>([&](nnk::GemmOp o) -> LogicalResult {
        auto M = N(o.getX(), 0, T(o.getX()).getRank() - 1);
        auto K = D(o.getX(), -1);
        auto Nn = D(o.getWeight(), 0);
        if (failed(M) || failed(K) || failed(Nn))
          return failure();
        // Row-major y[M,N] = x[M,K] w[N,K]^T is column-major y^T = w^T x^T.
        os << "NNCC_CUBLAS_CHECK(NNCC_CUBLAS_GEMM(blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)"
           << *Nn << ", (int)" << *M << ", (int)" << *K << ", &one, " << name(o.getWeight())
           << ", (int)" << *K << ", " << name(o.getX()) << ", (int)" << *K << ", &zero, "
           << name(o.getOut()) << ", (int)" << *Nn << "), "
           << cString(launchComment(op)) << ");\n";
        if (o.getBias() || o.getResidual() || o.getActivation() != nnk::Activation::none)
          os << check(op, "nncc::kernels::cuda::launch_linear_epilogue<real_t>(" + *M + ", " +
                              *Nn + ", " + name(o.getOut()) + ", " +
                              nameOrNull(o.getBias()) + ", " +
                              std::to_string(static_cast<int>(o.getActivation())) +
                              ", (real_t)" + fmtDouble(o.getAlpha()) + ", " +
                              nameOrNull(o.getResidual()) + ", stream)");
        return success();
      })
      .Case<nnk::MatmulOp>([&](nnk::MatmulOp o) -> LogicalResult {
        auto ta = T(o.getLhs()), tb = T(o.getRhs()), tc = T(o.getOut());
        int64_t rc = tc.getRank();
        auto M = D(o.getOut(), -2), Nn = D(o.getOut(), -1), K = D(o.getLhs(), -1);
        auto batch = N(o.getOut(), 0, rc - 2);
        if (failed(M) || failed(Nn) || failed(K) || failed(batch))
          return failure();
        if ((ta.getRank() != 2 && ta.getRank() != rc) ||
            (tb.getRank() != 2 && tb.getRank() != rc))
          return o.emitError("nnk.matmul: batch broadcasting beyond a missing batch is "
                             "not supported by the CUDA emitter yet");
        std::string sa = ta.getRank() == 2 ? "0" : "(long long)" + *M + " * " + *K;
        std::string sb = tb.getRank() == 2 ? "0" : "(long long)" + *K + " * " + *Nn;
        os << "NNCC_CUBLAS_CHECK(NNCC_CUBLAS_GEMM_BATCHED(blas, CUBLAS_OP_N, CUBLAS_OP_N, "
              "(int)"
           << *Nn << ", (int)" << *M << ", (int)" << *K << ", &one, " << name(o.getRhs())
           << ", (int)" << *Nn << ", " << sb << ", " << name(o.getLhs()) << ", (int)" << *K
           << ", " << sa << ", &zero, " << name(o.getOut()) << ", (int)" << *Nn
           << ", (long long)" << *M << " * " << *Nn << ", (int)" << *batch << "), "
           << cString(launchComment(op)) << ");\n";
        return success();
      })
      .Case<nnk::LayerNormOp>([&](nnk::LayerNormOp o) -> LogicalResult {
        auto rows = N(o.getX(), 0, T(o.getX()).getRank() - 1);
        auto n = D(o.getX(), -1);
        if (failed(rows) || failed(n))
          return failure();
        os << check(op, "nncc::kernels::cuda::launch_layer_norm<real_t>(" + *rows + ", " +
                            *n + ", " + name(o.getX()) + ", " + nameOrNull(o.getResidual()) +
                            ", " + nameOrNull(o.getWeight()) + ", " +
                            nameOrNull(o.getBias()) + ", (real_t)" +
                            fmtDouble(o.getEps()) + ", " + name(o.getOut()) + ", " +
                            nameOrNull(o.getSum()) + ", NULL, NULL, stream)");
        return success();
      })
      .Case<nnk::FlashAttentionOp, nnk::BandedAttentionOp, nnk::LSHAttentionOp>(
          [&](auto o) -> LogicalResult {
            if (o.getDropout() > 0)
              return o.emitOpError("attention dropout (training mode) is CPU-only: "
                                   "the CUDA attention kernels have no dropout masks");
            if (o.getLse())
              return o.emitOpError("a kept log-sum-exp (training mode) is CPU-only: "
                                   "the CUDA attention kernels do not write it");
            Value qkv = o.getQkv(), out = o.getOut();
            nn::Dim e = T(out).getDim(2);
            int64_t heads = o.getNumHeads();
            auto B = D(qkv, 0), Tn = D(qkv, 1), ld = D(qkv, 2), E = D(out, 2);
            if (failed(B) || failed(Tn) || failed(ld) || failed(E))
              return failure();
            // Head size: static when the model width is, else a run-time value.
            std::string dh = "(" + *E + " / " + std::to_string(heads) + ")";
            int64_t staticDh = e.isStatic() ? e.getSize() / heads : -1;
            if (staticDh > 0)
              dh = std::to_string(staticDh);
            if (staticDh > 256)
              return o.emitError("the CUDA attention kernels serve head sizes up to 256, got ")
                     << staticDh;
            double scale = o.getScale();
            std::string sc = scale != 0 ? "(real_t)" + fmtDouble(scale)
                                        : "(real_t)1 / sqrt((real_t)" + dh + ")";
            std::string q = name(qkv), causal = o.getCausal() ? "1" : "0";
            // Static head sizes 32/64/128 instantiate only their kernel.
            std::string dhs = (staticDh == 32 || staticDh == 64 || staticDh == 128)
                                  ? std::to_string(staticDh)
                                  : "0";
            std::string mask = o.getMask() ? name(o.getMask()) : "(const uint8_t *)NULL";
            Operation *raw = o.getOperation();
            os << "{\n";
            os.indent();
            os << "const real_t scale = " << sc << ";\n";
            if (isa<nnk::FlashAttentionOp>(raw)) {
              std::string args = "(int)" + *B + ", (int)" + *Tn + ", " +
                                 std::to_string(heads) + ", " + q + ", " + q + " + " + *E +
                                 ", " + q + " + 2 * " + *E + ", " + *ld + ", " + name(out) +
                                 ", " + *E + ", " + mask + ", " + causal +
                                 ", scale, (real_t *)NULL, stream";
              if (staticDh == 32 || staticDh == 64 || staticDh == 128)
                os << check(op, "launch_flash_attention<real_t, " + dh + ">(" + args + ")");
              else
                os << check(op, "launch_flash_attention_dyn<real_t>((int)" + dh + ", " + args +
                                    ")");
            } else if (auto b = dyn_cast<nnk::BandedAttentionOp>(raw)) {
              std::string globals;
              for (int64_t g : b.getGlobal()) {
                if (g < 0)
                  return b.emitError("negative global position ") << g;
                globals += (globals.empty() ? "" : ", ") + std::to_string(g);
              }
              if (b.getGlobal().size() > 64)
                return b.emitError("the CUDA banded attention serves up to 64 global positions");
              std::string ws = takeScratch("dilated_attention_scratch_bytes(" + *Tn + ", " +
                                           std::to_string(b.getGlobal().size()) + ")");
              if (!globals.empty())
                os << "static const int32_t kGlobal[] = {" << globals << "};\n";
              os << check(op, "launch_dilated_attention_dyn<real_t, " + dhs + ">((int)" + dh + ", (int)" +
                                  *B + ", (int)" + *Tn + ", " + std::to_string(heads) + ", " +
                                  q + ", " + q + " + " + *E + ", " + q + " + 2 * " + *E + ", " +
                                  *ld + ", " + name(out) + ", " + *E + ", " + mask + ", " +
                                  causal + ", scale, " + std::to_string(b.getWindow()) + ", " +
                                  std::to_string(b.getDilation()) + ", " +
                                  (globals.empty() ? "(const int32_t *)NULL" : "kGlobal") +
                                  ", " + std::to_string(b.getGlobal().size()) + ", " + ws +
                                  ", stream)");
            } else {
              auto l = cast<nnk::LSHAttentionOp>(raw);
              int64_t hashes = l.getHashes(), chunk = l.getChunk();
              if (hashes > 32)
                return l.emitError("the CUDA LSH attention serves up to 32 hash rounds");
              std::string rot;
              if (l.getRotations()) {
                auto half = D(l.getRotations(), 2);
                if (failed(half))
                  return failure();
                os << "const int64_t nbuckets = 2 * " << *half << ";\n";
                rot = name(l.getRotations());
              } else {
                os << "const int64_t nbuckets = nncc_gen_lsh_buckets(" << *Tn << ", " << chunk
                   << ");\n";
                std::string n = std::to_string(hashes) + " * " + dh + " * (nncc_gen_lsh_buckets(" +
                                *Tn + ", " + std::to_string(chunk) + ") / 2)";
                os << "real_t *rot = (real_t *)" << takeScratch(n + " * sizeof(real_t)") << ";\n";
                os << "const int64_t nrot = " << std::to_string(hashes) << " * " << dh
                   << " * (nbuckets / 2);\n";
                os << "// N(0, 1) rotations from Philox(seed " << l.getSeed()
                   << "), the CPU's values.\n";
                os << "lsh_rotations_kernel<real_t><<<grid_for(nrot, 256), 256, 0, stream>>>("
                      "nrot, "
                   << l.getSeed() << "ULL, rot);\n";
                os << check(op, "cudaGetLastError()");
                rot = "rot";
              }
              std::string ws = takeScratch("lsh_attention_scratch_bytes(" + *B + ", " + *Tn +
                                           ", " + std::to_string(heads) + ", " + dh + ", " +
                                           std::to_string(hashes) + ", sizeof(real_t))");
              os << check(op, "launch_lsh_attention<real_t, " + dhs + ">((int)" + dh + ", (int)" + *B +
                                  ", (int)" + *Tn + ", " + std::to_string(heads) + ", " +
                                  std::to_string(hashes) + ", (int)nbuckets, " +
                                  std::to_string(chunk) + ", " + causal + ", scale, 0, " + q +
                                  ", " + q + " + " + *E + ", " + *ld + ", " + rot + ", " +
                                  name(out) + ", " + *E + ", " + mask + ", " + ws +
                                  ", stream)");
            }
            os.unindent();
            os << "}\n";
            return success();
          })
      .Case<nnk::SoftmaxOp>([&](nnk::SoftmaxOp o) -> LogicalResult {
        int64_t axis = o.getAxis();
        auto outer = N(o.getX(), 0, axis), n = D(o.getX(), axis),
             inner = N(o.getX(), axis + 1);
        if (failed(outer) || failed(n) || failed(inner))
          return failure();
        os << "nncc_gen_softmax<real_t><<<grid_for(" << *outer << " * " << *inner
           << ", 256), 256, 0, stream>>>(" << *outer << ", " << *n << ", " << *inner << ", "
           << name(o.getX()) << ", " << name(o.getOut()) << ");\n";
        os << check(op, "cudaGetLastError()");
        return success();
      })
      .Case<nnk::ReduceOp>([&](nnk::ReduceOp o) -> LogicalResult {
        auto t = T(o.getX());
        if (t.getRank() > 16)
          return o.emitError("the CUDA nnk.reduce serves rank <= 16");
        uint32_t mask = 0;
        for (int64_t a : o.getAxes())
          mask |= 1u << a;
        if (o.getAxes().empty())
          mask = (t.getRank() ? (1u << t.getRank()) - 1 : 0);
        os << "{\n";
        os.indent();
        os << "ReduceNd r{};\n";
        os << "r.rank = " << (t.getRank() ? t.getRank() : 1) << ";\n";
        os << "r.mask = " << (t.getRank() ? mask : 1u) << "u;\n";
        if (t.getRank() == 0)
          os << "r.shape[0] = 1;\n";
        for (int64_t d = 0; d < t.getRank(); ++d) {
          auto e = D(o.getX(), d);
          if (failed(e))
            return failure();
          os << "r.shape[" << d << "] = " << *e << ";\n";
        }
        os << check(op, "launch_reduce<real_t>(r, " +
                            std::to_string(o.getKind() == nnk::ReduceKind::mean ? 1 : 0) +
                            ", " + name(o.getX()) + ", " + name(o.getOut()) + ", stream)");
        os.unindent();
        os << "}\n";
        return success();
      })
      .Case<nnk::EmbeddingOp>([&](nnk::EmbeddingOp o) -> LogicalResult {
        auto n = N(o.getIndices());
        auto V = D(o.getTable(), 0), E = D(o.getTable(), 1);
        auto it = cType(op, T(o.getIndices()).getElementType());
        if (failed(n) || failed(V) || failed(E) || failed(it))
          return failure();
        os << check(op, "launch_embedding<real_t, " + *it + ">(" + *n + ", " + *V + ", " + *E +
                            ", " + name(o.getIndices()) + ", " + name(o.getTable()) + ", " +
                            name(o.getOut()) + ", st->flag, " +
                            std::to_string(flagCode(op)) + ", stream)");
        return success();
      })
      .Case<nnk::SinusoidalPositionOp>([&](auto o) -> LogicalResult {
        auto B = D(o.getX(), 0), Tn = D(o.getX(), 1), E = D(o.getX(), 2);
        auto n = N(o.getX());
        if (failed(B) || failed(Tn) || failed(E) || failed(n))
          return failure();
        os << "if (" << *n << " > 0) {\n";
        os << "  sinusoidal_position_kernel<real_t><<<grid_for(" << *n
           << ", 256), 256, 0, stream>>>(" << *B << ", " << *Tn << ", " << *E << ", "
           << name(o.getX()) << ", " << name(o.getOut()) << ");\n";
        os << "  " << check(op, "cudaGetLastError()");
        os << "}\n";
        return success();
      })
      .Case<nnk::DropoutOp>([&](nnk::DropoutOp o) -> LogicalResult {
        auto n = N(o.getX());
        if (failed(n))
          return failure();
        os << "if (" << *n << " > 0)\n  "
           << check(op, "launch_dropout<real_t>(" + *n + ", (float)" + fmtDouble(o.getP()) +
                            ", " + std::to_string(o.getSeed()) + "ULL, 0, " +
                            name(o.getX()) + ", " + name(o.getOut()) + ", " +
                            (o.getMask() ? name(o.getMask()) : "(uint8_t *)NULL") +
                            ", stream)");
        return success();
      })
      .Case<nnk::ZoneoutOp>([&](nnk::ZoneoutOp o) -> LogicalResult {
        auto n = N(o.getNewState());
        if (failed(n))
          return failure();
        os << "if (" << *n << " > 0)\n  "
           << check(op, "launch_zoneout<real_t>(" + *n + ", (float)" + fmtDouble(o.getP()) +
                            ", " + std::to_string(o.getSeed()) + "ULL, 0, " +
                            name(o.getNewState()) + ", " + name(o.getPrev()) + ", " +
                            name(o.getOut()) + ", stream)");
        return success();
      })
      .Case<nnk::LossOp>([&](nnk::LossOp o) -> LogicalResult {
        auto ti = T(o.getInput());
        std::string ws = takeScratch("loss_scratch_bytes()");
        switch (o.getKind()) {
        case nnk::LossKind::mse: {
          auto n = N(o.getInput());
          if (failed(n))
            return failure();
          os << check(op, "launch_mse_loss<real_t>(" + *n + ", " + name(o.getInput()) + ", " +
                              name(o.getTarget()) + ", " + name(o.getOut()) + ", " + ws +
                              ", stream)");
          return success();
        }
        case nnk::LossKind::cross_entropy: {
          auto n = N(o.getTarget());
          auto C = D(o.getInput(), -1);
          auto it = cType(op, T(o.getTarget()).getElementType());
          if (failed(n) || failed(C) || failed(it))
            return failure();
          os << check(op, "launch_cross_entropy<real_t, " + *it + ">(" + *n + ", " + *C + ", " +
                              name(o.getInput()) + ", " + name(o.getTarget()) + ", " +
                              std::to_string(o.getIgnoreIndex()) + "LL, " + name(o.getOut()) +
                              ", " + ws + ", st->flag, " + std::to_string(flagCode(op)) +
                              ", stream)");
          return success();
        }
        case nnk::LossKind::bce_with_logits: {
          auto rows = N(o.getInput(), 0, ti.getRank() ? ti.getRank() - 1 : 0);
          auto C = ti.getRank() ? D(o.getInput(), -1)
                                : FailureOr<std::string>(std::string("1"));
          if (failed(rows) || failed(C))
            return failure();
          os << check(op, "launch_bce_with_logits<real_t>(" + *rows + ", " + *C + ", " +
                              name(o.getInput()) + ", " + name(o.getTarget()) + ", " +
                              (o.getPosWeight() ? name(o.getPosWeight())
                                                : std::string("(const real_t *)NULL")) +
                              ", " + name(o.getOut()) + ", " + ws + ", stream)");
          return success();
        }
        }
        return failure();
      })
      .Case<nnk::TransposeOp>([&](nnk::TransposeOp o) -> LogicalResult {
        auto perm = o.getPerm();
        std::vector<std::string> shape, src, dst;
        for (size_t d = 0; d < perm.size(); ++d) {
          auto e = D(o.getOut(), d);
          auto ss = N(o.getX(), perm[d] + 1);
          auto ds = N(o.getOut(), d + 1);
          if (failed(e) || failed(ss) || failed(ds))
            return failure();
          shape.push_back(*e);
          src.push_back(*ss);
          dst.push_back(*ds);
        }
        return emitCopyNd(os, op, T(o.getOut()).getElementType(), shape, dst,
                          name(o.getOut()), src, name(o.getX()));
      })
      .Case<nnk::SliceOp>([&](nnk::SliceOp o) -> LogicalResult {
        auto tx = T(o.getX());
        auto starts = o.getStarts(), steps = o.getSteps();
        llvm::SmallDenseSet<int64_t> squeezed;
        for (int64_t s : o.getSqueeze())
          squeezed.insert(s);
        std::vector<std::string> shape, src, dst;
        std::string base = "0";
        int64_t od = 0;
        for (int64_t d = 0; d < tx.getRank(); ++d) {
          auto xd = D(o.getX(), d);
          auto xs = N(o.getX(), d + 1);
          if (failed(xd) || failed(xs))
            return failure();
          std::string start = starts[d] >= 0
                                  ? std::to_string(starts[d])
                                  : "(" + *xd + " - " + std::to_string(-starts[d]) + ")";
          base += " + " + start + " * " + *xs;
          if (squeezed.contains(d))
            continue;
          auto e = D(o.getOut(), od);
          auto ds = N(o.getOut(), od + 1);
          if (failed(e) || failed(ds))
            return failure();
          shape.push_back(*e);
          src.push_back(std::to_string(steps[d]) + " * " + *xs);
          dst.push_back(*ds);
          ++od;
        }
        if (od == 0) {
          os << check(op, "cudaMemcpyAsync(" + name(o.getOut()) + ", " + name(o.getX()) +
                              " + (" + base + "), sizeof(*" + name(o.getOut()) +
                              "), cudaMemcpyDeviceToDevice, stream)");
          return success();
        }
        return emitCopyNd(os, op, T(o.getOut()).getElementType(), shape, dst,
                          name(o.getOut()), src, name(o.getX()) + " + (" + base + ")");
      })
      .Case<nnk::ConcatOp, nnk::SplitOp>([&](auto o) -> LogicalResult {
        bool isConcat = isa<nnk::ConcatOp>(op);
        int64_t axis = o.getAxis();
        Value whole = isConcat ? op->getOperand(op->getNumOperands() - 1) : op->getOperand(0);
        llvm::SmallVector<Value> pieces;
        if (isConcat)
          for (Value v : op->getOperands().drop_back())
            pieces.push_back(v);
        else
          for (Value v : op->getOperands().drop_front())
            pieces.push_back(v);
        std::string offset = "0";
        for (Value piece : pieces) {
          std::vector<std::string> shape, ps, ws;
          for (int64_t d = 0; d < T(piece).getRank(); ++d) {
            auto e = D(piece, d);
            auto pst = N(piece, d + 1);
            auto wst = N(whole, d + 1);
            if (failed(e) || failed(pst) || failed(wst))
              return failure();
            shape.push_back(*e);
            ps.push_back(*pst);
            ws.push_back(*wst);
          }
          auto axisStride = N(whole, axis + 1);
          auto e = D(piece, axis);
          if (failed(axisStride) || failed(e))
            return failure();
          std::string at = name(whole) + " + (" + offset + ") * " + *axisStride;
          if (failed(isConcat ? emitCopyNd(os, op, T(piece).getElementType(), shape, ws, at,
                                           ps, name(piece))
                              : emitCopyNd(os, op, T(piece).getElementType(), shape, ps,
                                           name(piece), ws, at)))
            return failure();
          offset += " + " + *e;
        }
        return success();
      })
      .Case<nnk::RecurrentScanOp>([&](nnk::RecurrentScanOp o) -> LogicalResult {
        if (o.getZoneout() > 0)
          return o.emitOpError("LSTM zoneout (training mode) is CPU-only: the CUDA "
                               "recurrent kernel has no zoneout masks");
        auto B = D(o.getXproj(), 0), Tn = D(o.getXproj(), 1);
        if (failed(B) || failed(Tn))
          return failure();
        int64_t H = o.getHiddenSize();
        int64_t G = o.getCell() == nnk::Cell::lstm ? 4
                    : (o.getCell() == nnk::Cell::gru || o.getCell() == nnk::Cell::gru_cho2014)
                        ? 3
                        : 1;
        std::string lt = "int32_t", lengths = "(const int32_t *)NULL";
        if (o.getLengths()) {
          auto it = cType(op, T(o.getLengths()).getElementType());
          if (failed(it))
            return failure();
          lt = *it;
          lengths = name(o.getLengths());
        }
        std::string slice = " + (int64_t)" + std::to_string(o.getStateIndex()) + " * " + *B +
                            " * " + std::to_string(H);
        auto at = [&](Value v, const char *type) {
          return v ? name(v) + slice : std::string("(") + type + ")NULL";
        };
        std::string wt = takeScratch(std::to_string(G * H * H) + " * sizeof(real_t)");
        os << "// one persistent launch: layer/direction " << o.getStateIndex()
           << (o.getReverse() ? ", reverse" : "") << "\n";
        os << check(op, "launch_rnn_scan<real_t, " + lt + ", " +
                            std::to_string(static_cast<int>(o.getCell())) + ">((int)" + *B +
                            ", (int)" + *Tn + ", " + std::to_string(H) + ", " +
                            (o.getReverse() ? "1" : "0") + ", " +
                            std::to_string(o.getNumDirections() * H) + ", " +
                            (o.getReverse() ? std::to_string(H) : "0") + ", " + lengths +
                            ", " + name(o.getXproj()) + ", " + name(o.getWHh()) + ", " +
                            (o.getBHh() ? name(o.getBHh()) : "(const real_t *)NULL") + ", " +
                            at(o.getH0(), "const real_t *") + ", " +
                            at(o.getC0(), "const real_t *") + ", " + name(o.getY()) + ", " +
                            at(o.getHN(), "real_t *") + ", " + at(o.getCN(), "real_t *") +
                            ", (real_t *)NULL, 0, (real_t *)" + wt + ", stream)");
        return success();
      })
      .Case<nnk::RecurrentCellOp>([&](nnk::RecurrentCellOp o) -> LogicalResult {
        auto B = D(o.getXproj(), 0), H = D(o.getH(), 1);
        if (failed(B) || failed(H))
          return failure();
        int64_t G = o.getCell() == nnk::Cell::lstm ? 4
                    : (o.getCell() == nnk::Cell::gru || o.getCell() == nnk::Cell::gru_cho2014)
                        ? 3
                        : 1;
        std::string wt =
            takeScratch(std::to_string(G) + " * " + *H + " * " + *H + " * sizeof(real_t)");
        os << "// one step of the recurrent scan kernel (T = 1)\n";
        os << check(op, "launch_rnn_scan<real_t, int32_t, " +
                            std::to_string(static_cast<int>(o.getCell())) + ">((int)" + *B +
                            ", 1, (int)" + *H + ", 0, " + *H + ", 0, (const int32_t *)NULL, " +
                            name(o.getXproj()) + ", " + name(o.getWHh()) + ", " +
                            (o.getBHh() ? name(o.getBHh()) : "(const real_t *)NULL") + ", " +
                            name(o.getH()) + ", " +
                            (o.getC() ? name(o.getC()) : "(const real_t *)NULL") + ", " +
                            name(o.getHOut()) + ", (real_t *)NULL, " +
                            (o.getCOut() ? name(o.getCOut()) : "(real_t *)NULL") +
                            ", (real_t *)NULL, 0, (real_t *)" + wt + ", stream)");
        return success();
      })
      .Case<nnk::ODESolveOp>([&](nnk::ODESolveOp o) { return emitOdeSolve(os, o); })
      .Case<nnk::ODERNNOp>([&](nnk::ODERNNOp o) { return emitOdeRnn(os, o); })
      .Default([&](Operation *other) -> LogicalResult {
        return other->emitError()
               << "the CUDA emitter cannot handle '" << other->getName()
               << "' (not an nnk compute op); compile with --target cpu";
      });
}

LogicalResult CudaEmitter::emitCopyNd(raw_indented_ostream &os, Operation *op, Type elt,
                                      llvm::ArrayRef<std::string> shape,
                                      llvm::ArrayRef<std::string> dstStrides,
                                      const std::string &dst,
                                      llvm::ArrayRef<std::string> srcStrides,
                                      const std::string &src) {
  auto ct = cType(op, elt);
  if (failed(ct))
    return failure();
  if (shape.size() > 16)
    return op->emitError("the CUDA strided copy serves rank <= 16");
  os << "{\n";
  os.indent();
  os << "CopyNd c{};\n";
  os << "c.rank = " << shape.size() << ";\n";
  for (size_t d = 0; d < shape.size(); ++d)
    os << "c.shape[" << d << "] = " << shape[d] << "; c.dst_stride[" << d
       << "] = " << dstStrides[d] << "; c.src_stride[" << d << "] = " << srcStrides[d]
       << ";\n";
  os << check(op, "launch_copy_nd<" + *ct + ">(c, " + dst + ", " + src + ", stream)");
  os.unindent();
  os << "}\n";
  return success();
}

LogicalResult CudaEmitter::emitRegion(raw_indented_ostream &os, Region &region,
                                      Operation *parent, llvm::ArrayRef<std::string> argNames) {
  Block &block = region.front();
  for (auto [arg, n] : llvm::zip(block.getArguments(), argNames))
    names[arg] = n;
  for (Operation &op : block.without_terminator()) {
    launchIndex[&op] = launchIndex.lookup(parent);
    // Weights and temporaries of regions are declared by the shared forward
    // prologue (arena slots live for the whole launch of the parent op).
    if (isa<nnk::WeightOp, nnk::AllocOp>(op))
      continue;
    if (failed(emitOp(os, &op)))
      return failure();
  }
  return success();
}

/// Emits the lambda `stage_step(dt, dt_rows, t,
/// with_err)` that runs one RK step on `h` (slots in `work`, n elements per
/// slot): per stage the stage-input combination kernel and `dyn(...)`, then
/// the final combination (into h, or for with_err into the stage-input slot
/// plus the error slot). Expects in scope: n, row_len, h, work, dyn,
/// set_time(stage_index, t, dt).
LogicalResult CudaEmitter::emitOdeSteps(raw_indented_ostream &os, Operation *op,
                                        nn::ODEMethod method) {
  // The tableau is ODESolver.h's (ode_a/ode_b/ode_c/ode_e), the CPU solver's.
  const int m = static_cast<int>(method); // == kernels::OdeMethod (NNKOps.cpp)
  int S = kernels::ode_stages(m), in = S == 1 ? 1 : S; // stage-input slot
  os << "const int ode_method = " << m << "; // nncc::kernels::OdeMethod\n";
  os << "auto stage_step = [&](real_t dt, const real_t *dt_rows, real_t t, int step,\n"
        "                      bool with_err) -> nncc_status {\n";
  os.indent();
  os << "for (int s = 0; s < " << S << "; ++s) {\n";
  os.indent();
  os << "real_t *yin = s == 0 ? h : work + " << in << " * n;\n";
  os << "if (s > 0) {\n";
  os << "  OdeCombine c{};\n  c.nk = s;\n"
        "  for (int j = 0; j < s; ++j) c.a[j] = nncc::kernels::ode_a(ode_method, s, j);\n";
  os << "  " << check(op, "launch_ode_combine<real_t>(c, n, row_len, h, work, n, dt, dt_rows, "
                          "yin, (real_t *)NULL, stream)");
  os << "}\n";
  os << "if (nncc_status st_ = set_time(s, step, t, dt, nncc::kernels::ode_c(ode_method, s)))\n"
        "  return st_;\n";
  os << "if (nncc_status st_ = dyn(yin, work + (int64_t)s * n))\n  return st_;\n";
  os.unindent();
  os << "}\n";
  os << "OdeCombine c{};\nc.nk = " << S << ";\n";
  os << "for (int j = 0; j < " << S << "; ++j) {\n"
        "  c.a[j] = nncc::kernels::ode_b(ode_method, j);\n"
        "  c.e[j] = ode_method == nncc::kernels::OdeDopri5 ? nncc::kernels::ode_e(j) : 0.0;\n}\n";
  os << check(op, "launch_ode_combine<real_t>(c, n, row_len, h, work, n, dt, dt_rows, "
                  "with_err ? work + " +
                      std::to_string(in) + " * n : h, with_err ? work + " +
                      std::to_string(S + 1) + " * n : (real_t *)NULL, stream)");
  os << "return NNCC_OK;\n";
  os.unindent();
  os << "};\n";
  return success();
}

LogicalResult CudaEmitter::emitOdeSolve(raw_indented_ostream &os, nnk::ODESolveOp o) {
  Operation *op = o.getOperation();
  auto n = numel(op, cast<nnk::BufferType>(o.getOut().getType()));
  if (failed(n))
    return failure();
  nn::ODEMethod method = o.getMethod();
  int64_t steps = o.getSteps();
  if (method != nn::ODEMethod::dopri5 && steps < 1)
    return o.emitError("fixed-step ODE methods need steps >= 1");
  os << "{\n";
  os.indent();
  os << "// host loop: per stage the dynamics' launches + one fused combination kernel\n";
  os << "const int64_t n = " << *n << ", row_len = n; (void)row_len;\n";
  os << "real_t *h = " << name(o.getOut()) << ", *work = " << name(o.getWork()) << ";\n";
  os << "real_t *tbuf = (real_t *)" << takeScratch("sizeof(real_t)") << ";\n";
  os << "double *norm_d = (double *)" << takeScratch("sizeof(double)") << "; (void)norm_d;\n";
  os << "void *norm_ws = " << takeScratch("loss_scratch_bytes()") << "; (void)norm_ws;\n";
  os << check(op, "cudaMemcpyAsync(h, " + name(o.getH0()) +
                      ", n * sizeof(real_t), cudaMemcpyDeviceToDevice, stream)");
  os << "real_t tv0 = 0, tv1 = 0;\n";
  os << check(op, "cudaMemcpyAsync(&tv0, " + name(o.getT0()) +
                      ", sizeof(real_t), cudaMemcpyDeviceToHost, stream)");
  os << check(op, "cudaMemcpyAsync(&tv1, " + name(o.getT1()) +
                      ", sizeof(real_t), cudaMemcpyDeviceToHost, stream)");
  os << check(op, "cudaStreamSynchronize(stream)");
  // The time argument of the region is the scratch scalar itself.
  std::string tArg = "tbuf", hArg = local("ode_h"), dhArg = local("ode_dh");
  os << "real_t *" << hArg << " = NULL, *" << dhArg << " = NULL;\n";
  os << "auto dyn = [&](real_t *hin, real_t *kout) -> nncc_status {\n";
  os.indent();
  os << hArg << " = hin;\n" << dhArg << " = kout;\n";
  if (failed(emitRegion(os, o.getDynamics(), op, {tArg, hArg, dhArg})))
    return failure();
  os << "return NNCC_OK;\n";
  os.unindent();
  os << "};\n";
  os << "auto set_time = [&](int s, int step, real_t t, real_t dt, double c) -> nncc_status {\n"
        "  (void)s; (void)step;\n"
        "  nncc_gen_fill<real_t><<<1, 32, 0, stream>>>(1, (real_t)(t + (real_t)c * dt), tbuf);\n"
        "  "
     << check(op, "cudaGetLastError()") << "  return NNCC_OK;\n};\n";
  if (failed(emitOdeSteps(os, op, method)))
    return failure();
  if (steps > 0) {
    os << "const real_t dt = (tv1 - tv0) / (real_t)" << steps << ";\n";
    os << "for (int64_t step = 0; step < " << steps << "; ++step)\n";
    os << "  if (nncc_status st_ = stage_step(dt, (const real_t *)NULL, tv0 + (real_t)step * dt, "
          "(int)step, false))\n    return st_;\n";
  } else {
    os << "// adaptive dopri5: error norm reduced on the device, one double read back per step\n";
    os << "const double atol = " << fmtDouble(o.getAtol()) << ", rtol = " << fmtDouble(o.getRtol())
       << ";\n";
    os << "real_t t = tv0, dt = (real_t)nncc::kernels::ode_first_step((double)(tv1 - tv0));\n";
    os << "const bool up = tv1 > tv0;\n";
    os << "for (int64_t iter = 0; up ? t < tv1 : t > tv1; ++iter) {\n";
    os.indent();
    os << "if (iter >= nncc::kernels::kOdeMaxSteps)\n"
          "  return nncc_error_set(err, NNCC_ERROR_INTERNAL, \"%s: dopri5 took more than 1e6 steps "
          "(t = %g of %g)\", "
       << cString(launchComment(op)) << ", (double)t, (double)tv1);\n";
    os << "if (up ? t + dt > tv1 : t + dt < tv1)\n  dt = tv1 - t;\n";
    os << "if (nncc_status st_ = stage_step(dt, (const real_t *)NULL, t, (int)iter, true))\n"
          "  return st_;\n";
    os << check(op, "launch_ode_error_norm<real_t>(n, h, work + 7 * n, work + 8 * n, atol, "
                    "rtol, norm_ws, norm_d, stream)");
    os << "double norm = 0;\n";
    os << check(op, "cudaMemcpyAsync(&norm, norm_d, sizeof(double), cudaMemcpyDeviceToHost, "
                    "stream)");
    os << check(op, "cudaStreamSynchronize(stream)");
    os << "norm = sqrt(norm);\n";
    os << "if (!(norm == norm))\n"
          "  return nncc_error_set(err, NNCC_ERROR_INTERNAL, \"%s: dopri5 error norm is NaN at t "
          "= %g\", "
       << cString(launchComment(op)) << ", (double)t);\n";
    os << "if (nncc::kernels::ode_step_accepted(norm)) {\n";
    os << "  t += dt;\n";
    os << "  " << check(op, "cudaMemcpyAsync(h, work + 7 * n, n * sizeof(real_t), "
                            "cudaMemcpyDeviceToDevice, stream)");
    os << "}\n";
    os << "dt = (real_t)(dt * nncc::kernels::ode_step_factor(norm));\n";
    os.unindent();
    os << "}\n";
  }
  os.unindent();
  os << "}\n";
  return success();
}

LogicalResult CudaEmitter::emitOdeRnn(raw_indented_ostream &os, nnk::ODERNNOp o) {
  Operation *op = o.getOperation();
  auto tx = cast<nnk::BufferType>(o.getX().getType());
  auto B = dimExpr(op, tx.getDim(0)), Tn = dimExpr(op, tx.getDim(1)),
       I = dimExpr(op, tx.getDim(2));
  if (failed(B) || failed(Tn) || failed(I))
    return failure();
  int64_t H = o.getHiddenSize(), steps = o.getSteps();
  if (steps < 1)
    return o.emitError("the CUDA ODE-RNN needs a fixed number of steps per interval (steps "
                       ">= 1): adaptive per-row solves are not implemented");
  nn::ODEMethod method = o.getMethod();
  const int stages = kernels::ode_stages(static_cast<int>(method));
  int K = stages == 1 ? 2 : stages + 1;
  if (method == nn::ODEMethod::dopri5)
    K = 9;
  os << "{\n";
  os.indent();
  os << "// ODE-RNN: per observation a fixed-step solve with per-row dt, then the cell\n";
  os << "const int64_t B = " << *B << ", Tn = " << *Tn << ", I = " << *I << ", H = " << H
     << ";\n";
  os << "const int64_t n = B * H, row_len = H;\n";
  os << "real_t *work = " << name(o.getWork()) << ";\n";
  os << "real_t *h = work + " << K << " * n, *h_next = work + " << K + 1 << " * n;\n";
  os << "real_t *tb = (real_t *)" << takeScratch(*B + " * sizeof(real_t)") << ";\n";
  os << "real_t *dtb = (real_t *)" << takeScratch(*B + " * sizeof(real_t)") << ";\n";
  if (o.getH0())
    os << check(op, "cudaMemcpyAsync(h, " + name(o.getH0()) +
                        ", n * sizeof(real_t), cudaMemcpyDeviceToDevice, stream)");
  else
    os << check(op, "cudaMemsetAsync(h, 0, n * sizeof(real_t), stream)");
  // The time argument of the region is the per-row time buffer itself.
  std::string tArg = "tb", hArg = local("ode_h"), dhArg = local("ode_dh");
  os << "real_t *" << hArg << " = NULL, *" << dhArg << " = NULL;\n";
  os << "auto dyn = [&](real_t *hin, real_t *kout) -> nncc_status {\n";
  os.indent();
  os << hArg << " = hin;\n" << dhArg << " = kout;\n";
  if (failed(emitRegion(os, o.getDynamics(), op, {tArg, hArg, dhArg})))
    return failure();
  os << "return NNCC_OK;\n";
  os.unindent();
  os << "};\n";
  std::string xArg = local("cell_x"), chArg = local("cell_h"), coArg = local("cell_out");
  os << "real_t *" << xArg << " = " << name(o.getXt()) << ", *" << chArg << " = h, *" << coArg
     << " = h_next;\n";
  os << "auto cell = [&]() -> nncc_status {\n";
  os.indent();
  if (failed(emitRegion(os, o.getCell(), op, {xArg, chArg, coArg})))
    return failure();
  os << "return NNCC_OK;\n";
  os.unindent();
  os << "};\n";
  os << "int64_t obs = 0;\n";
  os << "auto set_time = [&](int s, int step, real_t t, real_t dt, double c) -> nncc_status {\n"
        "  (void)s; (void)t; (void)dt;\n"
        "  ode_rnn_times_kernel<real_t><<<grid_for(B, 256), 256, 0, stream>>>(B, Tn, obs, "
     << steps
     << ", (double)step + c, " << name(o.getTimes()) << ", dtb, tb);\n"
     << "  " << check(op, "cudaGetLastError()") << "  return NNCC_OK;\n};\n";
  if (failed(emitOdeSteps(os, op, method)))
    return failure();
  os << "for (obs = 0; obs < Tn; ++obs) {\n";
  os.indent();
  os << "if (obs > 0)\n";
  os << "  for (int step = 0; step < " << steps << "; ++step)\n";
  os << "    if (nncc_status st_ = stage_step((real_t)0, dtb, (real_t)0, step, false))\n"
        "      return st_;\n";
  os << "{ // x_t = x[:, obs, :]\n";
  os << "  CopyNd c{};\n  c.rank = 2;\n"
        "  c.shape[0] = B; c.dst_stride[0] = I; c.src_stride[0] = Tn * I;\n"
        "  c.shape[1] = I; c.dst_stride[1] = 1; c.src_stride[1] = 1;\n";
  os << "  " << check(op, "launch_copy_nd<real_t>(c, " + name(o.getXt()) + ", " +
                              name(o.getX()) + " + obs * I, stream)");
  os << "}\n";
  os << "if (nncc_status st_ = cell())\n  return st_;\n";
  os << check(op, "cudaMemcpyAsync(h, h_next, n * sizeof(real_t), cudaMemcpyDeviceToDevice, "
                  "stream)");
  os << "{ // hs[:, obs, :] = h\n";
  os << "  CopyNd c{};\n  c.rank = 2;\n"
        "  c.shape[0] = B; c.dst_stride[0] = Tn * H; c.src_stride[0] = H;\n"
        "  c.shape[1] = H; c.dst_stride[1] = 1; c.src_stride[1] = 1;\n";
  os << "  " << check(op, "launch_copy_nd<real_t>(c, " + name(o.getOut()) +
                              " + obs * H, h_next, stream)");
  os << "}\n";
  os.unindent();
  os << "}\n";
  os.unindent();
  os << "}\n";
  return success();
}

} // namespace

LogicalResult emitCuda(ModuleOp module, llvm::raw_ostream &os) {
  std::string text;
  llvm::raw_string_ostream ss(text);
  raw_indented_ostream ios(ss);
  CudaEmitter emitter(module);
  if (failed(emitter.emit(ios)))
    return failure();
  os << text;
  return success();
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
