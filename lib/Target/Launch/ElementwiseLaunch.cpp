//===- ElementwiseLaunch.cpp - fused elementwise groups, dropout -*- C++ -*-===//
//
// nnk.elementwise: the body (arith/math ops) is printed once per element by
// ModelEmitter::emitElementwiseBody. The CPU runs it in an OpenMP loop in
// place; on CUDA it becomes a generated grid-stride __global__ kernel that
// takes the bound dims it needs as parameters. nnk.dropout draws its mask
// from the op's random stream (seedAndOffset, LaunchEmitter.h).
//
//===----------------------------------------------------------------------===//
#include "../Common/LaunchEmitter.h"

using namespace mlir;

namespace nncc::target {
namespace {

/// `const T aK = inK[broadcast index];` for every input (a float one
/// widened to its arithmetic type by load_acc), the index arithmetic in
/// `indexType` when given (see broadcastIndex).
FailureOr<std::string> loadInputs(LaunchEmitter &e, nnk::ElementwiseOp o, Value out,
                                  llvm::function_ref<std::string(unsigned)> source,
                                  const std::string &indexType = "") {
  std::string loads;
  for (auto [k, in] : llvm::enumerate(o.getInputs())) {
    auto ct = e.cType(e.bufferType(in).getElementType());
    auto idx = e.broadcastIndex(e.op(), e.bufferType(in), e.bufferType(out), "i", indexType);
    if (failed(ct) || failed(idx))
      return failure();
    const std::string at = source(k) + "[" + *idx + "]";
    const bool real = *ct == "real_t";
    loads += "const " + (real ? e.kRealScalar : *ct) + " a" + std::to_string(k) + " = " +
             (real ? "load_acc(" + at + ")" : at) + ";\n";
  }
  return loads;
}

LogicalResult emitElementwise(LaunchEmitter &e, nnk::ElementwiseOp o) {
  Value out = o->getOperand(o->getNumOperands() - 1);
  auto n = e.numel(out);
  if (failed(n))
    return failure();
  if (!e.isCuda()) {
    // The buffers are bound to local pointers first: the generated step
    // functions are lambdas that capture them by reference, and a pointer
    // read through the closure inside the loop keeps GCC from vectorising
    // it (6x slower for GELU's backward over [B*T, 1024]). The names are
    // ones no buffer of the model can have.
    auto loads = loadInputs(e, o, out, [](unsigned k) { return "ewIn" + std::to_string(k); });
    auto outType = e.cType(e.bufferType(out).getElementType());
    if (failed(loads) || failed(outType))
      return failure();
    e.out() << "{\n";
    e.out().indent();
    e.out() << "const int64_t n = " << *n << ";\n";
    for (auto [k, in] : llvm::enumerate(o.getInputs())) {
      auto inType = e.cType(e.bufferType(in).getElementType());
      if (failed(inType))
        return failure();
      e.out() << "const " << *inType << " *const ewIn" << k << " = " << e.name(in) << ";\n";
    }
    e.out() << *outType << " *const ewOut = " << e.name(out) << ";\n";
    e.out() << "#pragma omp parallel for simd if (n > 16384)\n";
    e.out() << "for (int64_t i = 0; i < n; ++i) {\n";
    e.out().indent();
    e.out() << *loads;
    if (failed(e.emitElementwiseBody(e.out(), o, "ewOut", "i")))
      return failure();
    e.out().unindent();
    e.out() << "}\n";
    e.out().unindent();
    e.out() << "}\n";
    return success();
  }
  // A kernel template over the index type I: uint32_t when n fits in 31
  // bits (the usual case: the broadcast divisions and the loop in 32-bit
  // integer arithmetic, 64-bit division being a long software sequence on
  // the GPU), int64_t otherwise. Its parameters: n, every bound dim (d_*),
  // the inputs, the output.
  std::string params = "I n", args = "n_";
  for (const std::string &d : e.dims) {
    params += ", int64_t d_" + cIdentifier(d);
    args += ", d_" + cIdentifier(d);
  }
  for (auto [k, in] : llvm::enumerate(o.getInputs())) {
    auto ct = e.cType(e.bufferType(in).getElementType());
    if (failed(ct))
      return failure();
    params += ", const " + *ct + " *__restrict__ in" + std::to_string(k);
    args += ", " + e.name(in);
  }
  auto outType = e.cType(e.bufferType(out).getElementType());
  if (failed(outType))
    return failure();
  params += ", " + *outType + " *__restrict__ out";
  args += ", " + e.name(out);
  auto loads =
      loadInputs(e, o, out, [](unsigned k) { return "in" + std::to_string(k); }, "I");
  if (failed(loads))
    return failure();
  std::string body;
  {
    llvm::raw_string_ostream bs(body);
    raw_indented_ostream b(bs);
    b.indent();
    b.indent();
    b << *loads;
    if (failed(e.emitElementwiseBody(b, o, "out", "i")))
      return failure();
  }
  std::string comment = e.launchComment(o);
  std::string kernel = e.addGeneratedKernel("nncc_ew_", [&](const std::string &kernelName) {
    std::string k = cComment(comment) + "\ntemplate <typename I>\n__global__ void " + kernelName +
                    "(" + params + ") {\n";
    for (const std::string &d : e.dims)
      k += "  (void)d_" + cIdentifier(d) + ";\n";
    // i + the grid's stride stays below 2^32 for uint32_t: n < 2^31 and
    // grid_for caps the grid at 2^27 threads.
    k += "  for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n;\n"
         "       i += (I)gridDim.x * blockDim.x) {\n" +
         body + "  }\n}\n";
    return k;
  });
  e.out() << "if (const int64_t n_ = " << *n << "; n_ > 0) {\n";
  e.out().indent();
  e.out() << "if (n_ <= INT32_MAX)\n";
  e.out() << "  " << kernel << "<uint32_t><<<nncc::kernels::cuda::grid_for(n_, 256), 256, 0, "
          << "stream>>>(" << args << ");\n";
  e.out() << "else\n";
  e.out() << "  " << kernel << "<int64_t><<<nncc::kernels::cuda::grid_for(n_, 256), 256, 0, "
          << "stream>>>(" << args << ");\n";
  e.out() << e.checked("cudaGetLastError()");
  e.out().unindent();
  e.out() << "}\n";
  return success();
}

LogicalResult emitDropout(LaunchEmitter &e, nnk::DropoutOp o) {
  auto n = e.numel(o.getX());
  if (failed(n))
    return failure();
  SmallVector<std::string> args = {*n};
  args.append(maskStream(e, o.getP(), o.getSeed(), *n));
  args.append({e.name(o.getX()), e.name(o.getOut()), e.nameOr(o.getMask(), "uint8_t *")});
  if (!e.isCuda()) {
    e.call({"NNCC_KFN(nncc_dropout)", args});
    return success();
  }
  args.push_back("stream");
  e.out() << "if (" << *n << " > 0)\n  ";
  e.call({"launch_dropout<real_t>", args});
  return success();
}

} // namespace

void attachElementwiseLaunches(MLIRContext &ctx) {
  attachLaunch<nnk::ElementwiseOp, emitElementwise, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::DropoutOp, emitDropout, Bf16Kernel::Yes>(ctx);
}

} // namespace nncc::target
