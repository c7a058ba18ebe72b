//===- LaunchEmitter.cpp - the emitter core both targets share ------------===//
#include "LaunchEmitter.h"

#include "dialects/NNK/IR/NNKDialect.h"
#include "nncc/Target/Emitters.h"

using namespace mlir;

namespace nncc::target {

LaunchEmitter::LaunchEmitter(ModuleOp module, TargetKind target, Precision precision)
    : ModelEmitter(module), target(target), precision(precision) {
  DialectRegistry registry;
  registerKernelLaunchInterfaces(registry);
  module->getContext()->appendDialectRegistry(registry);
}

LogicalResult LaunchEmitter::emitLaunch(raw_indented_ostream &os, Operation *launch) {
  if (isa<nnk::AllocOp, nnk::WeightOp, nnk::BoundaryOp>(launch))
    return success();
  auto iface = dyn_cast<KernelLaunchOpInterface>(launch);
  if (!iface)
    return launch->emitError() << "the " << targetName() << " emitter cannot handle '"
                               << launch->getName()
                               << "': it is not an nnk compute op (no kernel launch)";
  // A bf16 library runs on CUDA only (the CPU entries report it), so only
  // the CUDA emitter asks.
  if (isBf16() && isCuda() && !iface.hasBf16Kernel())
    return launch->emitOpError()
           << "has no bf16 kernel: compile without --precision bf16 (f32 runs every op)";
  os << cComment(launchComment(launch)) << "\n";
  // The opt-in per-launch timer (NNCC_PROFILE, docs/runtime.md) around each
  // top-level launch of a library's functions; a region's launches are part
  // of their op's time.
  const bool timed = profileLaunches && !current.op;
  std::string t0 = "prof_t" + std::to_string(launchIndex.lookup(launch));
  if (timed)
    os << profileBegin(t0);
  // Regions (ODE dynamics, cells) print their own launches from inside.
  Current saved = current;
  current = {&os, launch};
  LogicalResult result = iface.emitLaunch(*this);
  current = saved;
  if (timed)
    os << profileEnd(t0, launchComment(launch));
  return result;
}

LogicalResult LaunchEmitter::emitLaunchSequence(raw_indented_ostream &os,
                                                ArrayRef<Operation *> ops,
                                                llvm::function_ref<void()> afterEach) {
  std::vector<std::string> texts;
  for (Operation *op : ops) {
    beginTopLevelLaunch();
    std::string text;
    llvm::raw_string_ostream ts(text);
    raw_indented_ostream t(ts);
    if (failed(emitLaunch(t, op)))
      return failure();
    if (afterEach)
      afterEach();
    if (!text.empty() && lossOnlyOps.contains(op)) {
      // Served without the inputs only the loss reads: not run.
      std::string guarded;
      llvm::raw_string_ostream gs(guarded);
      raw_indented_ostream g(gs);
      g << "if (nncc_ms_computes_loss(m)) {\n";
      g.indent();
      g << text;
      g.unindent();
      g << "}\n";
      text = std::move(guarded);
    }
    if (!text.empty())
      texts.push_back(std::move(text));
  }
  if (texts.size() <= kLaunchesPerChunk) {
    for (const std::string &text : texts)
      os << text;
    return success();
  }
  for (size_t first = 0; first < texts.size(); first += kLaunchesPerChunk) {
    const size_t last = std::min(texts.size(), first + kLaunchesPerChunk);
    os << "// Launches " << first << "-" << last - 1 << " of " << texts.size()
       << " (a function of their own: bounded host compile time).\n";
    os << "if (const nncc_status s_ = [&]() __attribute__((noinline)) -> nncc_status {\n";
    os.indent();
    for (size_t i = first; i < last; ++i)
      os << texts[i];
    os << "return NNCC_OK;\n";
    os.unindent();
    os << "}(); s_ != NNCC_OK)\n";
    os << "  return s_;\n";
  }
  return success();
}

std::string LaunchEmitter::profileBegin(const std::string &t0) {
  return "const double " + t0 + " = nncc_ms_prof_begin();\n";
}

std::string LaunchEmitter::profileEnd(const std::string &t0, const std::string &launch) {
  return "nncc_ms_prof_end(" + t0 + ", " + cString(launch) + ");\n";
}

LogicalResult LaunchEmitter::emitLaunchListing(llvm::raw_ostream &os) {
  if (failed(analyze()))
    return failure();
  return printIfEmitted(os, [&](raw_indented_ostream &listing) -> LogicalResult {
    for (func::FuncOp fn : {forward, train}) {
      if (!fn)
        continue;
      listing << "// launches of @" << fn.getSymName() << "\n";
      for (Operation &launch : fn.getBody().front().without_terminator()) {
        beginTopLevelLaunch();
        if (failed(emitLaunch(listing, &launch)))
          return failure();
      }
    }
    if (!generatedKernels.empty())
      listing << "// generated kernels\n" << generatedKernels;
    return success();
  });
}

LogicalResult printIfEmitted(llvm::raw_ostream &os,
                             llvm::function_ref<LogicalResult(raw_indented_ostream &)> emit) {
  std::string text;
  llvm::raw_string_ostream ss(text);
  raw_indented_ostream buffered(ss);
  if (failed(emit(buffered)))
    return failure();
  os << text;
  return success();
}

LogicalResult emitLaunches(ModuleOp module, TargetKind target, llvm::raw_ostream &os) {
  std::unique_ptr<LaunchEmitter> emitter = target == TargetKind::CPU
                                               ? createCppLaunchEmitter(module)
                                               : createCudaLaunchEmitter(module);
  return emitter->emitLaunchListing(os);
}

FailureOr<std::string> LaunchEmitter::dim(Value v, int64_t i) {
  nnk::BufferType t = bufferType(v);
  return dimExpr(op(), t.getDim(i < 0 ? t.getRank() + i : i));
}

FailureOr<std::string> LaunchEmitter::numel(Value v, int64_t from, int64_t to) {
  return ModelEmitter::numel(op(), bufferType(v), from, to);
}

FailureOr<Size> LaunchEmitter::dimSize(Value v, int64_t i) {
  nnk::BufferType t = bufferType(v);
  return ModelEmitter::dimSize(op(), t.getDim(i < 0 ? t.getRank() + i : i));
}

FailureOr<Size> LaunchEmitter::numelSize(Value v, int64_t from, int64_t to) {
  return ModelEmitter::numelSize(op(), bufferType(v), from, to);
}

FailureOr<SmallVector<std::string>> LaunchEmitter::shape(Value v) {
  SmallVector<std::string> dims;
  for (int64_t d = 0, r = bufferType(v).getRank(); d < r; ++d) {
    FailureOr<std::string> e = dim(v, d);
    if (failed(e))
      return failure();
    dims.push_back(*e);
  }
  return dims;
}

std::string LaunchEmitter::commaNames(ValueRange values) const {
  std::string s;
  for (Value v : values)
    s += (s.empty() ? "" : ", ") + name(v);
  return s;
}

void LaunchEmitter::call(const KernelCall &c) {
  std::string e = c.callee + "(";
  for (auto [i, a] : llvm::enumerate(c.args))
    e += (i ? ", " : "") + a;
  out() << checked(e + ")");
}

std::string LaunchEmitter::addGeneratedKernel(
    const std::string &base, const std::function<std::string(const std::string &)> &text) {
  std::string kernelName = base + std::to_string(numKernels++);
  generatedKernels += text(kernelName);
  return kernelName;
}

int LaunchEmitter::indexCheckCode() {
  int code = static_cast<int>(indexChecks.size()) + 1;
  indexChecks.push_back({code, launchComment(op())});
  return code;
}

LogicalResult LaunchEmitter::nameOdeGradRegions(nnk::ODESolveGradOp o,
                                                const std::string &prefix) {
  Block &dyn = o.getDynamics().front();
  Block &vjp = o.getVjp().front();
  if (dyn.getNumArguments() != 3 || vjp.getNumArguments() != 4 + o.getDparams().size())
    return o.emitError("nnk.ode_solve_grad: regions (t, h, dh) and (t, h, a, dh, dθ...)");
  const char *dynNames[] = {"t", "h", "dh"}, *vjpNames[] = {"vt", "vh", "va"};
  for (unsigned i = 0; i < 3; ++i) {
    names[dyn.getArgument(i)] = prefix + dynNames[i];
    names[vjp.getArgument(i)] = prefix + vjpNames[i];
  }
  return success();
}

LogicalResult LaunchEmitter::nameOdeGradRegions(nnk::ODERNNGradOp o, const std::string &prefix) {
  const int64_t nDyn = o.getNumDynamicsParams();
  const int64_t nCell = (int64_t)o.getDparams().size() - nDyn;
  Block &dyn = o.getDynamics().front();
  Block &dvjp = o.getDynamicsVjp().front();
  Block &cvjp = o.getCellVjp().front();
  if (nCell < 0 || dyn.getNumArguments() != 3 || dvjp.getNumArguments() != 4 + nDyn ||
      cvjp.getNumArguments() != 5 + nCell)
    return o.emitError("nnk.ode_rnn_grad: unexpected region signatures");
  const char *dynNames[] = {"t", "h", "dh"}, *vjpNames[] = {"vt", "vh", "va"},
             *cellNames[] = {"cx", "ch", "ca"};
  for (unsigned i = 0; i < 3; ++i) {
    names[dyn.getArgument(i)] = prefix + dynNames[i];
    names[dvjp.getArgument(i)] = prefix + vjpNames[i];
    names[cvjp.getArgument(i)] = prefix + cellNames[i];
  }
  return success();
}

FailureOr<std::string> LaunchEmitter::odeVjpDests(Block &body, unsigned nIn,
                                                  ArrayRef<std::string> direct,
                                                  const std::string &theta,
                                                  std::optional<Size> &total) {
  std::string prologue;
  Size offset = Size::constant(0);
  for (unsigned i = nIn; i < body.getNumArguments(); ++i) {
    BlockArgument arg = body.getArgument(i);
    unsigned k = i - nIn;
    std::string nm = theta + "_d" + std::to_string(k);
    names[arg] = nm;
    if (k < direct.size()) {
      prologue += "real_t *" + nm + " = " + direct[k] + "; (void)" + nm + ";\n";
      continue;
    }
    FailureOr<Size> sz = numelSize(arg);
    if (failed(sz))
      return failure();
    prologue += "real_t *" + nm + " = " + theta + " + (" + offset.str() + "); (void)" + nm + ";\n";
    offset = offset + *sz;
  }
  total = offset;
  return prologue;
}

FailureOr<SmallVector<LaunchEmitter::OdeParamSlice>>
LaunchEmitter::odeParamSlices(ValueRange dparams) {
  SmallVector<OdeParamSlice> slices;
  std::string off = "0";
  for (Value d : dparams) {
    FailureOr<std::string> sz = numel(d);
    if (failed(sz))
      return failure();
    slices.push_back({name(d), off, *sz});
    off += " + " + *sz;
  }
  return slices;
}

std::string LaunchEmitter::odeGradFailure(int64_t maxSteps, const std::string &deviceBranch) {
  return "if (rc_ != 0) {\n" + deviceBranch +
         "  if (rc_ < 0)\n"
         "    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, \"%s: %s%s\", " +
         cString(launchComment(op())) +
         ", nncc::grad::ode_grad_error_string(rc_), rc_ == nncc::grad::OdeGradTooManySteps "
         "? \" (max_steps = " +
         std::to_string(maxSteps) +
         ")\" : \"\");\n"
         "  return (nncc_status)rc_;\n"
         "}\n";
}

std::string LaunchEmitter::odeRnnArgs(nnk::ODERNNOp o, int64_t K, StringRef tcur) {
  return std::to_string(static_cast<int>(o.getMethod())) + ", " + std::to_string(o.getSteps()) +
         ", " + fmtDouble(o.getRtol()) + ", " + fmtDouble(o.getAtol()) + ", B, Tn, I, H, " +
         name(o.getX()) + ", " + name(o.getTimes()) + ", " + nameOr(o.getH0(), "const real_t *") +
         ", " + name(o.getOut()) + ", work, " + std::to_string(K) + ", " + name(o.getXt()) +
         ", delta, tprev, " + tcur.str() + ", dynamics, cell";
}

std::string LaunchEmitter::odeRnnGradArgs(nnk::ODERNNGradOp o) {
  return std::to_string(static_cast<int>(o.getMethod())) + ", " + std::to_string(o.getSteps()) +
         ", " + std::to_string(o.getMaxSteps()) + ", " + fmtDouble(o.getRtol()) + ", " +
         fmtDouble(o.getAtol()) + ", " + flag(o.getAdjoint()) + ", B, Tn, I, H, " +
         name(o.getX()) + ", " + name(o.getTimes()) + ", " + nameOr(o.getH0(), "const real_t *") +
         ", " + name(o.getHs()) + ", " + name(o.getDhs()) + ", " + name(o.getDx()) + ", " +
         name(o.getDh0()) + ", Pd, thacc_, Pc, phacc_, ws_, dynamics, dynvjp, cellvjp";
}

void LaunchEmitter::emitSharedHelpers(raw_indented_ostream &os, StringRef qual) {
  os << "// HuggingFace's bucket rule for LSH without given rotations.\n"
     << qual << " int64_t nncc_gen_lsh_buckets(int64_t T, int64_t chunk) {\n"
     << "  return nncc::kernels::lsh_num_buckets(T, chunk);\n}\n";
}

void registerKernelLaunchInterfaces(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, nnk::NNKDialect *) {
    attachTensorLaunches(*ctx);
    attachTokenLaunches(*ctx);
    attachLinearLaunches(*ctx);
    attachNormLaunches(*ctx);
    attachLossLaunches(*ctx);
    attachAttentionLaunches(*ctx);
    attachRecurrentLaunches(*ctx);
    attachElementwiseLaunches(*ctx);
    attachODELaunches(*ctx);
  });
}

