//===- CompileCache.cpp - Content-addressed cache of generated libraries --===//

#include "nncc/Driver/CompileCache.h"
#include "nncc/Driver/Support.h"

#include "nncc/Target/Compile.h"
#include "nncc/Target/Emitters.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SHA256.h"

#include <cstdlib>

using namespace nncc;

std::string driver::cacheRoot() {
  if (const char *d = std::getenv("NNCC_CACHE_DIR"); d && *d)
    return d;
  if (const char *d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return (llvm::Twine(d) + "/nncc").str();
  if (const char *h = std::getenv("HOME"); h && *h)
    return (llvm::Twine(h) + "/.cache/nncc").str();
  return "/tmp/nncc-cache";
}

std::string driver::pchRoot() {
  if (const char *e = std::getenv("NNCC_PCH"); e && llvm::StringRef(e) == "0")
    return "";
  if (const char *d = std::getenv("NNCC_PCH_DIR"); d && *d)
    return d;
  return cacheRoot() + "/pch";
}

bool driver::compileCached(mlir::ModuleOp module, llvm::StringRef source,
                           const CacheKeyOptions &options, std::string &libPath) {
  std::string optError;
  std::optional<int> optLevel =
      options.optLevel ? options.optLevel : defaultOptLevel(optError);
  if (!optLevel) {
    fail(optError);
    return false;
  }
  llvm::SHA256 h;
  h.update(source);
  h.update(llvm::StringRef("\0", 1));
  h.update(compilerFingerprint());
  h.update(options.cuda ? "|target=cuda" : "|target=cpu");
  h.update("|opts=O" + std::to_string(*optLevel));
  if (options.precision != Precision::F32)
    h.update(std::string("|precision=") + precisionName(options.precision));
  if (!options.remat.empty())
    h.update("|remat=" + options.remat);
  // Which loss the backward differentiates: inference mode (run --grad) or
  // training mode (run --grad --train-mode, nncc train).
  if (options.grad)
    h.update(options.evalMode ? "|grad|eval-mode" : "|grad|train-mode");
  std::string key = llvm::toHex(h.final(), /*LowerCase=*/true).substr(0, 32);
  std::string model = target::modelIdentifier(module);
  std::string root = cacheRoot();
  std::string dir = root + "/" + key;
  libPath = dir + "/lib" + model + ".so";
  if (llvm::sys::fs::exists(libPath))
    return true;
  if (std::error_code ec = llvm::sys::fs::create_directories(root)) {
    fail("cannot create the cache directory '" + root + "': " + ec.message() +
         " (set NNCC_CACHE_DIR)");
    return false;
  }
  // Build in a private directory, then rename it into place: concurrent
  // runs never see a half-written library; the loser of a race keeps the
  // winner's (identical) result.
  llvm::SmallString<256> tmp;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory(root + "/tmp-" + key, tmp)) {
    fail("cannot create a directory in '" + root + "': " + ec.message());
    return false;
  }
  CompileOptions opts;
  opts.outputDir = std::string(tmp);
  opts.target = options.cuda ? CompileTarget::CUDA : CompileTarget::CPU;
  opts.precision = options.precision;
  opts.optLevel = *optLevel;
  opts.pchDir = pchRoot();
  CompileArtifacts artifacts;
  if (mlir::failed(compileModel(module, opts, artifacts))) {
    llvm::sys::fs::remove_directories(tmp);
    return false;
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, dir)) {
    llvm::sys::fs::remove_directories(tmp);
    if (!llvm::sys::fs::exists(libPath)) {
      fail("cannot move the compiled library into the cache '" + dir +
           "': " + ec.message());
      return false;
    }
  }
  return true;
}
