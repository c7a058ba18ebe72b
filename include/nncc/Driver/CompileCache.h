//===- CompileCache.h - Content-addressed cache of generated libraries -*- C++ -*-===//

#ifndef NNCC_DRIVER_COMPILECACHE_H
#define NNCC_DRIVER_COMPILECACHE_H

#include "nncc/Target/Precision.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace nncc::driver {

/// What the library was built for; part of the cache key.
struct CacheKeyOptions {
  bool cuda = false;     // --target cuda
  bool grad = false;     // with @forward_backward (and train_step)
  bool evalMode = false; // with grad: the inference-mode loss
  Precision precision = Precision::F32; // real_t of the library
  std::string remat;     // the residuals recomputed under a memory budget
  std::optional<int> optLevel; // -O of the host code; none: defaultOptLevel()
};

/// The cache directory: $NNCC_CACHE_DIR, else $XDG_CACHE_HOME/nncc, else
/// ~/.cache/nncc.
std::string cacheRoot();

/// Where host compiles keep their precompiled prelude
/// (CompileOptions::pchDir): $NNCC_PCH_DIR, else cacheRoot()/pch; empty
/// (none) when $NNCC_PCH is 0.
std::string pchRoot();

/// Compiles `module` (at the nnk stage) into the cache unless a library for
/// the same source, compiler and options is there; sets `libPath`. Built in
/// a private directory and renamed into place, so concurrent runs are safe.
/// False after printing the error.
bool compileCached(mlir::ModuleOp module, llvm::StringRef source,
                   const CacheKeyOptions &options, std::string &libPath);

} // namespace nncc::driver

#endif // NNCC_DRIVER_COMPILECACHE_H
