//===- Compile.cpp - nnk module -> sources -> lib<model>.so ---------------===//
#include "nncc/Target/Compile.h"
#include "nncc/Target/Config.h"
#include "nncc/Target/Emitters.h"

#include "Common/ModelEmitter.h"

#include "dialects/NN/IR/NNAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;

#ifndef NNCC_COMPILER_VERSION
#define NNCC_COMPILER_VERSION "0.1.0"
#endif

namespace nncc {

RuntimeLocation runtimeLocation() {
  // An installed nncc: <prefix>/bin/nncc beside <prefix>/include/nncc and
  // <prefix>/lib/libnncc_kernels.so. The build tree has no include/nncc
  // runtime headers under build/, so it falls through to the configured paths.
  std::string exe = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  if (!exe.empty()) {
    llvm::SmallString<256> prefix(llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
    llvm::SmallString<256> include(prefix), lib(prefix);
    llvm::sys::path::append(include, NNCC_INSTALL_INCLUDE_DIR);
    llvm::sys::path::append(lib, NNCC_INSTALL_LIB_DIR);
    if (llvm::sys::fs::exists(include + "/nncc/Runtime/nncc_model.h") &&
        llvm::sys::fs::exists(lib + "/libnncc_kernels.so"))
      return {std::string(include), std::string(lib)};
  }
  return {NNCC_RUNTIME_INCLUDE_DIR, NNCC_BUILD_LIB_DIR};
}

namespace {

/// An error about the build of `module`, located at the model's source
/// (module.emitError would attach the whole module to the message).
InFlightDiagnostic buildError(ModuleOp module) { return mlir::emitError(module.getLoc()); }

LogicalResult writeFile(ModuleOp module, const std::string &path, llvm::StringRef text) {
  std::error_code ec;
  llvm::raw_fd_ostream file(path, ec);
  if (ec)
    return buildError(module)
           << "cannot write '" << path << "': " << ec.message();
  file << text;
  return success();
}

/// Runs argv[0] (searched in PATH when not absolute); on failure reports
/// the command line and its output. `output` receives stdout and stderr.
LogicalResult run(ModuleOp module, llvm::ArrayRef<std::string> argv, llvm::StringRef what,
                  std::string *captured = nullptr) {
  std::string program = argv[0];
  if (!llvm::sys::path::is_absolute(program)) {
    auto found = llvm::sys::findProgramByName(program);
    if (!found)
      return buildError(module)
             << "cannot " << what << ": '" << program << "' not found in PATH";
    program = *found;
  }
  llvm::SmallString<128> log;
  llvm::sys::fs::createTemporaryFile("nncc-build", "log", log);
  llvm::SmallVector<llvm::StringRef> args(argv.begin(), argv.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                               llvm::StringRef(log)};
  std::string errMsg;
  int rc = llvm::sys::ExecuteAndWait(program, args, std::nullopt, redirects, 0, 0, &errMsg);
  std::string output;
  if (auto buf = llvm::MemoryBuffer::getFile(log))
    output = (*buf)->getBuffer().str();
  llvm::sys::fs::remove(log);
  if (captured)
    *captured = output;
  if (rc == 0)
    return success();
  std::string cmd;
  for (const std::string &a : argv)
    cmd += (cmd.empty() ? "" : " ") + a;
  if (output.size() > 8000)
    output = output.substr(0, 8000) + "\n... (output truncated)";
  return buildError(module)
         << "cannot " << what << ": the command failed (exit " << rc
         << (errMsg.empty() ? "" : ", " + errMsg) << "):\n  " << cmd << "\n"
         << output;
}

/// The shared libraries `library` loads that a machine with only a driver
/// may lack, as (soname, resolved path): what `ldd` resolves, except the C
/// and C++ runtimes and the CUDA libraries (the driver's, the toolkit's).
FailureOr<std::vector<std::pair<std::string, std::string>>>
bundledDependencies(ModuleOp module, const std::string &library) {
  std::string listing;
  if (failed(run(module, {"ldd", library}, "list the libraries of " + library, &listing)))
    return failure();
  static const char *system[] = {"linux-vdso", "ld-linux", "libc.so",  "libm.so",
                                 "libdl.so",   "libpthread.so", "librt.so", "libstdc++.so",
                                 "libgcc_s.so", "libcuda.so", "libcublas", "libcudart"};
  std::vector<std::pair<std::string, std::string>> deps;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(listing).split(lines, '\n');
  for (llvm::StringRef line : lines) {
    auto [name, rest] = line.trim().split(" => ");
    if (rest.empty() || llvm::any_of(system, [&](const char *s) { return name.starts_with(s); }))
      continue;
    if (rest.starts_with("not found"))
      return buildError(module)
             << "cannot bundle lib" << target::modelIdentifier(module)
             << ".so: " << name << " is not found on this machine";
    deps.push_back({name.str(), rest.split(" (").first.str()});
  }
  return deps;
}

/// `nncc compile --bundle`: makes the output directory self-contained. It
/// copies in what lib<model>.so loads beyond the C/C++ runtime and CUDA (the
/// nncc runtime and kernel libraries, OpenBLAS and its Fortran runtime,
/// OpenMP), relinks the library with RUNPATH $ORIGIN and those libraries as
/// direct dependencies (`relink`), and adds nncc-runner and the ABI headers.
LogicalResult makeBundle(ModuleOp module, const CompileArtifacts &out,
                         const RuntimeLocation &runtime,
                         llvm::function_ref<LogicalResult(const std::vector<std::string> &)> relink) {
  std::string dir = llvm::sys::path::parent_path(out.libraryPath).str();
  FailureOr<std::vector<std::pair<std::string, std::string>>> deps =
      bundledDependencies(module, out.libraryPath);
  if (failed(deps))
    return failure();
  auto copy = [&](const std::string &from, const std::string &to) -> LogicalResult {
    if (std::error_code ec = llvm::sys::fs::copy_file(from, to))
      return buildError(module) << "cannot bundle '" << from << "' as '" << to
                                << "': " << ec.message();
    llvm::sys::fs::setPermissions(to, llvm::sys::fs::perms(0755));
    return success();
  };
  std::vector<std::string> preload;
  for (auto &[soname, resolved] : *deps) {
    if (failed(copy(resolved, dir + "/" + soname)))
      return failure();
    preload.push_back(soname);
  }
  if (failed(relink(preload)))
    return failure();
  std::string bin = llvm::sys::path::parent_path(runtime.libDir).str() + "/bin/nncc-runner";
  if (failed(copy(bin, dir + "/nncc-runner")))
    return failure();
  std::string headers = dir + "/include/nncc/Runtime";
  if (std::error_code ec = llvm::sys::fs::create_directories(headers))
    return buildError(module)
           << "cannot create '" << headers << "': " << ec.message();
  for (const char *h : {"nncc_model.h", "nncc_runtime.h"})
    if (failed(copy(runtime.includeDir + "/nncc/Runtime/" + h, headers + "/" + h)))
      return failure();
  return success();
}

/// "path:size:mtime" of a file, the cache keys' stamp of a compiler, library
/// or header; empty when it cannot be read.
std::string fileStamp(const std::string &path) {
  llvm::sys::fs::file_status st;
  if (llvm::sys::fs::status(path, st))
    return "";
  return path + ":" + std::to_string(st.getSize()) + ":" +
         std::to_string(st.getLastModificationTime().time_since_epoch().count());
}

/// `cxx` resolved through PATH and symlinks; empty when not found.
std::string resolvedProgram(const std::string &cxx) {
  std::string program = cxx;
  if (!llvm::sys::path::is_absolute(program)) {
    auto found = llvm::sys::findProgramByName(program);
    if (!found)
      return "";
    program = *found;
  }
  llvm::SmallString<256> real;
  if (llvm::sys::fs::real_path(program, real))
    return "";
  return std::string(real);
}

/// Removes the precompiled preludes in `pchDir` beyond the newest few, and
/// abandoned builds; only those untouched for an hour, so that no running
/// compile loses the prelude it chose.
void prunePreludes(const std::string &pchDir) {
  constexpr size_t kKept = 6;
  auto hourAgo = std::chrono::system_clock::now() - std::chrono::hours(1);
  std::vector<std::pair<llvm::sys::TimePoint<>, std::string>> dirs;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(pchDir, ec), end; !ec && it != end;
       it.increment(ec)) {
    llvm::sys::fs::file_status st;
    if (llvm::sys::fs::status(it->path(), st) || st.type() != llvm::sys::fs::file_type::directory_file)
      continue;
    dirs.push_back({st.getLastModificationTime(), it->path()});
  }
  std::sort(dirs.begin(), dirs.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
  size_t kept = 0;
  for (const auto &[time, path] : dirs) {
    bool abandoned = llvm::sys::path::filename(path).starts_with("tmp-");
    if (!abandoned && kept < kKept) {
      ++kept;
      continue;
    }
    if (time < hourAgo)
      llvm::sys::fs::remove_directories(path);
  }
}

/// The precompiled prelude (target::hostPrelude()) for a GCC host compile
/// with `flags`: the header to pass to -include, its .gch beside it, built
/// on first use in pchDir/<key>. The key covers the compiler binary, the
/// flags and compilerFingerprint() (the runtime headers' sizes and times),
/// so any change gets a new one. Empty when none can be used (no pchDir,
/// another compiler, a failed build): the compile then parses the headers.
/// Built in a private directory and renamed into place, like the compile
/// cache, so concurrent compiles are safe.
std::string precompiledPrelude(const std::string &cxx, llvm::ArrayRef<std::string> flags,
                               const std::string &pchDir) {
  if (pchDir.empty())
    return "";
  // GCC's driver (g++, or c++ and versioned names that resolve to it):
  // the prelude is GCC's .gch format.
  std::string program = resolvedProgram(cxx);
  llvm::StringRef name = llvm::sys::path::filename(program);
  if (!name.contains("g++") || name.contains("clang"))
    return "";
  std::string compilerStamp = fileStamp(program);
  if (compilerStamp.empty())
    return "";
  llvm::SHA256 h;
  h.update(compilerStamp);
  for (const std::string &f : flags) {
    h.update(llvm::StringRef("\0", 1));
    h.update(f);
  }
  h.update(llvm::StringRef("\0", 1));
  h.update(compilerFingerprint());
  std::string key = llvm::toHex(h.final(), /*LowerCase=*/true).substr(0, 32);
  std::string dir = pchDir + "/" + key;
  std::string prelude = dir + "/prelude.h";
  if (llvm::sys::fs::exists(prelude + ".gch"))
    return prelude;
  llvm::SmallString<256> tmp;
  if (llvm::sys::fs::create_directories(pchDir) ||
      llvm::sys::fs::createUniqueDirectory(pchDir + "/tmp-" + key, tmp))
    return "";
  std::string tmpPrelude = std::string(tmp) + "/prelude.h";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(tmpPrelude, ec);
    if (!ec)
      os << target::hostPrelude();
  }
  llvm::SmallVector<llvm::StringRef> args = {program};
  args.append(flags.begin(), flags.end());
  std::string gch = tmpPrelude + ".gch";
  args.append({"-x", "c++-header", tmpPrelude, "-o", gch});
  std::optional<llvm::StringRef> quiet[] = {llvm::StringRef(""), llvm::StringRef(""),
                                           llvm::StringRef("")};
  if (llvm::sys::ExecuteAndWait(program, args, std::nullopt, quiet) != 0 ||
      !llvm::sys::fs::exists(gch)) {
    llvm::sys::fs::remove_directories(tmp);
    return "";
  }
  if (llvm::sys::fs::rename(tmp, dir)) {
    // Another compile built the same prelude first: use that one.
    llvm::sys::fs::remove_directories(tmp);
    return llvm::sys::fs::exists(prelude + ".gch") ? prelude : "";
  }
  prunePreludes(pchDir);
  return prelude;
}

} // namespace

namespace {

/// The CUDA compiler compileModel uses: the caller's, else $NNCC_NVCC, else
/// configure's; empty when none is executable.
std::string resolvedNvcc(const CompileOptions &opts) {
  std::string nvcc = opts.nvcc;
  if (const char *env = std::getenv("NNCC_NVCC"); nvcc.empty() && env && *env)
    nvcc = env;
  if (nvcc.empty())
    nvcc = NNCC_NVCC_PATH;
  if (!nvcc.empty() && !llvm::sys::fs::can_execute(nvcc))
    nvcc.clear();
  return nvcc;
}

} // namespace

LogicalResult emitModelSources(ModuleOp module, const CompileOptions &opts,
                               ModelSources &out) {
  out.modelName = target::modelIdentifier(module);
  bool wantCuda = opts.cuda != CudaCode::None;
  bool haveNvcc = !resolvedNvcc(opts).empty();
  if (opts.cuda == CudaCode::Required && !haveNvcc && opts.build)
    return buildError(module)
           << "--target cuda needs nvcc, which was not found (CUDA toolkit "
              "at /usr/local/cuda); use --target cpu";
  out.withCuda = wantCuda && (haveNvcc || !opts.build);
  if (opts.precision == Precision::BF16 && !out.withCuda)
    return mlir::emitError(module.getLoc(),
                           opts.cuda == CudaCode::None
                                ? "--precision bf16 runs on CUDA only (there are no CPU bf16 "
                                  "kernels): use --target cuda"
                                : "--precision bf16 runs on CUDA only, and nvcc was not found");
  auto emitInto = [](std::string &text,
                     llvm::function_ref<LogicalResult(llvm::raw_ostream &)> emit) {
    text.clear();
    llvm::raw_string_ostream os(text);
    return emit(os);
  };
  if (failed(emitInto(out.cpp, [&](llvm::raw_ostream &os) {
        return target::emitCpp(module, os, out.withCuda, opts.precision);
      })) ||
      failed(emitInto(out.header, [&](llvm::raw_ostream &os) {
        return target::emitHeader(module, os);
      })))
    return failure();
  out.cuda.clear();
  if (out.withCuda && failed(emitInto(out.cuda, [&](llvm::raw_ostream &os) {
        return target::emitCuda(module, os, opts.precision);
      })))
    return failure();
  return success();
}

LogicalResult compileModel(ModuleOp module, const CompileOptions &opts,
                           CompileArtifacts &out) {
  ModelSources sources;
  if (failed(emitModelSources(module, opts, sources)))
    return failure();
  return buildModel(module, sources, opts, out);
}

/// Compiles `cuPath` to the object `obj` with nvcc; returns the CUDA
/// toolkit's lib64 beside nvcc.
static FailureOr<std::string> compileCudaSource(ModuleOp module, const CompileOptions &opts,
                                                const std::string &nvcc,
                                                const std::string &optFlag,
                                                const std::string &precisionDefine,
                                                const RuntimeLocation &runtime,
                                                const std::string &cuPath,
                                                const std::string &obj) {
  std::vector<std::string> argv = {nvcc, "-std=c++17", optFlag, "-arch=" + opts.cudaArch,
                                   "-Xcompiler", "-fPIC,-fvisibility=hidden"};
  if (!precisionDefine.empty())
    argv.push_back(precisionDefine);
  argv.insert(argv.end(), {"-I", runtime.includeDir, "-c", cuPath, "-o", obj});
  if (failed(run(module, argv, "compile the CUDA source with nvcc")))
    return failure();
  llvm::SmallString<256> cudaRoot(llvm::sys::path::parent_path(
      llvm::sys::path::parent_path(nvcc)));
  llvm::sys::path::append(cudaRoot, "lib64");
  return std::string(cudaRoot);
}

/// The host source's compile flags. -fno-trapping-math: generated loops
/// call the kernels' branch-free exp and tanh; it lets them vectorise and
/// changes no result (docs/kernels.md).
static std::vector<std::string> hostCompileFlags(const std::string &optFlag,
                                                 const std::string &precisionDefine,
                                                 const RuntimeLocation &runtime) {
  std::vector<std::string> flags = {"-std=c++17", optFlag, "-fno-trapping-math", "-fPIC",
                                    "-fopenmp", "-fvisibility=hidden"};
  if (llvm::StringRef(NNCC_HOST_MARCH).size())
    flags.push_back(std::string("-march=") + NNCC_HOST_MARCH);
  if (!precisionDefine.empty())
    flags.push_back(precisionDefine);
  flags.insert(flags.end(), {"-I", runtime.includeDir});
  return flags;
}

LogicalResult buildModel(ModuleOp module, const ModelSources &sources,
                         const CompileOptions &opts, CompileArtifacts &out) {
  const std::string &model = sources.modelName;
  out.modelName = model;
  if (std::error_code ec = llvm::sys::fs::create_directories(opts.outputDir))
    return buildError(module)
           << "cannot create '" << opts.outputDir << "': " << ec.message();
  llvm::SmallString<256> dir(opts.outputDir);
  llvm::sys::fs::make_absolute(dir);
  auto path = [&](llvm::StringRef name) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  };
  const bool withCuda = sources.withCuda;
  const std::string nvcc = resolvedNvcc(opts);
  out.cppPath = path(model + ".cpp");
  out.headerPath = path(model + ".h");
  if (failed(writeFile(module, out.cppPath, sources.cpp)) ||
      failed(writeFile(module, out.headerPath, sources.header)))
    return failure();
  if (withCuda) {
    out.cuPath = path(model + ".cu");
    if (failed(writeFile(module, out.cuPath, sources.cuda)))
      return failure();
  }
  if (!opts.build)
    return success();

