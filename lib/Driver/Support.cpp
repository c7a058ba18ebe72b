//===- Support.cpp - Errors and strings shared by nncc subcommands --------===//

#include "nncc/Driver/Support.h"

#include "nncc/Pipeline/RematSearch.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace nncc;

std::string driver::printable(llvm::StringRef s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += llvm::hexdigit(byte >> 4, /*LowerCase=*/true);
      out += llvm::hexdigit(byte & 15, /*LowerCase=*/true);
    } else {
      out += c;
    }
  }
  return out;
}

int driver::fail(const llvm::Twine &msg) {
  llvm::errs() << "nncc: error: " << printable(msg.str()) << "\n";
  return 1;
}

uint64_t driver::allocatableBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  uint64_t most = pages > 0 && pageSize > 0 ? uint64_t(pages) * uint64_t(pageSize) : UINT64_MAX;
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit r;
    if (getrlimit(resource, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
      most = std::min<uint64_t>(most, r.rlim_cur);
  }
  return most;
}

int driver::checkAllocation(const llvm::Twine &what, llvm::ArrayRef<int64_t> shape,
                            uint64_t bytesPerElement) {
  uint64_t bytes = bytesPerElement;
  bool overflow = false;
  for (int64_t d : shape)
    overflow |= d < 0 || __builtin_mul_overflow(bytes, uint64_t(d), &bytes);
  uint64_t most = allocatableBytes();
  if (overflow)
    return fail(what + " of shape " + shapeString(shape) +
                " needs more than 2^64 bytes; this process can allocate at most " +
                formatBytes(most));
  if (bytes > most)
    return fail(what + " of shape " + shapeString(shape) + " needs " + formatBytes(bytes) +
                ", more than the " + formatBytes(most) + " this process can allocate");
  return 0;
}

namespace {
const char *fileKind(mode_t mode) {
  return S_ISDIR(mode)    ? "a directory"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : "not a regular file";
}
} // namespace

int driver::checkOutputPath(llvm::StringRef flag, const std::string &path,
                            llvm::ArrayRef<InputPath> inputs, llvm::StringRef placeholder) {
  if (path.empty())
    return fail(flag + " needs a file name");
  llvm::SmallString<256> absolute(path);
  llvm::sys::fs::make_absolute(absolute);
  llvm::sys::path::remove_dots(absolute, /*remove_dot_dot=*/true);
  std::string folder = llvm::sys::path::parent_path(absolute).str();
  struct stat st;
  if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return fail(flag + " '" + path + "': the folder '" + folder + "' does not exist");
  if (::access(folder.c_str(), W_OK) != 0)
    return fail(flag + " '" + path + "': the folder '" + folder +
                "' cannot be written: " + std::strerror(errno));
  if (!placeholder.empty() && llvm::StringRef(path).contains(placeholder))
    return 0;
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode))
    return fail(flag + " '" + path + "' is " + fileKind(st.st_mode) +
                ": outputs go to regular files");
  for (const InputPath &in : inputs) {
    if (in.path.empty())
      continue;
    llvm::SmallString<256> inAbsolute(in.path);
    llvm::sys::fs::make_absolute(inAbsolute);
    llvm::sys::path::remove_dots(inAbsolute, /*remove_dot_dot=*/true);
    bool same = inAbsolute == absolute;
    struct stat inSt;
    if (!same && exists && ::stat(in.path.c_str(), &inSt) == 0)
      same = inSt.st_dev == st.st_dev && inSt.st_ino == st.st_ino;
    if (same)
      return fail(flag + " '" + path + "' is the file of " + in.flag +
                  ": writing it would destroy what the run reads; choose another " + flag);
  }
  return 0;
}

