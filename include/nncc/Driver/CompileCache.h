//===- CompileCache.h - Content-addressed cache of generated libraries -*- C++ -*-===//

#ifndef NNCC_DRIVER_COMPILECACHE_H
#define NNCC_DRIVER_COMPILECACHE_H

#include "nncc/Target/Precision.h"
#include "nncc/Target/TargetKind.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace nncc::driver {

/// What the library was built for; part of the cache key.
struct CacheKeyOptions {
  TargetKind target = TargetKind::CPU; // --target
  bool grad = false;     // with @forward_backward (and train_step)
  bool evalMode = false; // with grad: the inference-mode loss
  Precision precision = Precision::F32; // real_t of the library
  std::string remat;     // the residuals recomputed under a memory budget
  std::optional<int> optLevel; // -O of the host code; none: defaultOptLevel()
};

/// The cache directory: $NNCC_CACHE_DIR, else $XDG_CACHE_HOME/nncc, else
/// $HOME/.cache/nncc, else the account's home (getpwuid) + /.cache/nncc;
/// never a shared folder. Empty when there is none.
std::string cacheRoot();

/// Creates `dir` (mode 0700) when missing and checks that no one but this
/// user can write it (owned by the effective user, not group- or
/// world-writable). False with the reason in `error`.
bool privateCacheDir(const std::string &dir, std::string &error);

/// Removes what builds that never finished left in `dir` (killed
/// compiles): its entries named `prefix`* untouched for an hour.
void removeStaleTemporaries(const std::string &dir, llvm::StringRef prefix);

/// Where host compiles keep their precompiled prelude
/// (CompileOptions::pchDir): $NNCC_PCH_DIR, else cacheRoot()/pch; empty
/// (none) when $NNCC_PCH is 0 or the folder is not this user's alone.
std::string pchRoot();

/// Compiles `module` (at the nnk stage) into the cache unless a library for
/// the same source, generated code, compiler and options is there; sets
/// `libPath`. Built in a private directory and renamed into place, so
/// concurrent runs are safe; an entry is used only after its library's size
/// and SHA-256 match what was recorded when it was built (else it is built
/// again). False after printing the error.
bool compileCached(mlir::ModuleOp module, llvm::StringRef source,
                   const CacheKeyOptions &options, std::string &libPath);

} // namespace nncc::driver

#endif // NNCC_DRIVER_COMPILECACHE_H
