//===- Cuda.cpp - the CUDA driver through dlopen -------------------------===//
//
// libnncc_runtime never links -lcuda: binaries must start on machines without
// a driver. The driver is opened once per process; when that fails every CUDA
// entry point returns NNCC_ERROR_CUDA_UNAVAILABLE with the reason.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>

using namespace nncc::rt;

namespace {

constexpr const char *kDefaultDriver = "libcuda.so.1";

// CUresult values the runtime treats specially.
constexpr nncc_CUresult kOutOfMemory = 2;
constexpr nncc_CUresult kNotInitialized = 3;
constexpr nncc_CUresult kDeinitialized = 4;
constexpr nncc_CUresult kStubLibrary = 34;
constexpr nncc_CUresult kInsufficientDriver = 35;
constexpr nncc_CUresult kDevicesUnavailable = 46;
constexpr nncc_CUresult kNoDevice = 100;

struct LoadedDriver {
  void *handle = nullptr;
  nncc_cuda_driver table{};
  nncc_status status = NNCC_ERROR_CUDA_UNAVAILABLE;
  nncc_error error{};
};

std::string resultText(const nncc_cuda_driver *d, nncc_CUresult r) {
  const char *name = nullptr, *text = nullptr;
  if (d && d->cuGetErrorName)
    d->cuGetErrorName(r, &name);
  if (d && d->cuGetErrorString)
    d->cuGetErrorString(r, &text);
  std::string out = name ? name : ("CUresult " + std::to_string(r));
  if (text)
    out += std::string(" (") + text + ")";
  return out;
}

template <typename Fn>
bool resolve(void *handle, Fn &slot, const char *symbol) {
  void *p = dlsym(handle, symbol);
  std::memcpy(&slot, &p, sizeof p); // function pointer from object pointer
  return p != nullptr;
}

// Opens `path`, resolves the table and calls cuInit(0).
void load(const char *path, LoadedDriver &out) {
  dlerror();
  out.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!out.handle) {
    const char *why = dlerror();
    out.status = fail(&out.error, NNCC_ERROR_CUDA_UNAVAILABLE,
                      "CUDA driver %s not found: %s; run with --target cpu", path,
                      why ? why : "unknown dlopen error");
    return;
  }
  nncc_cuda_driver &t = out.table;
  struct Entry {
    bool ok;
    const char *name;
  };
#define NNCC_RESOLVE(field, symbol) Entry{resolve(out.handle, t.field, symbol), symbol}
  const Entry entries[] = {
      NNCC_RESOLVE(cuInit, "cuInit"),
      NNCC_RESOLVE(cuDriverGetVersion, "cuDriverGetVersion"),
      NNCC_RESOLVE(cuGetErrorString, "cuGetErrorString"),
      NNCC_RESOLVE(cuGetErrorName, "cuGetErrorName"),
      NNCC_RESOLVE(cuDeviceGetCount, "cuDeviceGetCount"),
      NNCC_RESOLVE(cuDeviceGet, "cuDeviceGet"),
      NNCC_RESOLVE(cuDeviceGetName, "cuDeviceGetName"),
      NNCC_RESOLVE(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
      NNCC_RESOLVE(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
      NNCC_RESOLVE(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
      NNCC_RESOLVE(cuCtxSetCurrent, "cuCtxSetCurrent"),
      NNCC_RESOLVE(cuCtxSynchronize, "cuCtxSynchronize"),
      NNCC_RESOLVE(cuMemGetInfo, "cuMemGetInfo_v2"),
      NNCC_RESOLVE(cuMemAlloc, "cuMemAlloc_v2"),
      NNCC_RESOLVE(cuMemFree, "cuMemFree_v2"),
      NNCC_RESOLVE(cuMemsetD8, "cuMemsetD8_v2"),
      NNCC_RESOLVE(cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
      NNCC_RESOLVE(cuMemcpyDtoH, "cuMemcpyDtoH_v2"),
      NNCC_RESOLVE(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
      NNCC_RESOLVE(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
      NNCC_RESOLVE(cuStreamCreate, "cuStreamCreate"),
      NNCC_RESOLVE(cuStreamSynchronize, "cuStreamSynchronize"),
      NNCC_RESOLVE(cuStreamDestroy, "cuStreamDestroy_v2"),
      NNCC_RESOLVE(cuModuleLoadData, "cuModuleLoadData"),
      NNCC_RESOLVE(cuModuleGetFunction, "cuModuleGetFunction"),
      NNCC_RESOLVE(cuModuleUnload, "cuModuleUnload"),
      NNCC_RESOLVE(cuLaunchKernel, "cuLaunchKernel"),
  };
#undef NNCC_RESOLVE
  for (const Entry &e : entries) {
    if (!e.ok) {
      out.status = fail(&out.error, NNCC_ERROR_CUDA_UNAVAILABLE,
                        "CUDA driver %s lacks %s (driver too old?); run with --target cpu",
                        path, e.name);
      dlclose(out.handle);
      out.handle = nullptr;
      out.table = nncc_cuda_driver{};
      return;
    }
  }
  nncc_CUresult r = t.cuInit(0);
  if (r != 0) {
    out.status = fail(&out.error, NNCC_ERROR_CUDA_UNAVAILABLE,
                      "CUDA driver %s: cuInit failed: %s; run with --target cpu", path,
                      resultText(&t, r).c_str());
    dlclose(out.handle);
    out.handle = nullptr;
    out.table = nncc_cuda_driver{};
    return;
  }
  out.status = ok(&out.error);
}

const LoadedDriver &globalDriver() {
  // Thread-safe one-time initialisation (C++11 magic statics). Never closed:
  // the driver stays loaded until the process exits.
  static const LoadedDriver *driver = [] {
    auto *d = new LoadedDriver();
    const char *env = std::getenv("NNCC_CUDA_DRIVER");
    load(env && *env ? env : kDefaultDriver, *d);
    return d;
  }();
  return *driver;
}

nncc_status copyError(const LoadedDriver &d, nncc_error *err) {
  if (err)
    *err = d.error;
  return d.status;
}

nncc_status makeCurrent(nncc_cuda_context *ctx, nncc_error *err) {
  return nncc_cuda_check(ctx->driver->cuCtxSetCurrent(ctx->context), "cuCtxSetCurrent", err);
}

} // namespace

const nncc_cuda_driver *nncc::rt::cudaDriver(nncc_error *err) {
  const LoadedDriver &d = globalDriver();
  if (d.status != NNCC_OK) {
    copyError(d, err);
    return nullptr;
  }
  return &d.table;
}

nncc_status nncc::rt::cudaZero(nncc_cuda_context *ctx, nncc_CUdeviceptr ptr,
                               uint64_t bytes, nncc_error *err) {
  if (nncc_status s = makeCurrent(ctx, err))
    return s;
  return nncc_cuda_check(ctx->driver->cuMemsetD8(ptr, 0, bytes), "cuMemsetD8", err);
}

#define NNCC_NEED(cond, ...)                                                   \
  do {                                                                         \
    if (!(cond))                                                               \
      return fail(err, NNCC_ERROR_INVALID_ARGUMENT, __VA_ARGS__);              \
  } while (0)

extern "C" {

nncc_status nncc_cuda_driver_get(const nncc_cuda_driver **out, nncc_error *err) {
  NNCC_NEED(out, "nncc_cuda_driver_get: out is NULL");
  *out = nullptr;
  const LoadedDriver &d = globalDriver();
  if (d.status == NNCC_OK)
    *out = &d.table;
  return copyError(d, err);
}

int nncc_cuda_available(void) {
  int count = 0;
  return nncc_cuda_device_count(&count, nullptr) == NNCC_OK && count > 0;
}

nncc_status nncc_cuda_driver_probe(const char *library_path, nncc_error *err) {
  NNCC_NEED(library_path, "nncc_cuda_driver_probe: library_path is NULL");
  LoadedDriver d;
  load(library_path, d);
  if (d.handle)
    dlclose(d.handle);
  return copyError(d, err);
}

nncc_status nncc_cuda_check(nncc_CUresult result, const char *what, nncc_error *err) {
  if (result == 0)
    return ok(err);
  const LoadedDriver &d = globalDriver();
  nncc_status status = NNCC_ERROR_CUDA;
  switch (result) {
  case kOutOfMemory:
    status = NNCC_ERROR_OUT_OF_MEMORY;
    break;
  case kNotInitialized:
  case kDeinitialized:
  case kStubLibrary:
  case kInsufficientDriver:
  case kDevicesUnavailable:
  case kNoDevice:
    status = NNCC_ERROR_CUDA_UNAVAILABLE;
    break;
  default:
    break;
  }
  return fail(err, status, "%s failed: %s", what ? what : "CUDA driver call",
              resultText(d.status == NNCC_OK ? &d.table : nullptr, result).c_str());
}

nncc_status nncc_cuda_device_count(int *count, nncc_error *err) {
  NNCC_NEED(count, "nncc_cuda_device_count: count is NULL");
  *count = 0;
  const nncc_cuda_driver *d = cudaDriver(err);
  if (!d)
    return err ? err->status : NNCC_ERROR_CUDA_UNAVAILABLE;
  return nncc_cuda_check(d->cuDeviceGetCount(count), "cuDeviceGetCount", err);
}

nncc_status nncc_cuda_context_create(int device_ordinal, nncc_cuda_context **out,
                                     nncc_error *err) {
  NNCC_NEED(out, "nncc_cuda_context_create: out is NULL");
  *out = nullptr;
  int count = 0;
  if (nncc_status s = nncc_cuda_device_count(&count, err))
    return s;
  if (count == 0)
    return fail(err, NNCC_ERROR_CUDA_UNAVAILABLE,
                "the CUDA driver reports no devices; run with --target cpu");
  if (device_ordinal < 0 || device_ordinal >= count)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "CUDA device %d requested but %d device(s) present (valid: 0..%d)",
                device_ordinal, count, count - 1);
  const nncc_cuda_driver *d = cudaDriver(err);
  auto *ctx = new nncc_cuda_context();
  ctx->driver = d;
  ctx->ordinal = device_ordinal;
  nncc_status s = nncc_cuda_check(d->cuDeviceGet(&ctx->device, device_ordinal),
                                  "cuDeviceGet", err);
  if (!s)
    s = nncc_cuda_check(d->cuDevicePrimaryCtxRetain(&ctx->context, ctx->device),
                        "cuDevicePrimaryCtxRetain", err);
  if (!s && (s = makeCurrent(ctx, err)))
    d->cuDevicePrimaryCtxRelease(ctx->device);
  if (s) {
    delete ctx;
    return s;
  }
  *out = ctx;
  return ok(err);
}

void nncc_cuda_context_destroy(nncc_cuda_context *ctx) {
  if (!ctx)
    return;
  ctx->driver->cuDevicePrimaryCtxRelease(ctx->device);
  delete ctx;
}

nncc_status nncc_cuda_context_make_current(nncc_cuda_context *ctx, nncc_error *err) {
  NNCC_NEED(ctx, "nncc_cuda_context_make_current: ctx is NULL");
  return makeCurrent(ctx, err);
}

nncc_status nncc_cuda_malloc(nncc_cuda_context *ctx, uint64_t bytes, nncc_CUdeviceptr *out,
                             nncc_error *err) {
  NNCC_NEED(ctx && out, "nncc_cuda_malloc: %s is NULL", ctx ? "out" : "ctx");
  *out = 0;
  if (nncc_status s = makeCurrent(ctx, err))
    return s;
  nncc_CUresult r = ctx->driver->cuMemAlloc(out, bytes);
  if (r == 0)
    return ok(err);
  char what[128];
  std::snprintf(what, sizeof what, "cuMemAlloc(%llu bytes) on device %d",
                (unsigned long long)bytes, ctx->ordinal);
  return nncc_cuda_check(r, what, err);
}

nncc_status nncc_cuda_free(nncc_cuda_context *ctx, nncc_CUdeviceptr ptr, nncc_error *err) {
  NNCC_NEED(ctx, "nncc_cuda_free: ctx is NULL");
  if (!ptr)
    return ok(err);
  if (nncc_status s = makeCurrent(ctx, err))
    return s;
  return nncc_cuda_check(ctx->driver->cuMemFree(ptr), "cuMemFree", err);
}

struct nncc_cuda_module {
  nncc_cuda_context *ctx;
  nncc_CUmodule module;
};

nncc_status nncc_cuda_module_load(nncc_cuda_context *ctx, const void *image,
                                  nncc_cuda_module **out, nncc_error *err) {
  NNCC_NEED(ctx && image && out, "nncc_cuda_module_load: NULL argument");
  *out = nullptr;
  if (nncc_status s = makeCurrent(ctx, err))
    return s;
  nncc_CUmodule m = nullptr;
  if (nncc_status s = nncc_cuda_check(ctx->driver->cuModuleLoadData(&m, image),
                                      "cuModuleLoadData", err))
    return s;
  *out = new nncc_cuda_module{ctx, m};
  return ok(err);
}

void nncc_cuda_module_unload(nncc_cuda_module *module) {
  if (!module)
    return;
  if (makeCurrent(module->ctx, nullptr) == NNCC_OK)
    module->ctx->driver->cuModuleUnload(module->module);
  delete module;
}

nncc_status nncc_cuda_module_function(nncc_cuda_module *module, const char *name,
                                      nncc_CUfunction *out, nncc_error *err) {
  NNCC_NEED(module && name && out, "nncc_cuda_module_function: NULL argument");
  *out = nullptr;
  nncc_CUresult r = module->ctx->driver->cuModuleGetFunction(out, module->module, name);
  if (r == 0)
    return ok(err);
  std::string qname = quote(name, std::strlen(name));
  if (r == 500) // CUDA_ERROR_NOT_FOUND
    return fail(err, NNCC_ERROR_NOT_FOUND, "kernel %s not found in the CUDA module",
                qname.c_str());
  std::string what = "cuModuleGetFunction(" + qname + ")";
  return nncc_cuda_check(r, what.c_str(), err);
}

nncc_status nncc_cuda_memcpy_htod(nncc_cuda_context *ctx, nncc_CUdeviceptr dst,
                                  const void *src, uint64_t bytes, nncc_stream *stream,
                                  nncc_error *err) {
  NNCC_NEED(ctx && (src || !bytes), "nncc_cuda_memcpy_htod: NULL argument");
  if (!bytes)
    return ok(err);
  if (nncc_status s = makeCurrent(ctx, err))
    return s;
  if (stream && stream->kind == NNCC_DEVICE_CUDA)
    return nncc_cuda_check(ctx->driver->cuMemcpyHtoDAsync(dst, src, bytes, stream->handle),
                           "cuMemcpyHtoDAsync", err);
  return nncc_cuda_check(ctx->driver->cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD", err);
}

nncc_status nncc_cuda_memcpy_dtoh(nncc_cuda_context *ctx, void *dst, nncc_CUdeviceptr src,
                                  uint64_t bytes, nncc_stream *stream, nncc_error *err) {
  NNCC_NEED(ctx && (dst || !bytes), "nncc_cuda_memcpy_dtoh: NULL argument");
  if (!bytes)
    return ok(err);
  if (nncc_status s = makeCurrent(ctx, err))
    return s;
  if (stream && stream->kind == NNCC_DEVICE_CUDA)
    return nncc_cuda_check(ctx->driver->cuMemcpyDtoHAsync(dst, src, bytes, stream->handle),
                           "cuMemcpyDtoHAsync", err);
  return nncc_cuda_check(ctx->driver->cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH", err);
}

nncc_status nncc_cuda_launch(nncc_cuda_context *ctx, nncc_CUfunction fn,
                             const unsigned int grid[3], const unsigned int block[3],
                             unsigned int shared_bytes, nncc_stream *stream, void **args,
                             const char *kernel_name, nncc_error *err) {
  NNCC_NEED(ctx && fn && grid && block, "nncc_cuda_launch: NULL argument");
  if (stream && stream->kind != NNCC_DEVICE_CUDA)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "nncc_cuda_launch: kernel %s given a CPU stream",
                kernel_name ? kernel_name : "?");
  if (nncc_status s = makeCurrent(ctx, err))
    return s;
  nncc_CUresult r = ctx->driver->cuLaunchKernel(
      fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes,
      stream ? stream->handle : nullptr, args, nullptr);
  if (r == 0)
    return ok(err);
  char what[256];
  std::snprintf(what, sizeof what,
                "launching kernel '%s' (grid [%u, %u, %u], block [%u, %u, %u], %u bytes "
                "shared)",
                kernel_name ? kernel_name : "?", grid[0], grid[1], grid[2], block[0],
                block[1], block[2], shared_bytes);
  return nncc_cuda_check(r, what, err);
}

} // extern "C"
