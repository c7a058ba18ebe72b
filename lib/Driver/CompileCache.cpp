//===- CompileCache.cpp - Content-addressed cache of generated libraries --===//
//
// The cache holds code that nncc loads and runs, so it trusts nothing it
// did not write: the folder must be its user's alone (created 0700; refused
// when another user owns it or others can write it), and each entry records
// its library's size and SHA-256, checked before the library is handed out
// for dlopen. A damaged entry is removed and built again.
//
//===----------------------------------------------------------------------===//

#include "nncc/Driver/CompileCache.h"
#include "nncc/Driver/Support.h"

#include "nncc/Target/Compile.h"
#include "nncc/Target/Emitters.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace nncc;

namespace {

/// The first line of an entry's manifest; bump when its format changes.
constexpr llvm::StringLiteral kManifestFormat = "nncc-cache-entry-1";
constexpr llvm::StringLiteral kManifestName = "manifest";

std::string modeString(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", unsigned(mode & 07777));
  return buf;
}

/// Why `st` (of `path`, a `what`) could have been written by someone else;
/// empty when only this user can write it.
std::string foreignWriter(const struct stat &st, llvm::StringRef path, llvm::StringRef what) {
  if (st.st_uid != geteuid())
    return (what + " '" + path + "' belongs to user " + llvm::Twine(st.st_uid) +
            ", not to this user (" + llvm::Twine(geteuid()) + ")")
        .str();
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return (what + " '" + path + "' can be written by its group or others (mode " +
            modeString(st.st_mode) + ")")
        .str();
  return "";
}

std::string hexSha256(llvm::StringRef bytes) {
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(bytes)),
                     /*LowerCase=*/true);
}

/// Why the entry `dir` cannot be used (empty: it can). Everything in it must be this user's alone, the library a
/// regular file of the recorded size and hash.
std::string entryDamage(const std::string &dir, const std::string &libName) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0)
    return "it is missing";
  if (!S_ISDIR(st.st_mode))
    return "it is not a directory";
  if (std::string why = foreignWriter(st, dir, "the entry"); !why.empty())
    return why;
  std::string manifestPath = dir + "/" + kManifestName.str();
  if (::lstat(manifestPath.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return "its manifest is missing";
  if (std::string why = foreignWriter(st, manifestPath, "the manifest"); !why.empty())
    return why;
  auto manifest = llvm::MemoryBuffer::getFile(manifestPath, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false,
                                              /*IsVolatile=*/true);
  if (!manifest)
    return "its manifest cannot be read";
  llvm::SmallVector<llvm::StringRef> fields;
  llvm::StringRef((*manifest)->getBuffer()).split(fields, ' ', -1, false);
  uint64_t size;
  if (fields.size() != 4 || fields[0] != kManifestFormat || fields[1] != libName ||
      fields[2].getAsInteger(10, size) || fields[3].trim().size() != 64)
    return "its manifest is damaged";
  std::string lib = dir + "/" + libName;
  if (::lstat(lib.c_str(), &st) != 0)
    return "the library is missing";
  if (!S_ISREG(st.st_mode))
    return "the library is not a regular file";
  if (std::string why = foreignWriter(st, lib, "the library"); !why.empty())
    return why;
  if (uint64_t(st.st_size) != size)
    return ("the library has " + llvm::Twine(uint64_t(st.st_size)) + " bytes, " +
            llvm::Twine(size) + " were written")
        .str();
  auto bytes = llvm::MemoryBuffer::getFile(lib, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false,
                                           /*IsVolatile=*/true);
  if (!bytes || (*bytes)->getBufferSize() != size)
    return "the library cannot be read";
  if (hexSha256((*bytes)->getBuffer()) != fields[3].trim())
    return "the library's SHA-256 differs from the one recorded when it was built";
  return "";
}

/// Makes the finished build in `tmp` this user's alone and records its
/// library's size and hash. False after printing the error.
bool sealEntry(llvm::StringRef tmp, const std::string &libName) {
  std::string lib = (tmp + "/" + libName).str();
  auto bytes = llvm::MemoryBuffer::getFile(lib, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false,
                                           /*IsVolatile=*/true);
  if (!bytes) {
    driver::fail("cannot read the library just built, '" + lib + "'");
    return false;
  }
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec))
    ::chmod(it->path().c_str(), it->path() == lib ? 0700 : 0600);
  ::chmod(tmp.str().c_str(), 0700);
  std::string manifestPath = (tmp + "/" + kManifestName).str();
  llvm::raw_fd_ostream os(manifestPath, ec);
  if (!ec) {
    os << kManifestFormat << " " << libName << " " << (*bytes)->getBufferSize() << " "
       << hexSha256((*bytes)->getBuffer()) << "\n";
    os.close();
  }
  if (ec || os.has_error()) {
    os.clear_error();
    driver::fail("cannot write '" + manifestPath + "'");
    return false;
  }
  ::chmod(manifestPath.c_str(), 0600);
  return true;
}

} // namespace

void driver::removeStaleTemporaries(const std::string &dir, llvm::StringRef prefix) {
  auto hourAgo = std::chrono::system_clock::now() - std::chrono::hours(1);
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!llvm::sys::path::filename(it->path()).starts_with(prefix))
      continue;
    llvm::sys::fs::file_status st;
    if (llvm::sys::fs::status(it->path(), st, /*follow=*/false) ||
        st.getLastModificationTime() > hourAgo)
      continue;
    if (st.type() == llvm::sys::fs::file_type::directory_file)
      llvm::sys::fs::remove_directories(it->path());
    else
      llvm::sys::fs::remove(it->path());
  }
}

