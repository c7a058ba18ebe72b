//===- nncc_runner.cpp - Run a compiled model from safetensors files ------===//
//
// nncc-runner: the small runner of a deploy bundle (`nncc compile --bundle`),
// needing only libnncc_runtime and the model library (no LLVM, no Python):
//
//   nncc-runner [lib<model>.so] --inputs I.safetensors [--weights W | --seed N]
//               [--target cpu|cuda] [-o O.safetensors] [--expect E --tol X]
//               [--repeat N] [--threads N]
//
// Without a library argument it runs the one lib*.so beside itself (the
// bundle's). Prints every output (shape, min, max, mean), the arena figures
// and, with --repeat, the median forward time; with --expect, the error of
// each output against E (max|a - e| / max(1, max|e|)) and exit status 1
// above --tol. --help lists the options. Errors are one line
// `nncc-runner: error: ...` (as nncc's) with exit status 1; 3 when the CUDA
// target cannot run here.
//
//===----------------------------------------------------------------------===//

#include "nncc/Runtime/nncc_model.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

struct Options {
  std::string library, inputs, weights, output, expect;
  std::string target = "cpu";
  uint64_t seed = 0;
  double tol = 1e-4;
  int repeat = 0;
  int threads = 0; // 0: the OpenMP / OpenBLAS defaults
};

/// The options, for --help and for the suggestion after a misspelt one.
struct OptionSpec {
  const char *name, *value, *help;
};
const OptionSpec kOptions[] = {
    {"--inputs", "I.safetensors", "every model input, by name (required)"},
    {"--weights", "W.safetensors", "the parameters (default: init_weights(--seed))"},
    {"--seed", "N", "the seed of init_weights without --weights (default 0)"},
    {"--target", "cpu|cuda", "where to run (default cpu)"},
    {"-o", "O.safetensors", "write every output here"},
    {"--expect", "E.safetensors",
     "compare every output with E's: max|a - e| / max(1, max|e|), exit status 1 above --tol"},
    {"--tol", "X", "the error --expect accepts (default 1e-4)"},
    {"--repeat", "N", "time N more forwards, print the median and the fastest"},
    {"--threads", "N",
     "threads of the CPU kernels (OpenMP and OpenBLAS), N >= 1 (default: OMP_NUM_THREADS, "
     "else one per core)"},
    {"--help", "", "print this and exit (also -h)"},
};

void printHelp() {
  std::printf("usage: nncc-runner [lib<model>.so] --inputs I.safetensors [options]\n\n"
              "Runs a model library compiled by nncc (without one: the one lib*.so beside "
              "nncc-runner, a deploy bundle's) and prints every output.\n\noptions:\n");
  for (const OptionSpec &o : kOptions) {
    std::string left = std::string(o.name) + (*o.value ? " " : "") + o.value;
    std::printf("  %-24s %s\n", left.c_str(), o.help);
  }
}

/// Control characters escaped (\xNN), so that an error stays one line.
std::string printable(const std::string &s) {
  std::string out;
  for (char c : s) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof(hex), "\\x%02x", byte);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

/// One line `nncc-runner: error: <message>` (as nncc's driver::fail); 1.
int error(const std::string &message) {
  std::fprintf(stderr, "nncc-runner: error: %s\n", printable(message).c_str());
  return 1;
}

bool fail(const char *what, const nncc_error &err) {
  error(std::string(what) + ": " + err.message);
  return false;
}

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// "unknown option 'X'", with the nearest known option when one is close.
int unknownOption(const std::string &given) {
  std::string name = given.substr(0, given.find('='));
  const char *best = nullptr;
  size_t bestDistance = 0;
  for (const OptionSpec &o : kOptions) {
    size_t d = editDistance(name, o.name);
    if (!best || d < bestDistance)
      best = o.name, bestDistance = d;
  }
  std::string message = "unknown option '" + given + "'";
  if (best && bestDistance <= std::max<size_t>(2, name.size() / 3))
    message += "; did you mean '" + std::string(best) + "'?";
  return error(message + " (nncc-runner --help lists the options)");
}

/// A whole number in [lo, hi], or an error naming the option and the value.
bool parseInteger(const std::string &option, const std::string &value, long long lo,
                  long long hi, long long &into, int &rc) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(value.c_str(), &end, 10);
  const bool number = !value.empty() && !*end && value[0] != ' ';
  if (!number || v < lo) {
    rc = error(option + " expects a whole number >= " + std::to_string(lo) + ", got '" + value +
               "'");
    return false;
  }
  if (v > hi) {
    rc = error(option + " expects a whole number of at most " + std::to_string(hi) + ", got '" +
               value + "'");
    return false;
  }
  into = v;
  return true;
}

