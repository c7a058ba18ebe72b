/* FakeCudaDriver.c - a stand-in libcuda.so.1 for tests on machines without a
 * GPU. "Device" memory is host memory; one device; one kernel, "fill_f32"
 * (params: CUdeviceptr dst, float value, int n), runs on the host. Selected
 * with NNCC_CUDA_DRIVER=<path to this library>. Not part of the runtime. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static int fake_context;
static int fake_module;
static int fake_function;

CUresult cuInit(unsigned int flags) { return flags == 0 ? 0 : 1; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuGetErrorName(CUresult r, const char **s) {
  switch (r) {
  case 0: *s = "CUDA_SUCCESS"; return 0;
  case 1: *s = "CUDA_ERROR_INVALID_VALUE"; return 0;
  case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
  case 101: *s = "CUDA_ERROR_INVALID_DEVICE"; return 0;
  case 200: *s = "CUDA_ERROR_INVALID_IMAGE"; return 0;
  case 500: *s = "CUDA_ERROR_NOT_FOUND"; return 0;
  default: *s = NULL; return 1;
  }
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  switch (r) {
  case 0: *s = "no error"; return 0;
  case 1: *s = "invalid argument"; return 0;
  case 2: *s = "out of memory"; return 0;
  case 101: *s = "invalid device ordinal"; return 0;
  case 200: *s = "device kernel image is invalid"; return 0;
  case 500: *s = "named symbol not found"; return 0;
  default: *s = NULL; return 1;
  }
}
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int ordinal) {
  if (ordinal != 0) return 101;
  *d = 0;
  return 0;
}
CUresult cuDeviceGetName(char *name, int len, int d) {
  (void)d;
  strncpy(name, "Fake CUDA Device", (size_t)len);
  return 0;
}
CUresult cuDeviceGetAttribute(int *v, int a, int d) { (void)a; (void)d; *v = 0; return 0; }
CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) { (void)d; *ctx = &fake_context; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(void *ctx) { return ctx == &fake_context ? 0 : 1; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuMemGetInfo_v2(size_t *f, size_t *t) { *f = 1u << 30; *t = 1u << 30; return 0; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  void *m;
  if (n > (1u << 30)) return 2;
  m = malloc(n ? n : 1);
  if (!m) return 2;
  *p = (CUdeviceptr)(uintptr_t)m;
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) {
  memset((void *)(uintptr_t)p, v, n);
  return 0;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
  memcpy((void *)(uintptr_t)d, s, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
  memcpy(d, (const void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st) {
  if (!st) return 1;
  return cuMemcpyHtoD_v2(d, s, n);
}
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) {
  if (!st) return 1;
  return cuMemcpyDtoH_v2(d, s, n);
}
CUresult cuStreamCreate(void **st, unsigned int flags) {
  (void)flags;
  *st = malloc(16);
  return *st ? 0 : 2;
}
CUresult cuStreamSynchronize(void *st) { return st ? 0 : 1; }
CUresult cuStreamDestroy_v2(void *st) { free(st); return 0; }
CUresult cuModuleLoadData(void **m, const void *image) {
  if (strncmp((const char *)image, "FAKE", 4) != 0) return 200;
  *m = &fake_module;
  return 0;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  if (m != &fake_module) return 1;
  if (strcmp(name, "fill_f32") != 0) return 500;
  *f = &fake_function;
  return 0;
}
CUresult cuModuleUnload(void *m) { return m == &fake_module ? 0 : 1; }
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream,
                        void **params, void **extra) {
  float *dst;
  float value;
  int n, i;
  (void)gy; (void)gz; (void)by; (void)bz; (void)shared; (void)stream; (void)extra;
  if (f != &fake_function || bx > 1024 || gx == 0) return 1;
  dst = (float *)(uintptr_t)(*(CUdeviceptr *)params[0]);
  value = *(float *)params[1];
  n = *(int *)params[2];
  for (i = 0; i < n && (unsigned)i < gx * bx; ++i)
    dst[i] = value;
  return 0;
}
