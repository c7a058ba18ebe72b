//===- RuntimeFileTests.cpp - what the runtime opens and how it writes ----===//
//
// The reader refuses FIFOs, devices and directories without blocking; the
// writer replaces its destination through a fresh temporary (O_EXCL |
// O_NOFOLLOW, random name), writes through a symbolic link at the
// destination, refuses destinations that are not regular files and leaves
// nothing behind when it fails.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <ftw.h>
#include <set>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <thread>
#include <unistd.h>

namespace {

/// A fresh directory under $TMPDIR, removed with everything in it.
struct TempDir {
  std::string path;
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/nncc-file-XXXXXX";
    path = mkdtemp(&tmpl[0]) ? tmpl : "";
    EXPECT_FALSE(path.empty()) << std::strerror(errno);
  }
  ~TempDir() {
    if (!path.empty())
      nftw(
          path.c_str(),
          [](const char *p, const struct stat *, int, struct FTW *) { return remove(p); }, 16,
          FTW_DEPTH | FTW_PHYS);
  }
  std::string operator/(const std::string &name) const { return path + "/" + name; }
  /// The names in the directory.
  std::set<std::string> list() const {
    std::set<std::string> names;
    if (DIR *d = opendir(path.c_str())) {
      while (dirent *e = readdir(d))
        if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
          names.insert(e->d_name);
      closedir(d);
    }
    return names;
  }
};

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// A writer with one tensor of `bytes` bytes.
struct OneTensor {
  nncc_safetensors_writer *w = nullptr;
  std::vector<uint8_t> data;
  explicit OneTensor(size_t bytes = 16) : data(bytes, 7) {
    EXPECT_EQ(nncc_safetensors_writer_create(&w, nullptr), NNCC_OK);
    int64_t shape[] = {static_cast<int64_t>(bytes)};
    EXPECT_EQ(nncc_safetensors_writer_add(w, "x", NNCC_DTYPE_U8, 1, shape, data.data(), bytes,
                                          nullptr),
              NNCC_OK);
  }
  ~OneTensor() { nncc_safetensors_writer_destroy(w); }
  std::string image() const {
    void *p = nullptr;
    size_t n = 0;
    EXPECT_EQ(nncc_safetensors_writer_serialize(w, &p, &n, nullptr), NNCC_OK);
    std::string out(static_cast<char *>(p), n);
    nncc_free(p);
    return out;
  }
};

bool isSymlink(const std::string &path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

mode_t modeOf(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0;
}

} // namespace

// --- reading --------------------------------------------------------------

// A FIFO without a writer: open(O_RDONLY) would wait for one forever. A
// helper thread plays the writer after a while so that a reader that does
// block comes back (and fails the message check) instead of hanging.
TEST(RuntimeFiles, ReaderRefusesAFifoWithoutBlocking) {
  TempDir dir;
  std::string fifo = dir / "weights.safetensors";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  std::atomic<bool> done{false}, rescued{false};
  std::thread writer([&] {
    auto start = std::chrono::steady_clock::now();
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (std::chrono::steady_clock::now() - start < std::chrono::seconds(2))
        continue;
      int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK); // succeeds once a reader waits
      if (fd >= 0) {
        rescued = true;
        close(fd);
        return;
      }
    }
  });
  nncc_safetensors *f = nullptr;
  nncc_error err;
  nncc_status s = nncc_safetensors_open(fifo.c_str(), &f, &err);
  done = true;
  writer.join();
  EXPECT_FALSE(rescued) << "the reader blocked on the FIFO";
  EXPECT_STATUS_MSG(s, err, NNCC_ERROR_IO, "'" + fifo + "' is not a regular file (a FIFO)");
  EXPECT_EQ(f, nullptr);
  nncc_safetensors_close(f);
}

