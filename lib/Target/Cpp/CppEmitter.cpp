//===- CppEmitter.cpp - nnk -> host C++ (the CPU twin of every kernel) ----===//
//
// Prints <model>.cpp: the signature tables and buffer plan (ModelEmitter),
// then `forward_cpu`, one block per nnk op: a call into libnncc_kernels' C
// ABI, an OpenMP loop for nnk.elementwise, or a data-movement helper of
// libnncc_model_support. The float type is the single alias `real_t`
// (NNCC_PRECISION_F64 switches it and the kernel suffix to double / _f64).
//
//===----------------------------------------------------------------------===//
#include "nncc/Target/Emitters.h"

#include "CppEmitter.h"

using namespace mlir;

namespace nncc::target {
namespace {

/// What a generated host source includes; `when`: for which models.
/// hostPrelude() includes them all.
struct HostInclude {
  const char *header;
  enum When { Always, ODE, Training } when;
};
constexpr HostInclude kHostIncludes[] = {
    {"\"nncc/ModelSupport/ModelSupport.h\"", HostInclude::Always},
    {"\"nncc/Kernels/Bf16.h\"", HostInclude::Always},
    {"\"nncc/Kernels/Common.h\"", HostInclude::Always},
    {"\"nncc/Kernels/AttentionMath.h\"", HostInclude::Always},
    {"\"nncc/Kernels/Kernels.h\"", HostInclude::Always},
    {"\"nncc/Kernels/ODESolver.h\"", HostInclude::ODE},
    {"\"nncc/Kernels/GradKernels.h\"", HostInclude::Training},
    {"<vector>", HostInclude::Training},
    {"<math.h>", HostInclude::Always},
    {"<stdint.h>", HostInclude::Always},
    {"<string.h>", HostInclude::Always},
};

void emitPrecision(raw_indented_ostream &os) {
  os << "// The float type of every kernel: one alias, f64 and bf16 are switches\n"
        "// (compile with -DNNCC_PRECISION_F64 / _BF16; a bf16 library's CPU entries\n"
        "// report that it runs on CUDA only).\n"
        "#if defined(NNCC_PRECISION_F64)\n"
        "typedef double real_t;\n"
        "#define NNCC_REAL_DTYPE NNCC_DTYPE_F64\n"
        "#define NNCC_PRECISION \"f64\"\n"
        "#define NNCC_KFN(name) name##_f64\n"
        "#define NNCC_MS_REDUCE nncc_ms_reduce_f64\n"
        "#define NNCC_RNG_NORMAL nncc_rng_fill_normal_f64\n"
        "#elif defined(NNCC_PRECISION_BF16)\n"
        "typedef nncc::kernels::bf16_t real_t;\n"
        "#define NNCC_REAL_DTYPE NNCC_DTYPE_BF16\n"
        "#define NNCC_PRECISION \"bf16\"\n"
        "#else\n"
        "typedef float real_t;\n"
        "#define NNCC_REAL_DTYPE NNCC_DTYPE_F32\n"
        "#define NNCC_PRECISION \"f32\"\n"
        "#define NNCC_KFN(name) name##_f32\n"
        "#define NNCC_MS_REDUCE nncc_ms_reduce_f32\n"
        "#define NNCC_RNG_NORMAL nncc_rng_fill_normal_f32\n"
        "#endif\n"
        "using nncc::kernels::acc_t;\n"
        "using nncc::kernels::load_acc;\n"
        "using nncc::kernels::store_acc;\n"
        "#ifndef NNCC_MODEL_EXPORT\n"
        "#define NNCC_MODEL_EXPORT __attribute__((visibility(\"default\")))\n"
        "#endif\n\n";
}

} // namespace

LogicalResult CppEmitter::emit(raw_indented_ostream &os, bool withCuda) {
  if (failed(analyze()))
    return failure();
  // Print the launch sequence first: it adds workspace buffers to the plan.
  profileLaunches = true;
  std::string fwd;
  {
    llvm::raw_string_ostream fs(fwd);
    raw_indented_ostream f(fs);
    f << "static nncc_status forward_cpu(nncc_model *m, nncc_error *err) {\n";
    f.indent();
    if (!planOnly && failed(emitForwardPrologue(f)))
      return failure();
    SmallVector<Operation *> ops;
    if (!trainingOnly)
      for (Operation &op : forward.getBody().front().without_terminator())
        ops.push_back(&op);
    if (failed(emitLaunchSequence(f, ops)))
      return failure();
    f << "return NNCC_OK;\n";
    f.unindent();
    f << "}\n";
    if (train) {
      auto [fwdTrain, bwd] = trainHalves();
      for (int half = 0; half < 2; ++half) {
        f << (half == 0 ? "static nncc_status forward_train_cpu(nncc_model *m, nncc_error *err) {\n"
                        : "static nncc_status backward_cpu(nncc_model *m, nncc_error *err) {\n");
        f.indent();
        if (!planOnly && failed(emitForwardPrologue(f, train)))
          return failure();
        if (failed(emitLaunchSequence(f, half == 0 ? fwdTrain : bwd)))
          return failure();
        f << "return NNCC_OK;\n";
        f.unindent();
        f << "}\n";
      }
    }
  }
  if (planOnly)
    return success();
  // bf16 has no CPU kernels: the sequence above only planned the CPU
  // workspaces (the arena is the same plan on both targets).
  if (isBf16()) {
    fwd.clear();
    llvm::raw_string_ostream fs(fwd);
    const std::string why =
        cString("'" + modelName + "' was compiled with --precision bf16, which runs on CUDA only");
    for (const char *fn : {"forward_cpu", "forward_train_cpu", "backward_cpu"}) {
      if (!train && llvm::StringRef(fn) != "forward_cpu")
        continue;
      fs << "static nncc_status " << fn << "(nncc_model *m, nncc_error *err) {\n"
         << "  (void)m;\n  return nncc_error_set(err, NNCC_ERROR_UNSUPPORTED, \"%s\", " << why
         << ");\n}\n";
    }
  }

  os << "// Generated by nncc from model '" << modelName
     << "': host C++ (the CPU launch sequence) and the C ABI of nncc_model.h.\n"
     << "// Do not edit; regenerate with `nncc compile`.\n";
  for (const HostInclude &inc : kHostIncludes)
    if (inc.when == HostInclude::Always || (inc.when == HostInclude::ODE && needsODE) ||
        (inc.when == HostInclude::Training && train))
      os << "#include " << inc.header << "\n";
  os << "\n";
  emitPrecision(os);
  os << "#define NNCC_GEN_CHECK(call, what)                                   \\\n"
        "  do {                                                               \\\n"
        "    int rc_ = (call);                                                \\\n"
        "    if (rc_ != 0)                                                    \\\n"
        "      return nncc_ms_kernel_status(rc_, what, err);                  \\\n"
        "  } while (0)\n\n";
  os << "namespace {\n";
  emitMathPrelude(os, "static inline", /*hostPolynomials=*/true);
  emitSharedHelpers(os, "static inline");
  os << "} // namespace\n\n";
  if (failed(emitTables(os, withCuda)))
    return failure();
  os << "// ---- the CPU launch sequence ----\n";
  os << fwd;
  return success();
}

std::unique_ptr<LaunchEmitter> createCppLaunchEmitter(ModuleOp module) {
  return std::make_unique<CppEmitter>(module);
}

LogicalResult emitCpp(ModuleOp module, llvm::raw_ostream &os, bool withCuda,
                      Precision precision) {
  CppEmitter emitter(module, precision);
  return printIfEmitted(os,
                        [&](raw_indented_ostream &out) { return emitter.emit(out, withCuda); });
}

std::string hostPrelude() {
  std::string text = "// Every header a source of nncc's C++ emitter may include.\n";
  for (const HostInclude &inc : kHostIncludes)
    text += std::string("#include ") + inc.header + "\n";
  return text;
}

LogicalResult withCpuBufferPlan(ModuleOp module,
                                llvm::function_ref<LogicalResult(const ModelEmitter &)> use,
                                bool trainingOnly) {
  CppEmitter emitter(module);
  emitter.planBuffersOnly(trainingOnly);
  raw_indented_ostream os(llvm::nulls());
  if (failed(emitter.emit(os, /*withCuda=*/false)))
    return failure();
  return use(emitter);
}

} // namespace nncc::target