int driver::replaceFile(const std::string &given, llvm::StringRef contents,
                        llvm::StringRef flag) {
  // A symlinked file is written through: its target is replaced.
  llvm::SmallString<256> resolved;
  std::string path =
      llvm::sys::fs::real_path(given, resolved) ? given : std::string(resolved);
  llvm::SmallString<256> folder(path);
  llvm::sys::path::remove_filename(folder);
  if (folder.empty())
    folder = ".";
  llvm::SmallString<256> tmp;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(
          folder + "/." + llvm::sys::path::filename(path) + ".tmp-%%%%%%%%", fd, tmp, {},
          0600))
    return fail(flag + ": cannot create a temporary in '" + folder + "': " + ec.message());
  bool ok = true;
  for (size_t done = 0; ok && done < contents.size();) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    ok = n > 0;
    done += ok ? size_t(n) : 0;
  }
  int err = ok ? 0 : errno;
  mode_t mask = ::umask(0);
  ::umask(mask);
  ok = ok && ::fchmod(fd, 0666 & ~mask) == 0 && ::fsync(fd) == 0;
  err = err ? err : ok ? 0 : errno;
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    err = err ? err : errno;
    ::unlink(tmp.c_str());
    return fail(flag + ": cannot write '" + path + "': " + std::strerror(err));
  }
  if (int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return 0;
}

int driver::checkInputValues(const TensorSignature &s, nncc_dtype dtype,
                             llvm::ArrayRef<int64_t> shape, const void *data,
                             const std::map<std::string, int64_t> &dims,
                             llvm::StringRef source) {
  if (s.role != InputRole::TokenIds && s.role != InputRole::ClassTargets &&
      s.role != InputRole::Lengths)
    return 0;
  if (dtype != NNCC_DTYPE_I32 && dtype != NNCC_DTYPE_I64)
    return 0;
  int64_t limit = -1;
  if (!llvm::StringRef(s.limit).getAsInteger(10, limit)) {
  } else if (auto it = dims.find(s.limit); it != dims.end()) {
    limit = it->second;
  } else {
    return 0; // the size is not known here; the kernel checks it
  }
  const bool lengths = s.role == InputRole::Lengths;
  // A length may be 0 (an empty sequence: the recurrent kernels emit zeros).
  const int64_t lo = 0, hi = lengths ? limit + 1 : limit;
  uint64_t n = 1;
  for (int64_t d : shape)
    n *= uint64_t(d);
  for (uint64_t i = 0; i < n; ++i) {
    int64_t v = dtype == NNCC_DTYPE_I32 ? static_cast<const int32_t *>(data)[i]
                                        : static_cast<const int64_t *>(data)[i];
    if ((v >= lo && v < hi) || llvm::is_contained(s.exempt, v))
      continue;
    std::string index;
    for (size_t k = shape.size(), rest = i; k-- > 0;) {
      index = std::to_string(rest % uint64_t(shape[k])) + (index.empty() ? "" : ", ") + index;
      rest /= uint64_t(shape[k]);
    }
    std::string range =
        lengths ? "[0, " + std::to_string(limit) + "] (a length at most " + s.limit + ")"
        : s.role == InputRole::TokenIds
            ? "[0, " + std::to_string(limit) + ") (an embedding of " + std::to_string(limit) +
                  " rows)"
            : "[0, " + std::to_string(limit) + ") (" + std::to_string(limit) + " classes" +
                  (s.exempt.empty() ? std::string(")")
                                    : ", or the ignore_index " +
                                          std::to_string(s.exempt.front()) + ")");
    const char *what = lengths ? "length" : s.role == InputRole::TokenIds ? "token id" : "class";
    return fail("'" + source + "': input '" + s.name + "' at [" + index + "] is " + what + " " +
                std::to_string(v) + ", outside " + range);
  }
  return 0;
}

int driver::checkInputPath(llvm::StringRef flag, const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return 0; // the reader names what is wrong
  if (!S_ISREG(st.st_mode))
    return fail(flag + " '" + path + "' is " + fileKind(st.st_mode) +
                ", not a regular file");
  return 0;
}

std::string driver::shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string driver::signatureString(const TensorSignature &t) {
  return t.dtype + " [" + llvm::join(t.dims, ", ") + "]";
}

std::string driver::tensorNames(nncc_safetensors *file) {
  std::string have;
  for (size_t k = 0; k < nncc_safetensors_count(file); ++k) {
    nncc_tensor_view o;
    if (nncc_safetensors_tensor_at(file, k, &o, nullptr) == NNCC_OK)
      have += (have.empty() ? "" : ", ") + std::string(o.name);
  }
  return have.empty() ? "nothing" : have;
}

int driver::failMissingInput(const TensorSignature &input, llvm::StringRef path,
                             nncc_safetensors *file) {
  return fail("input '" + input.name + "' (" + signatureString(input) +
              ") is missing from '" + path + "' (it has: " + tensorNames(file) +
              ")");
}