/// Sets the threads of the CPU kernels: OpenMP's (their parallel loops and
/// GEMM panels) and OpenBLAS's (its own pool, for a GEMM outside a parallel
/// region), both loaded by `lib` (libnncc_kernels' dependencies). Before the
/// library is loaded, OMP_NUM_THREADS and OPENBLAS_NUM_THREADS are set as
/// well (main), so that neither starts a thread per core first.
bool setThreads(void *lib, int threads) {
  auto omp = reinterpret_cast<void (*)(int)>(dlsym(lib, "omp_set_num_threads"));
  auto blas = reinterpret_cast<void (*)(int)>(dlsym(lib, "openblas_set_num_threads"));
  if (!omp && !blas) {
    error("--threads: the library loads neither OpenMP nor OpenBLAS");
    return false;
  }
  if (omp)
    omp(threads);
  if (blas)
    blas(threads);
  return true;
}

/// The one lib*.so in the directory of this executable.
std::string bundledLibrary() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0)
    return "";
  self[n] = 0;
  std::string dir(self);
  dir = dir.substr(0, dir.rfind('/'));
  std::vector<std::string> found;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("lib", 0) == 0 && name.size() > 3 && name.compare(name.size() - 3, 3, ".so") == 0 &&
          name.rfind("libnncc_", 0) != 0)
        found.push_back(dir + "/" + name);
    }
    closedir(d);
  }
  return found.size() == 1 ? found[0] : "";
}

/// Every element of a float/int tensor as double.
std::vector<double> toDouble(nncc_dtype dtype, const void *data, uint64_t n) {
  std::vector<double> v(n);
  for (uint64_t i = 0; i < n; ++i) {
    switch (dtype) {
    case NNCC_DTYPE_F64: v[i] = static_cast<const double *>(data)[i]; break;
    case NNCC_DTYPE_F32: v[i] = static_cast<const float *>(data)[i]; break;
    case NNCC_DTYPE_I64: v[i] = double(static_cast<const int64_t *>(data)[i]); break;
    case NNCC_DTYPE_I32: v[i] = static_cast<const int32_t *>(data)[i]; break;
    case NNCC_DTYPE_BF16: v[i] = nncc_bf16_to_f32(static_cast<const uint16_t *>(data)[i]); break;
    case NNCC_DTYPE_I16: v[i] = static_cast<const int16_t *>(data)[i]; break;
    case NNCC_DTYPE_I8: v[i] = static_cast<const int8_t *>(data)[i]; break;
    case NNCC_DTYPE_U8:
    case NNCC_DTYPE_BOOL: v[i] = static_cast<const uint8_t *>(data)[i]; break;
    default: v[i] = NAN; break;
    }
  }
  return v;
}