  std::string cxx = opts.hostCompiler;
  if (cxx.empty()) {
    const char *env = std::getenv("CXX");
    cxx = env && *env ? env : "c++";
  }
  RuntimeLocation runtime = runtimeLocation();
  const std::string &libDir = runtime.libDir;
  std::vector<std::string> objects;
  std::string cudaLib;
  if (opts.optLevel < 0 || opts.optLevel > 3)
    return buildError(module) << "optimisation level " << opts.optLevel
                              << " out of range: expected 0, 1, 2 or 3";
  const std::string optFlag = "-O" + std::to_string(opts.optLevel);
  // real_t of both translation units (the sources are precision-neutral).
  const std::string precisionDefine =
      opts.precision == Precision::F32
          ? ""
          : std::string("-DNNCC_PRECISION_") + (opts.precision == Precision::F64 ? "F64" : "BF16");
  if (withCuda) {
    std::string obj = path(model + ".cu.o");
    FailureOr<std::string> lib64 = compileCudaSource(module, opts, nvcc, optFlag,
                                                     precisionDefine, runtime, out.cuPath, obj);
    if (failed(lib64))
      return failure();
    objects.push_back(obj);
    cudaLib = *lib64;
    out.builtCuda = true;
  }
  out.libraryPath = path("lib" + model + ".so");
  std::vector<std::string> hostFlags = hostCompileFlags(optFlag, precisionDefine, runtime);
  std::string prelude = precompiledPrelude(cxx, hostFlags, opts.pchDir);
  // The link. `rpaths`: where the runtime libraries are found when the
  // library loads (the build's or install's lib/, or $ORIGIN in a bundle);
  // `preload`: libraries of the bundle recorded as direct dependencies, so
  // that the loader finds them beside lib<model>.so (through its RUNPATH)
  // before the runtime libraries ask for them.
  auto link = [&](const std::vector<std::string> &searchDirs,
                  const std::vector<std::string> &rpaths,
                  const std::vector<std::string> &preload) {
    std::vector<std::string> argv = {cxx};
    argv.insert(argv.end(), hostFlags.begin(), hostFlags.end());
    if (!prelude.empty())
      argv.insert(argv.end(), {"-include", prelude});
    argv.insert(argv.end(), {"-shared", out.cppPath});
    argv.insert(argv.end(), objects.begin(), objects.end());
    argv.insert(argv.end(), {"-o", out.libraryPath, "-Wl,-soname,lib" + model + ".so",
                             "-Wl,--exclude-libs,ALL"});
    for (const std::string &dir : searchDirs)
      argv.push_back("-L" + dir);
    argv.insert(argv.end(), {"-lnncc_model_support", "-lnncc_kernels", "-lnncc_runtime"});
    for (const std::string &dir : rpaths)
      argv.push_back("-Wl,-rpath," + dir);
    llvm::StringRef blas = NNCC_OPENBLAS_LIBRARY;
    if (!blas.empty() && preload.empty()) {
      argv.push_back(blas.str());
      argv.push_back("-Wl,-rpath," + llvm::sys::path::parent_path(blas).str());
    }
    if (!preload.empty()) {
      argv.push_back("-Wl,--no-as-needed");
      for (const std::string &soname : preload)
        argv.push_back("-l:" + soname);
      argv.push_back("-Wl,--as-needed");
    }
    if (withCuda) {
      // cudart statically (it loads libcuda itself when first used, so the
      // library loads on machines without a driver); cuBLAS and cuBLASLt
      // (the fused GEMM epilogues) dynamically.
      argv.insert(argv.end(), {"-L" + cudaLib, "-lcublasLt", "-lcublas", "-lcudart_static",
                               "-ldl", "-lrt", "-lpthread", "-Wl,-rpath," + cudaLib});
    }
    return run(module, argv, "build lib" + model + ".so");
  };
  if (failed(link({libDir}, {libDir}, {})))
    return failure();
  return opts.bundle ? makeBundle(module, out, runtime, [&](const std::vector<std::string> &preload) {
    return link({opts.outputDir, libDir}, {"$ORIGIN"}, preload);
  }) : success();
}

