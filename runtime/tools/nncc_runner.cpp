//===- nncc_runner.cpp - Run a compiled model from safetensors files ------===//
//
// nncc-runner: the small runner of a deploy bundle (`nncc compile --bundle`),
// needing only libnncc_runtime and the model library (no LLVM, no Python):
//
//   nncc-runner [lib<model>.so] --inputs I.safetensors [--weights W | --seed N]
//               [--target cpu|cuda] [-o O.safetensors] [--expect E --tol X]
//               [--repeat N]
//
// Without a library argument it runs the one lib*.so beside itself (the
// bundle's). Prints every output (shape, min, max, mean), the arena figures
// and, with --repeat, the median forward time; with --expect, the error of
// each output against E (max|a - e| / max(1, max|e|)) and exit status 1
// above --tol. Exit status 2 on usage errors, 1 on any failure, 3 when the
// CUDA target cannot run here.
//
//===----------------------------------------------------------------------===//

#include "nncc/Runtime/nncc_model.h"

#include <algorithm>
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
};

int usage(const char *why) {
  std::fprintf(stderr,
               "nncc-runner: %s\nusage: nncc-runner [lib<model>.so] --inputs I.safetensors "
               "[--weights W.safetensors | --seed N] [--target cpu|cuda] [-o O.safetensors] "
               "[--expect E.safetensors] [--tol X] [--repeat N]\n",
               why);
  return 2;
}

bool fail(const char *what, const nncc_error &err) {
  std::fprintf(stderr, "nncc-runner: %s: %s: %s\n", what, nncc_status_name(err.status),
               err.message);
  return false;
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
    std::fprintf(stderr, "nncc-runner: cannot load %s: %s\n", o.library.c_str(), dlerror());
    return false;
  }
  auto getAbi = reinterpret_cast<nncc_model_get_abi_fn>(dlsym(lib, "nncc_model_get_abi"));
  if (!getAbi) {
    std::fprintf(stderr, "nncc-runner: %s is not an nncc model library\n", o.library.c_str());
    return false;
  }
  const nncc_model_abi *abi = getAbi();
  if (abi->abi_version != NNCC_MODEL_ABI_VERSION) {
    std::fprintf(stderr, "nncc-runner: %s has ABI version %u, this runner %d\n",
                 o.library.c_str(), abi->abi_version, NNCC_MODEL_ABI_VERSION);
    return false;
  }
  nncc_error err;
  nncc_model *model = nullptr;
  nncc_target target = o.target == "cuda" ? NNCC_TARGET_CUDA : NNCC_TARGET_CPU;
  if (abi->create(target, &model, &err) != NNCC_OK)
    return fail("create", err);
  bool ok = o.weights.empty() ? abi->init_weights(model, o.seed, &err) == NNCC_OK ||
                                    fail("init_weights", err)
                              : abi->load_weights(model, o.weights.c_str(), &err) == NNCC_OK ||
                                    fail("load_weights", err);
  nncc_safetensors *in = nullptr;
  if (ok && nncc_safetensors_open(o.inputs.c_str(), &in, &err) != NNCC_OK)
    ok = fail("inputs", err);
  for (int32_t i = 0; ok && i < abi->num_inputs; ++i) {
    nncc_tensor_view v;
    std::vector<char> buffer;
    ok = (nncc_safetensors_find(in, abi->inputs[i].name, &v, &err) == NNCC_OK ||
          fail("inputs", err));
    if (!ok)
      break;
    buffer.resize(v.nbytes + 1);
    ok = (nncc_safetensors_read_into(in, v.name, v.dtype, v.rank, v.shape, buffer.data(),
                                     v.nbytes, &err) == NNCC_OK ||
          fail("inputs", err)) &&
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
    ok = fail("expect", err);
  nncc_safetensors_writer *writer = nullptr;
  if (ok && !o.output.empty() && nncc_safetensors_writer_create(&writer, &err) != NNCC_OK)
    ok = fail("output", err);
  bool within = true;
  for (int32_t i = 0; ok && i < abi->num_outputs; ++i) {
    const char *name = abi->outputs[i].name;
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
      ok = fail("output", err);
    if (expect) {
      // A bf16 library's outputs compare with an f32 run's.
      nncc_tensor_view e;
      if ((dtype != NNCC_DTYPE_BF16 ||
           nncc_safetensors_get(expect, name, NNCC_DTYPE_F32, rank, shape, &e, nullptr) !=
               NNCC_OK) &&
          nncc_safetensors_get(expect, name, dtype, rank, shape, &e, &err) != NNCC_OK) {
        ok = fail("expect", err);
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
    ok = fail("output", err);
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
    auto value = [&](std::string &into) {
      if (i + 1 >= argc)
        return false;
      into = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--inputs") {
      if (!value(o.inputs)) return usage("--inputs needs a file");
    } else if (a == "--weights") {
      if (!value(o.weights)) return usage("--weights needs a file");
    } else if (a == "-o") {
      if (!value(o.output)) return usage("-o needs a file");
    } else if (a == "--expect") {
      if (!value(o.expect)) return usage("--expect needs a file");
    } else if (a == "--target") {
      if (!value(o.target) || (o.target != "cpu" && o.target != "cuda"))
        return usage("--target is cpu or cuda");
    } else if (a == "--seed" || a == "--tol" || a == "--repeat") {
      char *end = nullptr;
      if (!value(v) || v.empty())
        return usage((a + " needs a number").c_str());
      if (a == "--tol")
        o.tol = std::strtod(v.c_str(), &end);
      else if (a == "--seed")
        o.seed = std::strtoull(v.c_str(), &end, 10);
      else
        o.repeat = int(std::strtol(v.c_str(), &end, 10));
      if (*end || o.tol < 0 || o.repeat < 0)
        return usage((a + ": '" + v + "' is not a valid number").c_str());
    } else if (!a.empty() && a[0] == '-') {
      return usage(("unknown option " + a).c_str());
    } else if (o.library.empty()) {
      o.library = a;
    } else {
      return usage("more than one library");
    }
  }
  if (o.inputs.empty())
    return usage("--inputs is required");
  if (o.library.empty() && (o.library = bundledLibrary()).empty())
    return usage("no library given and not exactly one lib*.so beside the runner");
  nncc_error err;
  if (o.target == "cuda") {
    const nncc_cuda_driver *drv = nullptr;
    if (nncc_cuda_driver_get(&drv, &err) != NNCC_OK) {
      std::fprintf(stderr, "nncc-runner: --target cuda: %s\n", err.message);
      return 3;
    }
  }
  return run(o) ? 0 : 1;
}
