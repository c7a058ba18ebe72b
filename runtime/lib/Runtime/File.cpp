//===- File.cpp - opening files to read, replacing files atomically -------===//
//
// Every file the runtime reads goes through openRegularFile and every file
// it writes through writeFileAtomically (docs/runtime.md, "Files").
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <string>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace nncc::rt;

const char *nncc::rt::fileKind(unsigned mode) {
  switch (mode & S_IFMT) {
  case S_IFREG: return "a regular file";
  case S_IFDIR: return "a directory";
  case S_IFIFO: return "a FIFO";
  case S_IFCHR: return "a character device";
  case S_IFBLK: return "a block device";
  case S_IFSOCK: return "a socket";
  case S_IFLNK: return "a symbolic link";
  }
  return "of an unknown kind";
}

nncc_status nncc::rt::openRegularFile(const char *path, int &fd, uint64_t &size,
                                      nncc_error *err) {
  fd = -1;
  std::string q = quote(path, std::strlen(path));
  // A FIFO or a device is refused before it is opened (opening one can
  // block, or do something); the fstat below decides.
  struct stat st;
  if (::stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    return fail(err, NNCC_ERROR_IO, "%s is not a regular file (%s)", q.c_str(),
                fileKind(st.st_mode));
  // O_NONBLOCK: whatever replaced the path since, open does not wait.
  int f = ::open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (f < 0) {
    int e = errno;
    return fail(err, e == ENOENT ? NNCC_ERROR_NOT_FOUND : NNCC_ERROR_IO, "cannot open %s: %s",
                q.c_str(), std::strerror(e));
  }
  if (::fstat(f, &st) != 0) {
    int e = errno;
    ::close(f);
    return fail(err, NNCC_ERROR_IO, "cannot stat %s: %s", q.c_str(), std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(f);
    return fail(err, NNCC_ERROR_IO, "%s is not a regular file (%s)", q.c_str(),
                fileKind(st.st_mode));
  }
  int flags = ::fcntl(f, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK))
    ::fcntl(f, F_SETFL, flags & ~O_NONBLOCK);
  fd = f;
  size = static_cast<uint64_t>(st.st_size);
  return NNCC_OK;
}

namespace {

std::string folderOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string nameOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// The process's umask, read without changing it where /proc allows
/// (umask(2) can only be read by setting it, which races other threads).
mode_t currentUmask() {
  if (FILE *f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    unsigned mask = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f))
      found = std::sscanf(line, "Umask: %o", &mask) == 1;
    std::fclose(f);
    if (found)
      return static_cast<mode_t>(mask & 0777);
  }
  mode_t mask = ::umask(022);
  ::umask(mask);
  return mask;
}

/// 16 random hex digits for a temporary's name.
std::string randomSuffix() {
  uint64_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) {
    static std::atomic<uint64_t> counter{0};
    struct timespec ts;
    ::clock_gettime(CLOCK_REALTIME, &ts);
    r = (static_cast<uint64_t>(ts.tv_sec) * 1000000007ull) ^
        static_cast<uint64_t>(ts.tv_nsec) ^ (static_cast<uint64_t>(::getpid()) << 40) ^
        (++counter * 0x9e3779b97f4a7c15ull);
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(r));
  return buf;
}

nncc_status ioFail(nncc_error *err, int e, const std::string &q, const char *what,
                   const std::string &detail = "") {
  return fail(err, e == ENOENT ? NNCC_ERROR_NOT_FOUND : NNCC_ERROR_IO,
              "cannot write %s: %s%s: %s", q.c_str(), what, detail.c_str(),
              std::strerror(e));
}

} // namespace

nncc_status nncc::rt::writeFileAtomically(const char *path,
                                          const std::function<int(int fd)> &fill,
                                          nncc_error *err) {
  const std::string q = quote(path, std::strlen(path));
  if (!*path)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "cannot write '': the path is empty");

  // The destination: PATH, or the file a symbolic link there leads to (the
  // link stays, its target is replaced), followed link by link so that a
  // dangling link is written through too.
  std::string dest = path;
  struct stat st;
  bool exists = false;
  for (int hops = 0;; ++hops) {
    if (::lstat(dest.c_str(), &st) != 0) {
      if (errno != ENOENT)
        return ioFail(err, errno, q, "cannot stat ", quote(dest));
      break; // a new file
    }
    if (!S_ISLNK(st.st_mode)) {
      exists = true;
      break;
    }
    if (hops == 40)
      return ioFail(err, ELOOP, q, "resolving the symbolic link");
    std::vector<char> target(static_cast<size_t>(st.st_size > 0 ? st.st_size : 255) + 2);
    ssize_t len = ::readlink(dest.c_str(), target.data(), target.size() - 1);
    if (len < 0)
      return ioFail(err, errno, q, "cannot read the symbolic link ", quote(dest));
    if (len == 0 || static_cast<size_t>(len) >= target.size() - 1)
      return ioFail(err, ENAMETOOLONG, q, "cannot read the symbolic link ", quote(dest));
    std::string next(target.data(), static_cast<size_t>(len));
    dest = next[0] == '/' ? next : folderOf(dest) + "/" + next;
  }
  const std::string qdest = dest == path ? q : q + " (a symbolic link to " + quote(dest) + ")";
  if (exists && !S_ISREG(st.st_mode))
    return fail(err, NNCC_ERROR_IO, "cannot write %s: it is not a regular file (%s)",
                qdest.c_str(), fileKind(st.st_mode));
  const std::string folder = folderOf(dest), name = nameOf(dest);
  if (name.empty() || name == "." || name == "..")
    return fail(err, NNCC_ERROR_IO, "cannot write %s: the path names a directory",
                qdest.c_str());
  // A replaced file keeps its permissions; a new one gets 0666 & ~umask.
  const mode_t mode = exists ? (st.st_mode & 0777) : (0666 & ~currentUmask());

  int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    return ioFail(err, errno, qdest, "cannot open its directory ", quote(folder));
  // The temporary: a fresh name in the same directory (so that the rename
  // is atomic), never an existing file or a link planted there.
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    tmp = "." + name.substr(0, 200) + "." + randomSuffix() + ".tmp";
    fd = ::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0) {
    int e = errno;
    ::close(dir);
    return ioFail(err, e, qdest, "cannot create a temporary file in ", quote(folder));
  }
  const std::string qtmp = quote(folder + "/" + tmp);
  const char *step = nullptr;
  int e = 0;
  if (::fchmod(fd, mode) != 0 && errno != EPERM && errno != EOPNOTSUPP) {
    e = errno;
    step = "cannot set the permissions of ";
  } else if ((e = fill(fd)) != 0) {
    step = "cannot write ";
  } else if (::fsync(fd) != 0 && errno != EINVAL) {
    e = errno;
    step = "cannot sync ";
  }
  if (::close(fd) != 0 && !step) {
    e = errno;
    step = "cannot write ";
  }
  if (!step && ::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) {
    e = errno;
    step = "cannot rename into place ";
  }
  if (step) {
    ::unlinkat(dir, tmp.c_str(), 0);
    ::close(dir);
    return ioFail(err, e, qdest, step, qtmp);
  }
  // The new directory entry reaches the disk too.
  if (::fsync(dir) != 0 && errno != EINVAL) {
    e = errno;
    ::close(dir);
    return ioFail(err, e, qdest, "written, but cannot sync its directory ", quote(folder));
  }
  ::close(dir);
  return NNCC_OK;
}