std::string shapeString(int32_t rank, const int64_t *shape) {
  std::string s = "[";
  for (int32_t i = 0; i < rank; ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// An F32 input of a bf16 library (an input declared BF16) is rounded to
/// bf16, as `nncc run --precision bf16` does.
void narrowForBf16(nncc_dtype want, nncc_tensor_view &v, std::vector<char> &buffer) {
  if (want != NNCC_DTYPE_BF16 || v.dtype != NNCC_DTYPE_F32)
    return;
  const float *f = reinterpret_cast<const float *>(buffer.data());
  std::vector<char> narrow(v.numel * 2 + 1);
  for (uint64_t k = 0; k < v.numel; ++k) {
    const uint16_t b = nncc_f32_to_bf16(f[k]);
    std::memcpy(narrow.data() + 2 * k, &b, 2);
  }
  buffer.swap(narrow);
  v.dtype = NNCC_DTYPE_BF16;
  v.nbytes = v.numel * 2;
}

bool run(const Options &o) {
  void *lib = dlopen(o.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    error("cannot load '" + o.library + "': " + dlerror());
    return false;
  }
  auto getAbi = reinterpret_cast<nncc_model_get_abi_fn>(dlsym(lib, "nncc_model_get_abi"));
  if (!getAbi) {
    error("'" + o.library + "' is not a library generated by nncc (no nncc_model_get_abi)");
    return false;
  }
  const nncc_model_abi *abi = getAbi();
  if (abi->abi_version != NNCC_MODEL_ABI_VERSION) {
    error("'" + o.library + "' has ABI version " + std::to_string(abi->abi_version) +
          ", this runner " + std::to_string(NNCC_MODEL_ABI_VERSION));
    return false;
  }
  if (o.threads > 0 && !setThreads(lib, o.threads))
    return false;
  nncc_error err;
  nncc_model *model = nullptr;
  nncc_target target = o.target == "cuda" ? NNCC_TARGET_CUDA : NNCC_TARGET_CPU;
  if (abi->create(target, &model, &err) != NNCC_OK)
    return fail("create", err);
  bool ok = o.weights.empty() ? abi->init_weights(model, o.seed, &err) == NNCC_OK ||
                                    fail("init_weights", err)
                              : abi->load_weights(model, o.weights.c_str(), &err) == NNCC_OK ||
                                    fail("--weights", err);
  nncc_safetensors *in = nullptr;
  if (ok && nncc_safetensors_open(o.inputs.c_str(), &in, &err) != NNCC_OK)
    ok = fail("--inputs", err);
  std::string leftOut; // inputs only the loss reads, not in the file: no loss
  for (int32_t i = 0; ok && i < abi->num_inputs; ++i) {
    nncc_tensor_view v;
    std::vector<char> buffer;
    if (abi->inference_inputs && !abi->inference_inputs[i] &&
        nncc_safetensors_find(in, abi->inputs[i].name, &v, nullptr) != NNCC_OK) {
      leftOut += (leftOut.empty() ? "'" : ", '") + std::string(abi->inputs[i].name) + "'";
      continue;
    }
    ok = (nncc_safetensors_find(in, abi->inputs[i].name, &v, &err) == NNCC_OK ||
          fail("--inputs", err));
    if (!ok)
      break;
    buffer.resize(v.nbytes + 1);
    ok = (nncc_safetensors_read_into(in, v.name, v.dtype, v.rank, v.shape, buffer.data(),
                                     v.nbytes, &err) == NNCC_OK ||
          fail("--inputs", err)) &&
         (narrowForBf16(abi->inputs[i].dtype, v, buffer),
          abi->set_input(model, v.name, v.dtype, v.rank, v.shape, buffer.data(), &err) ==
              NNCC_OK ||
          fail("set_input", err));
  }
  if (in)
    nncc_safetensors_close(in);
  ok = ok && (abi->forward(model, &err) == NNCC_OK || fail("forward", err));
  if (ok && o.repeat > 0) {
    std::vector<double> ms;
    for (int r = 0; ok && r < o.repeat; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      ok = abi->forward(model, &err) == NNCC_OK || fail("forward", err);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                       .count());
    }
    std::sort(ms.begin(), ms.end());
    if (ok)
      std::printf("forward: median %.3f ms, min %.3f ms over %d runs (%s)\n", ms[ms.size() / 2],
                  ms[0], o.repeat, o.target.c_str());
  }

  nncc_safetensors *expect = nullptr;
  if (ok && !o.expect.empty() && nncc_safetensors_open(o.expect.c_str(), &expect, &err) != NNCC_OK)
    ok = fail("--expect", err);
  nncc_safetensors_writer *writer = nullptr;
  if (ok && !o.output.empty() && nncc_safetensors_writer_create(&writer, &err) != NNCC_OK)
    ok = fail("-o", err);
  bool within = true;
  for (int32_t i = 0; ok && i < abi->num_outputs; ++i) {
    const char *name = abi->outputs[i].name;
    if (!leftOut.empty() && i + 1 == abi->num_outputs && std::strcmp(name, "loss") == 0) {
      std::printf("output loss: not computed (%s, which only the loss reads, not given)\n",
                  leftOut.c_str());
      continue;
    }
    nncc_dtype dtype;
    int32_t rank;
    const int64_t *shape;
    const void *data;
    if (abi->get_output(model, name, &dtype, &rank, &shape, &data, &err) != NNCC_OK) {
      ok = fail("get_output", err);
      break;
    }
    uint64_t n = 1;
    for (int32_t k = 0; k < rank; ++k)
      n *= uint64_t(shape[k]);
    std::vector<double> v = toDouble(dtype, data, n);
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    for (double x : v)
      lo = std::min(lo, x), hi = std::max(hi, x), sum += x;
    std::printf("output %s %s %s: min %.6g max %.6g mean %.6g\n", name, nncc_dtype_name(dtype),
                shapeString(rank, shape).c_str(), lo, hi, n ? sum / double(n) : 0.0);
    if (writer && nncc_safetensors_writer_add(writer, name, dtype, rank, shape, data,
                                              n * nncc_dtype_size(dtype), &err) != NNCC_OK)
      ok = fail("-o", err);
    if (expect) {
      // A bf16 library's outputs compare with an f32 run's.
      nncc_tensor_view e;
      if ((dtype != NNCC_DTYPE_BF16 ||
           nncc_safetensors_get(expect, name, NNCC_DTYPE_F32, rank, shape, &e, nullptr) !=
               NNCC_OK) &&
          nncc_safetensors_get(expect, name, dtype, rank, shape, &e, &err) != NNCC_OK) {
        ok = fail("--expect", err);
        break;
      }
      std::vector<double> ref = toDouble(e.dtype, e.data, e.numel);
      double diff = 0, scale = 1;
      // NaN matches NaN only (std::max would drop a NaN difference).
      for (uint64_t k = 0; k < n; ++k) {
        if (std::isnan(v[k]) || std::isnan(ref[k])) {
          if (std::isnan(v[k]) != std::isnan(ref[k]))
            diff = INFINITY;
          continue;
        }
        diff = std::max(diff, std::fabs(v[k] - ref[k])), scale = std::max(scale, std::fabs(ref[k]));
      }
      double rel = std::isfinite(diff) ? diff / scale : INFINITY;
      bool pass = rel <= o.tol;
      within = within && pass;
      std::printf("  %s vs expected: err %.3e (tol %.0e)\n", pass ? "PASS" : "FAIL", rel, o.tol);
    }
  }
  if (ok && writer && nncc_safetensors_writer_write(writer, o.output.c_str(), &err) != NNCC_OK)
    ok = fail("-o", err);
  uint64_t arena = 0, peak = 0;
  if (ok && abi->memory_stats(model, &arena, &peak, &err) == NNCC_OK)
    std::printf("arena %llu bytes, peak %llu bytes\n", (unsigned long long)arena,
                (unsigned long long)peak);
  if (writer)
    nncc_safetensors_writer_destroy(writer);
  if (expect)
    nncc_safetensors_close(expect);
  abi->destroy(model);
  return ok && within;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      printHelp();
      return 0;
    }
    // --name=value as well as --name value.
    std::string inlineValue;
    bool hasInline = false;
    if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos) {
      inlineValue = a.substr(a.find('=') + 1);
      a = a.substr(0, a.find('='));
      hasInline = true;
    }
    const OptionSpec *spec = nullptr;
    for (const OptionSpec &s : kOptions)
      if (a == s.name && *s.value)
        spec = &s;
    if (!spec) {
      if (!a.empty() && a[0] == '-' && a != "-")
        return unknownOption(argv[i]);
      if (hasInline)
        return unknownOption(argv[i]);
      if (!o.library.empty())
        return error("more than one library: '" + o.library + "' and '" + a + "'");
      o.library = a;
      continue;
    }
    std::string v;
    if (hasInline) {
      v = inlineValue;
    } else if (i + 1 < argc) {
      v = argv[++i];
    } else {
      return error("option '" + a + "' needs a value: " + a + " " + spec->value);
    }
    if (v.empty())
      return error("option '" + a + "' needs a value: " + a + " " + spec->value + ", got ''");
    int rc = 0;
    long long n = 0;
    if (a == "--inputs") {
      o.inputs = v;
    } else if (a == "--weights") {
      o.weights = v;
    } else if (a == "-o") {
      o.output = v;
    } else if (a == "--expect") {
      o.expect = v;
    } else if (a == "--target") {
      if (v != "cpu" && v != "cuda")
        return error("--target is cpu or cuda, got '" + v + "'");
      o.target = v;
    } else if (a == "--seed") {
      char *end = nullptr;
      errno = 0;
      o.seed = std::strtoull(v.c_str(), &end, 10);
      if (*end || errno == ERANGE || v[0] == '-' || v[0] == '+' || v[0] == ' ')
        return error("--seed expects a whole number in [0, 2^64), got '" + v + "'");
    } else if (a == "--tol") {
      char *end = nullptr;
      o.tol = std::strtod(v.c_str(), &end);
      if (*end || !std::isfinite(o.tol) || o.tol < 0)
        return error("--tol expects a number >= 0, got '" + v + "'");
    } else if (a == "--repeat") {
      if (!parseInteger(a, v, 0, INT_MAX, n, rc))
        return rc;
      o.repeat = int(n);
    } else if (a == "--threads") {
      if (!parseInteger(a, v, 1, INT_MAX, n, rc))
        return rc;
      o.threads = int(n);
    }
  }
  if (o.inputs.empty())
    return error("--inputs I.safetensors is required (nncc-runner --help lists the options)");
  if (o.library.empty() && (o.library = bundledLibrary()).empty())
    return error("no library given and not exactly one lib*.so beside nncc-runner");
  if (o.threads > 0) {
    // Read by OpenMP and OpenBLAS when the library loads them (setThreads
    // then sets both again, in case they were loaded before).
    setenv("OMP_NUM_THREADS", std::to_string(o.threads).c_str(), 1);
    setenv("OPENBLAS_NUM_THREADS", std::to_string(o.threads).c_str(), 1);
  }
  nncc_error err;
  if (o.target == "cuda") {
    const nncc_cuda_driver *drv = nullptr;
    if (nncc_cuda_driver_get(&drv, &err) != NNCC_OK) {
      error(std::string("--target cuda: ") + err.message);
      return 3;
    }
  }
  return run(o) ? 0 : 1;
}