namespace {
std::string dtypeName(Type t) {
  if (t.isF32())
    return "F32";
  if (t.isF64())
    return "F64";
  if (t.isF16())
    return "F16";
  if (t.isBF16())
    return "BF16";
  if (t.isInteger(1))
    return "BOOL";
  if (t.isInteger(32))
    return "I32";
  if (t.isInteger(64))
    return "I64";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

std::vector<std::string> dimStrings(llvm::ArrayRef<nncc::Dim> dims) {
  std::vector<std::string> out;
  for (nncc::Dim d : dims)
    out.push_back(d.isStatic() ? std::to_string(d.getSize())
                  : d.isSymbolic() ? d.getSymbol().getValue().str()
                                   : "?");
  return out;
}

/// The input role the front end recorded (`nn.role`); Data without one.
void setRole(nn::InputRoleAttr role, TensorSignature &sig) {
  if (!role)
    return;
  switch (role.getKind()) {
  case nn::InputRoleKind::token_ids:
    sig.role = InputRole::TokenIds;
    break;
  case nn::InputRoleKind::class_targets:
    sig.role = InputRole::ClassTargets;
    break;
  case nn::InputRoleKind::binary_targets:
    sig.role = InputRole::BinaryTargets;
    break;
  case nn::InputRoleKind::lengths:
    sig.role = InputRole::Lengths;
    break;
  case nn::InputRoleKind::times:
    sig.role = InputRole::Times;
    break;
  case nn::InputRoleKind::mask:
    sig.role = InputRole::Mask;
    break;
  }
  if (role.getSize() > 0)
    sig.limit = std::to_string(role.getSize());
  else if (role.getSymbol())
    sig.limit = role.getSymbol().getValue().str();
}
/// The ignore_index of every cross-entropy in `module` (the target values
/// that count as no target).
std::vector<int64_t> ignoredTargets(ModuleOp module) {
  std::vector<int64_t> values;
  module.walk([&](Operation *op) {
    if (auto a = op->getAttrOfType<IntegerAttr>("ignore_index"))
      if (llvm::find(values, a.getInt()) == values.end())
        values.push_back(a.getInt());
  });
  return values;
}
} // namespace

std::string DimRange::rejection(llvm::StringRef name, int64_t size) const {
  if (size < min)
    return (name + " = " + llvm::Twine(size) + " is below " + llvm::Twine(min) +
            ", the smallest the model serves (" + minWhy + ")")
        .str();
  if (max >= 0 && size > max)
    return (name + " = " + llvm::Twine(size) + " is above " + llvm::Twine(max) +
            ", the largest the model serves (" + maxWhy + ")")
        .str();
  return "";
}

FailureOr<ModelSignature> getSignature(ModuleOp module) {
  target::ModelEmitter e(module);
  if (failed(e.analyze()))
    return failure();
  ModelSignature sig;
  sig.model = e.modelName;
  sig.dims = e.dims;
  sig.dimRanges = e.dimRanges;
  Block &body = e.forward.getBody().front();
  size_t in = 0;
  for (BlockArgument arg : body.getArguments()) {
    bool isOut = e.forward.getArgAttr(arg.getArgNumber(), "nnk.output") != nullptr;
    if (isOut)
      continue;
    const target::TensorSig &t = e.inputs[in++];
    TensorSignature ts{t.name, dtypeName(t.type.getElementType()), dimStrings(t.type.getDims())};
    setRole(e.forward.getArgAttrOfType<nn::InputRoleAttr>(arg.getArgNumber(), "nn.role"), ts);
    if (ts.role == InputRole::ClassTargets)
      ts.exempt = ignoredTargets(module);
    ts.inference = in > e.inferenceInputs.size() || e.inferenceInputs[in - 1];
    sig.inputs.push_back(ts);
  }
  for (const target::TensorSig &t : e.outputs)
    sig.outputs.push_back({t.name, dtypeName(t.type.getElementType()),
                           dimStrings(t.type.getDims())});
  for (const target::ParamSig &p : e.params) {
    sig.params.push_back({p.name, dtypeName(p.type.getElementType()),
                          dimStrings(p.type.getDims())});
    sig.params.back().decay = p.decay;
    sig.params.back().lrDepth = p.lrDepth;
  }
  return sig;
}

std::optional<int> defaultOptLevel(std::string &error) {
  const char *env = std::getenv("NNCC_OPT_LEVEL");
  if (!env || !*env)
    return 3;
  llvm::StringRef v(env);
  if (v.size() == 1 && v[0] >= '0' && v[0] <= '3')
    return v[0] - '0';
  error = "NNCC_OPT_LEVEL=" + v.str() + ": expected 0, 1, 2 or 3";
  return std::nullopt;
}

std::string compilerFingerprint() {
  std::string fp = "nncc " NNCC_COMPILER_VERSION;
  auto add = [&](const std::string &path) {
    if (std::string stamp = fileStamp(path); !stamp.empty())
      fp += "|" + stamp;
  };
  add(llvm::sys::fs::getMainExecutable(nullptr, nullptr));
  RuntimeLocation runtime = runtimeLocation();
  const std::string &lib = runtime.libDir;
  for (const char *l : {"libnncc_model_support.a", "libnncc_kernels.so", "libnncc_runtime.so"})
    add(lib + "/" + l);
  std::error_code ec;
  for (const char *sub :
       {"/nncc/Kernels", "/nncc/Runtime", "/nncc/ModelSupport", "/nncc/Kernels/CUDA"})
    for (llvm::sys::fs::directory_iterator it(runtime.includeDir + sub, ec),
         end;
         !ec && it != end; it.increment(ec))
      add(it->path());
  return fp;
}

} // namespace nncc
