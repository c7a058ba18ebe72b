//===- SafetensorsTool.cpp - test helper for the runtime's lit tests ------===//
//
//   nncc-runtime-st-tool dump FILE        tensors and values as text
//   nncc-runtime-st-tool copy IN OUT      read IN, write OUT with our writer
//   nncc-runtime-st-tool check FILE       "OK" or "STATUS_NAME: message"
//   nncc-runtime-st-tool rng u32|uniform|normal SEED STREAM OFFSET N
//
// Exit status 0 on success, 1 on a runtime error (printed), 2 on bad usage.
//
//===----------------------------------------------------------------------===//

#include "nncc/Runtime/nncc_runtime.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int report(const nncc_error &err) {
  std::printf("%s: %s\n", nncc_status_name(err.status), err.message);
  return 1;
}

template <typename T> T load(const void *data, uint64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char *>(data) + i * sizeof(T), sizeof(T));
  return v;
}

void printValue(const nncc_tensor_view &v, uint64_t i) {
  switch (v.dtype) {
  case NNCC_DTYPE_F64: std::printf("%.17g", load<double>(v.data, i)); break;
  case NNCC_DTYPE_F32: std::printf("%.9g", load<float>(v.data, i)); break;
  case NNCC_DTYPE_F16: std::printf("%.9g", nncc_f16_to_f32(load<uint16_t>(v.data, i))); break;
  case NNCC_DTYPE_BF16: std::printf("%.9g", nncc_bf16_to_f32(load<uint16_t>(v.data, i))); break;
  case NNCC_DTYPE_I64: std::printf("%" PRId64, load<int64_t>(v.data, i)); break;
  case NNCC_DTYPE_I32: std::printf("%" PRId32, load<int32_t>(v.data, i)); break;
  case NNCC_DTYPE_I16: std::printf("%d", load<int16_t>(v.data, i)); break;
  case NNCC_DTYPE_I8: std::printf("%d", load<int8_t>(v.data, i)); break;
  case NNCC_DTYPE_U8:
  case NNCC_DTYPE_BOOL: std::printf("%u", load<uint8_t>(v.data, i)); break;
  case NNCC_DTYPE_INVALID: std::printf("?"); break;
  }
}

int dump(const char *path) {
  nncc_error err;
  nncc_safetensors *f = nullptr;
  if (nncc_safetensors_open(path, &f, &err))
    return report(err);
  for (size_t i = 0; i < nncc_safetensors_metadata_count(f); ++i) {
    const char *k, *val;
    nncc_safetensors_metadata_at(f, i, &k, &val, nullptr);
    std::printf("meta %s=%s\n", k, val);
  }
  for (size_t i = 0; i < nncc_safetensors_count(f); ++i) {
    nncc_tensor_view v;
    nncc_safetensors_tensor_at(f, i, &v, nullptr);
    std::printf("tensor %s %s [", v.name, nncc_dtype_name(v.dtype));
    for (int32_t d = 0; d < v.rank; ++d)
      std::printf(d ? ",%" PRId64 : "%" PRId64, v.shape[d]);
    std::printf("]");
    for (uint64_t e = 0; e < v.numel; ++e) {
      std::printf(e ? "," : " ");
      printValue(v, e);
    }
    std::printf("\n");
  }
  nncc_safetensors_close(f);
  return 0;
}

int copy(const char *in, const char *out) {
  nncc_error err;
  nncc_safetensors *f = nullptr;
  nncc_safetensors_writer *w = nullptr;
  if (nncc_safetensors_open(in, &f, &err) || nncc_safetensors_writer_create(&w, &err))
    return report(err);
  int rc = 0;
  for (size_t i = 0; !rc && i < nncc_safetensors_count(f); ++i) {
    nncc_tensor_view v;
    nncc_safetensors_tensor_at(f, i, &v, nullptr);
    if (nncc_safetensors_writer_add(w, v.name, v.dtype, v.rank, v.shape, v.data, v.nbytes, &err))
      rc = report(err);
  }
  for (size_t i = 0; !rc && i < nncc_safetensors_metadata_count(f); ++i) {
    const char *k, *val;
    nncc_safetensors_metadata_at(f, i, &k, &val, nullptr);
    if (nncc_safetensors_writer_set_metadata(w, k, val, &err))
      rc = report(err);
  }
  if (!rc && (nncc_safetensors_writer_set_metadata(w, "written_by", "nncc", &err) ||
              nncc_safetensors_writer_write(w, out, &err)))
    rc = report(err);
  nncc_safetensors_writer_destroy(w);
  nncc_safetensors_close(f);
  return rc;
}

int check(const char *path) {
  nncc_error err;
  nncc_safetensors *f = nullptr;
  if (nncc_safetensors_open(path, &f, &err))
    return report(err);
  std::printf("OK %zu tensors\n", nncc_safetensors_count(f));
  nncc_safetensors_close(f);
  return 0;
}

int rng(const char *kind, uint64_t seed, uint64_t stream, uint64_t offset, uint64_t n) {
  if (!std::strcmp(kind, "u32")) {
    std::vector<uint32_t> v(n);
    nncc_rng_fill_u32(v.data(), n, seed, stream, offset);
    for (uint32_t x : v)
      std::printf("%u\n", x);
  } else if (!std::strcmp(kind, "uniform") || !std::strcmp(kind, "normal")) {
    std::vector<float> v(n);
    if (kind[0] == 'u')
      nncc_rng_fill_uniform_f32(v.data(), n, seed, stream, offset, 0.f, 1.f);
    else
      nncc_rng_fill_normal_f32(v.data(), n, seed, stream, offset, 0.f, 1.f);
    for (float x : v)
      std::printf("%.9g\n", x);
  } else {
    return 2;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 3 && !std::strcmp(argv[1], "dump"))
    return dump(argv[2]);
  if (argc == 4 && !std::strcmp(argv[1], "copy"))
    return copy(argv[2], argv[3]);
  if (argc == 3 && !std::strcmp(argv[1], "check"))
    return check(argv[2]);
  if (argc == 7 && !std::strcmp(argv[1], "rng"))
    return rng(argv[2], std::strtoull(argv[3], nullptr, 0), std::strtoull(argv[4], nullptr, 0),
               std::strtoull(argv[5], nullptr, 0), std::strtoull(argv[6], nullptr, 0));
  std::fprintf(stderr,
               "usage: %s dump FILE | copy IN OUT | check FILE | "
               "rng u32|uniform|normal SEED STREAM OFFSET N\n",
               argv[0]);
  return 2;
}