SmallVector<std::string> seedAndOffset(LaunchEmitter &, int64_t seed, const std::string &draws) {
  return {"nncc_ms_rng_key(m, " + std::to_string(seed) + "ULL)",
          "nncc_ms_rng_offset(m, (uint64_t)(" + draws + "))"};
}
SmallVector<std::string> maskStream(LaunchEmitter &e, double p, int64_t seed,
                                    const std::string &draws) {
  SmallVector<std::string> args = {fmtDouble(p)};
  args.append(seedAndOffset(e, seed, draws));
  return args;
}

ArrayRef<std::pair<CudaHeader, const char *>> cudaHeaderPaths() {
  static const std::pair<CudaHeader, const char *> paths[] = {
      {CudaNorm, "nncc/Kernels/CUDA/Norm.cuh"},
      {CudaNormBackward, "nncc/Kernels/CUDA/NormBackward.cuh"},
      {CudaLoss, "nncc/Kernels/CUDA/Loss.cuh"},
      {CudaLossBackward, "nncc/Kernels/CUDA/LossBackward.cuh"},
      {CudaTensorBackward, "nncc/Kernels/CUDA/TensorBackward.cuh"},
      {CudaAttention, "nncc/Kernels/CUDA/Attention.cuh"},
      {CudaAttentionBackward, "nncc/Kernels/CUDA/AttentionBackward.cuh"},
      {CudaLshAttention, "nncc/Kernels/CUDA/LshAttention.cuh"},
      {CudaRecurrent, "nncc/Kernels/CUDA/Recurrent.cuh"},
      {CudaRecurrentBackward, "nncc/Kernels/CUDA/RecurrentBackward.cuh"},
      {CudaToken, "nncc/Kernels/CUDA/Token.cuh"},
      {CudaTokenBackward, "nncc/Kernels/CUDA/TokenBackward.cuh"},
      {CudaODE, "nncc/Kernels/CUDA/ODE.cuh"},
      {CudaLossHead, "nncc/Kernels/CUDA/LossHead.cuh"},
  };
  return paths;
}

} // namespace nncc::target