std::string driver::cacheRoot() {
  if (const char *d = std::getenv("NNCC_CACHE_DIR"); d && *d)
    return d;
  if (const char *d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return (llvm::Twine(d) + "/nncc").str();
  if (const char *h = std::getenv("HOME"); h && *h)
    return (llvm::Twine(h) + "/.cache/nncc").str();
  // Cron, `env -i`, services: the account's home, never a shared folder.
  if (const struct passwd *pw = ::getpwuid(geteuid()); pw && pw->pw_dir && *pw->pw_dir)
    return (llvm::Twine(pw->pw_dir) + "/.cache/nncc").str();
  return "";
}

bool driver::privateCacheDir(const std::string &dir, std::string &error) {
  if (dir.empty()) {
    error = "there is no cache folder: neither NNCC_CACHE_DIR, XDG_CACHE_HOME nor HOME is "
            "set and this user has no home directory (set NNCC_CACHE_DIR)";
    return false;
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    llvm::StringRef parent = llvm::sys::path::parent_path(dir);
    if (!parent.empty())
      if (std::error_code ec = llvm::sys::fs::create_directories(parent)) {
        error = "cannot create the cache folder '" + dir + "': " + ec.message() +
                " (set NNCC_CACHE_DIR)";
        return false;
      }
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      error = "cannot create the cache folder '" + dir + "': " + std::strerror(errno) +
              " (set NNCC_CACHE_DIR)";
      return false;
    }
    if (::stat(dir.c_str(), &st) != 0) {
      error = "cannot read the cache folder '" + dir + "': " + std::strerror(errno);
      return false;
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    error = "the cache folder '" + dir + "' is not a directory (set NNCC_CACHE_DIR)";
    return false;
  }
  if (std::string why = foreignWriter(st, dir, "the cache folder"); !why.empty()) {
    error = why + ": nncc loads libraries from it only when no one else can write it "
                  "(chmod go-w, or set NNCC_CACHE_DIR to a folder of your own)";
    return false;
  }
  return true;
}

std::string driver::pchRoot() {
  if (const char *e = std::getenv("NNCC_PCH"); e && llvm::StringRef(e) == "0")
    return "";
  std::string dir;
  if (const char *d = std::getenv("NNCC_PCH_DIR"); d && *d)
    dir = d;
  else if (std::string root = cacheRoot(); !root.empty())
    dir = root + "/pch";
  // A prelude is compiled into every library: one from a folder that others
  // can write is not used (the compile parses the headers instead).
  std::string error;
  if (dir.empty() || !privateCacheDir(dir, error))
    return "";
  removeStaleTemporaries(dir, "tmp-");
  return dir;
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
  CompileOptions opts;
  opts.cuda = options.target == TargetKind::CUDA ? CudaCode::Required : CudaCode::None;
  opts.precision = options.precision;
  opts.optLevel = *optLevel;
  // The key covers the generated sources themselves: whatever reaches the
  // code (the source's file name in its comments and messages included)
  // gets an entry of its own.
  ModelSources sources;
  if (mlir::failed(emitModelSources(module, opts, sources)))
    return false;
  llvm::SHA256 h;
  auto field = [&](llvm::StringRef text) {
    h.update(text);
    h.update(llvm::StringRef("\0", 1));
  };
  field(source);
  field(compilerFingerprint());
  field(std::string("target=") + targetName(options.target));
  field("opts=O" + std::to_string(*optLevel));
  field(std::string("precision=") + precisionName(options.precision));
  field("remat=" + options.remat);
  // Which loss the backward differentiates: inference mode (run --grad) or
  // training mode (run --grad --train-mode, nncc train).
  field(!options.grad ? "no-grad" : options.evalMode ? "grad|eval-mode" : "grad|train-mode");
  field(sources.cpp);
  field(sources.header);
  field(sources.cuda);
  std::string key = llvm::toHex(h.final(), /*LowerCase=*/true).substr(0, 32);
  std::string root = cacheRoot();
  std::string error;
  if (!privateCacheDir(root, error)) {
    fail(error);
    return false;
  }
  removeStaleTemporaries(root, "tmp-");
  std::string libName = "lib" + sources.modelName + ".so";
  std::string dir = root + "/" + key;
  libPath = dir + "/" + libName;
  if (llvm::sys::fs::exists(dir)) {
    std::string damage = entryDamage(dir, libName);
    if (damage.empty())
      return true;
    llvm::errs() << "nncc: warning: the cache entry '" << dir
                 << "' is damaged (" << damage << "); building it again\n";
    if (std::error_code ec = llvm::sys::fs::remove_directories(dir)) {
      fail("cannot remove the damaged cache entry '" + dir + "': " + ec.message());
      return false;
    }
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
  opts.outputDir = std::string(tmp);
  opts.pchDir = pchRoot();
  CompileArtifacts artifacts;
  if (mlir::failed(buildModel(module, sources, opts, artifacts)) || !sealEntry(tmp, libName)) {
    llvm::sys::fs::remove_directories(tmp);
    return false;
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, dir)) {
    llvm::sys::fs::remove_directories(tmp);
    if (!entryDamage(dir, libName).empty()) {
      fail("cannot move the compiled library into the cache '" + dir +
           "': " + ec.message());
      return false;
    }
  }
  return true;
}