TEST(RuntimeFiles, ReaderNamesWhatItRefuses) {
  TempDir dir;
  nncc_safetensors *f = nullptr;
  nncc_error err;
  EXPECT_STATUS_MSG(nncc_safetensors_open("/dev/null", &f, &err), err, NNCC_ERROR_IO,
                    "'/dev/null' is not a regular file (a character device)");
  EXPECT_STATUS_MSG(nncc_safetensors_open(dir.path.c_str(), &f, &err), err, NNCC_ERROR_IO,
                    "is not a regular file (a directory)");
  // Through a symbolic link: what it leads to counts.
  std::string link = dir / "link.safetensors";
  ASSERT_EQ(symlink("/dev/null", link.c_str()), 0);
  EXPECT_STATUS_MSG(nncc_safetensors_open(link.c_str(), &f, &err), err, NNCC_ERROR_IO,
                    "'" + link + "' is not a regular file (a character device)");
  EXPECT_EQ(f, nullptr);
  // A link to a file reads the file.
  OneTensor t;
  std::string real = dir / "real.safetensors";
  spit(real, t.image());
  std::string good = dir / "good.safetensors";
  ASSERT_EQ(symlink("real.safetensors", good.c_str()), 0);
  ASSERT_EQ(nncc_safetensors_open(good.c_str(), &f, &err), NNCC_OK) << err.message;
  EXPECT_EQ(nncc_safetensors_count(f), 1u);
  nncc_safetensors_close(f);
}

// --- writing --------------------------------------------------------------

// The writer used to create PATH.tmp with O_CREAT | O_TRUNC: a symbolic
// link planted under that name had its target overwritten.
TEST(RuntimeFiles, WriterLeavesALinkAtTheOldTemporaryNameAlone) {
  TempDir dir;
  std::string victim = dir / "victim", out = dir / "out.safetensors";
  spit(victim, "precious");
  ASSERT_EQ(symlink(victim.c_str(), (out + ".tmp").c_str()), 0);
  OneTensor t;
  nncc_error err;
  ASSERT_EQ(nncc_safetensors_writer_write(t.w, out.c_str(), &err), NNCC_OK) << err.message;
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_TRUE(isSymlink(out + ".tmp"));
  EXPECT_EQ(slurp(out), t.image());
  EXPECT_FALSE(isSymlink(out));
  EXPECT_EQ(dir.list(), (std::set<std::string>{"victim", "out.safetensors",
                                               "out.safetensors.tmp"}));
}

// A symbolic link as the destination is written through: the file it
// leads to is replaced (in that file's directory), the link stays.
TEST(RuntimeFiles, WriterWritesThroughALinkAtTheDestination) {
  TempDir dir;
  ASSERT_EQ(mkdir((dir / "store").c_str(), 0700), 0);
  std::string target = dir / "store/w.safetensors", link = dir / "w.safetensors";
  spit(target, "old");
  ASSERT_EQ(symlink("store/w.safetensors", link.c_str()), 0); // relative to the link
  OneTensor t;
  nncc_error err;
  ASSERT_EQ(nncc_safetensors_writer_write(t.w, link.c_str(), &err), NNCC_OK) << err.message;
  EXPECT_TRUE(isSymlink(link));
  EXPECT_EQ(slurp(target), t.image());
  EXPECT_EQ(dir.list(), (std::set<std::string>{"store", "w.safetensors"}));
  // A chain of links, the last one dangling: the file is created where it
  // points.
  std::string a = dir / "a", b = dir / "b";
  ASSERT_EQ(symlink("b", a.c_str()), 0);
  ASSERT_EQ(symlink((dir / "store/new.safetensors").c_str(), b.c_str()), 0);
  ASSERT_EQ(nncc_safetensors_writer_write(t.w, a.c_str(), &err), NNCC_OK) << err.message;
  EXPECT_TRUE(isSymlink(a));
  EXPECT_TRUE(isSymlink(b));
  EXPECT_EQ(slurp(dir / "store/new.safetensors"), t.image());
  // A loop is an error.
  std::string l1 = dir / "l1", l2 = dir / "l2";
  ASSERT_EQ(symlink("l2", l1.c_str()), 0);
  ASSERT_EQ(symlink("l1", l2.c_str()), 0);
  EXPECT_STATUS_MSG(nncc_safetensors_writer_write(t.w, l1.c_str(), &err), err, NNCC_ERROR_IO,
                    "cannot write '" + l1 + "'");
}

// Devices, FIFOs and directories are never replaced (renaming over
// /dev/null as root would have turned it into a regular file).
TEST(RuntimeFiles, WriterRefusesDestinationsThatAreNotRegularFiles) {
  TempDir dir;
  OneTensor t;
  nncc_error err;
  std::string fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_STATUS_MSG(nncc_safetensors_writer_write(t.w, fifo.c_str(), &err), err, NNCC_ERROR_IO,
                    "cannot write '" + fifo + "': it is not a regular file (a FIFO)");
  struct stat st;
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));

  std::string null = dir / "null";
  ASSERT_EQ(symlink("/dev/null", null.c_str()), 0);
  EXPECT_STATUS_MSG(nncc_safetensors_writer_write(t.w, null.c_str(), &err), err, NNCC_ERROR_IO,
                    "cannot write '" + null +
                        "' (a symbolic link to '/dev/null'): it is not a regular file (a "
                        "character device)");
  EXPECT_TRUE(isSymlink(null));

  std::string sub = dir / "sub";
  ASSERT_EQ(mkdir(sub.c_str(), 0700), 0);
  EXPECT_STATUS_MSG(nncc_safetensors_writer_write(t.w, sub.c_str(), &err), err, NNCC_ERROR_IO,
                    "it is not a regular file (a directory)");
  EXPECT_STATUS_MSG(nncc_safetensors_writer_write(t.w, (dir / "nodir/").c_str(), &err), err,
                    NNCC_ERROR_IO, "the path names a directory");

  // A device node of our own (mknod needs privileges: skipped without).
  std::string dev = dir / "dev";
  if (mknod(dev.c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0) {
    EXPECT_STATUS_MSG(nncc_safetensors_writer_write(t.w, dev.c_str(), &err), err,
                      NNCC_ERROR_IO, "it is not a regular file (a character device)");
    ASSERT_EQ(lstat(dev.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
  }
  std::set<std::string> left = dir.list();
  left.erase("dev");
  EXPECT_EQ(left, (std::set<std::string>{"fifo", "null", "sub"}));
}

// A write that fails half way (here: the file size limit) leaves the
// destination as it was and no temporary.
TEST(RuntimeFiles, WriterLeavesNothingBehindWhenItFails) {
  TempDir dir;
  std::string out = dir / "out.safetensors";
  spit(out, "old contents");
  OneTensor big(1 << 20);
  struct rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  void (*oldHandler)(int) = std::signal(SIGXFSZ, SIG_IGN); // EFBIG instead of a signal
  struct rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  nncc_error err;
  nncc_status s = nncc_safetensors_writer_write(big.w, out.c_str(), &err);
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, oldHandler);
  EXPECT_STATUS_MSG(s, err, NNCC_ERROR_IO, "cannot write '" + out + "': cannot write '");
  EXPECT_NE(std::strstr(err.message, std::strerror(EFBIG)), nullptr) << err.message;
  EXPECT_EQ(slurp(out), "old contents");
  EXPECT_EQ(dir.list(), std::set<std::string>{"out.safetensors"});

  // A directory that cannot be written to (not for root, who can).
  if (geteuid() != 0) {
    std::string ro = dir / "ro";
    ASSERT_EQ(mkdir(ro.c_str(), 0500), 0);
    EXPECT_STATUS_MSG(nncc_safetensors_writer_write(big.w, (ro + "/w").c_str(), &err), err,
                      NNCC_ERROR_IO, "cannot create a temporary file in '" + ro + "'");
    chmod(ro.c_str(), 0700);
  }
}

// A new file gets 0666 minus the umask; a replaced one keeps its mode.
TEST(RuntimeFiles, WriterSetsPermissionsAsAnOrdinaryCreateWould) {
  TempDir dir;
  OneTensor t;
  nncc_error err;
  mode_t old = umask(027);
  std::string fresh = dir / "fresh";
  nncc_status s = nncc_safetensors_writer_write(t.w, fresh.c_str(), &err);
  umask(old);
  ASSERT_EQ(s, NNCC_OK) << err.message;
  EXPECT_EQ(modeOf(fresh), 0640u);
  std::string kept = dir / "kept";
  spit(kept, "x");
  ASSERT_EQ(chmod(kept.c_str(), 0604), 0);
  ASSERT_EQ(nncc_safetensors_writer_write(t.w, kept.c_str(), &err), NNCC_OK) << err.message;
  EXPECT_EQ(modeOf(kept), 0604u);
  EXPECT_EQ(slurp(kept), t.image());
}
