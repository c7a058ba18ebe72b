//===- Arena.cpp - one allocation per context, offsets planned by nncc ----===//

#include "RuntimeInternal.h"

#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

using namespace nncc::rt;

struct nncc_arena {
  nncc_device_kind kind = NNCC_DEVICE_CPU;
  nncc_cuda_context *ctx = nullptr;
  uint64_t capacity = 0;
  void *host = nullptr;          // CPU: anonymous pages of hostBytes
  size_t hostBytes = 0;
  nncc_CUdeviceptr device = 0;   // CUDA
  uint64_t bump = 0;             // next free offset for nncc_arena_alloc
  uint64_t highWater = 0;
};

namespace {

std::string label(const char *what) {
  return what ? quote(what, std::strlen(what)) : std::string("buffer");
}

nncc_status tooBig(const nncc_arena *a, const char *what, uint64_t offset, uint64_t size,
                   nncc_error *err) {
  uint64_t end = offset + size;
  bool wraps = end < offset;
  if (wraps)
    return fail(err, NNCC_ERROR_OUT_OF_MEMORY,
                "arena: %s at offset %llu with %llu bytes overflows 64-bit offsets "
                "(arena holds %llu bytes)",
                label(what).c_str(), (unsigned long long)offset, (unsigned long long)size,
                (unsigned long long)a->capacity);
  return fail(err, NNCC_ERROR_OUT_OF_MEMORY,
              "arena: %s needs bytes [%llu, %llu) but the %s arena holds %llu bytes "
              "(%llu bytes short)",
              label(what).c_str(), (unsigned long long)offset, (unsigned long long)end,
              a->kind == NNCC_DEVICE_CPU ? "CPU" : "CUDA", (unsigned long long)a->capacity,
              (unsigned long long)(end - a->capacity));
}

} // namespace

extern "C" {

nncc_status nncc_arena_create_cpu(uint64_t capacity, nncc_arena **out, nncc_error *err) {
  if (!out)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_arena_create_cpu: out is NULL");
  *out = nullptr;
  auto *a = new nncc_arena();
  a->capacity = capacity;
  if (capacity) {
    // Anonymous pages: page-aligned (>= NNCC_ARENA_ALIGNMENT) and zero, and
    // only the pages a function touches become resident, so a region that
    // only another function uses (the inference forward's logits beside a
    // fused training head) costs no memory in the training step.
    uint64_t rounded = (capacity + NNCC_ARENA_ALIGNMENT - 1) / NNCC_ARENA_ALIGNMENT *
                       NNCC_ARENA_ALIGNMENT;
    void *pages = rounded < capacity || rounded > SIZE_MAX
                      ? MAP_FAILED
                      : mmap(nullptr, static_cast<size_t>(rounded), PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED) {
      delete a;
      return fail(err, NNCC_ERROR_OUT_OF_MEMORY,
                  "arena: cannot allocate %llu bytes of host memory",
                  (unsigned long long)capacity);
    }
    a->host = pages;
    a->hostBytes = static_cast<size_t>(rounded);
  }
  *out = a;
  return ok(err);
}

nncc_status nncc_arena_create_cuda(nncc_cuda_context *ctx, uint64_t capacity,
                                   nncc_arena **out, nncc_error *err) {
  if (!out)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_arena_create_cuda: out is NULL");
  *out = nullptr;
  if (!ctx) {
    // Say why CUDA cannot be used when that is the reason there is no context.
    if (!cudaDriver(err))
      return err ? err->status : NNCC_ERROR_CUDA_UNAVAILABLE;
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_arena_create_cuda: ctx is NULL");
  }
  auto *a = new nncc_arena();
  a->kind = NNCC_DEVICE_CUDA;
  a->ctx = ctx;
  a->capacity = capacity;
  if (capacity) {
    nncc_status s = nncc_cuda_malloc(ctx, capacity, &a->device, err);
    if (!s && (s = cudaZero(ctx, a->device, capacity, err)))
      nncc_cuda_free(ctx, a->device, nullptr);
    if (s) {
      delete a;
      return nncc_error_prefix(err, "arena of %llu bytes: ", (unsigned long long)capacity);
    }
  }
  *out = a;
  return ok(err);
}

void nncc_arena_destroy(nncc_arena *arena) {
  if (!arena)
    return;
  if (arena->kind == NNCC_DEVICE_CPU) {
    if (arena->host)
      munmap(arena->host, arena->hostBytes);
  }
  else if (arena->device)
    nncc_cuda_free(arena->ctx, arena->device, nullptr);
  delete arena;
}

nncc_device_kind nncc_arena_device(const nncc_arena *arena) {
  return arena ? arena->kind : NNCC_DEVICE_CPU;
}

uint64_t nncc_arena_capacity(const nncc_arena *arena) { return arena ? arena->capacity : 0; }

void *nncc_arena_base(const nncc_arena *arena) {
  if (!arena)
    return nullptr;
  return arena->kind == NNCC_DEVICE_CPU ? arena->host
                                        : reinterpret_cast<void *>(arena->device);
}

nncc_status nncc_arena_region(nncc_arena *arena, uint64_t offset, uint64_t size,
                              const char *what, void **out, nncc_error *err) {
  if (!arena || !out)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_arena_region: %s is NULL",
                arena ? "out" : "arena");
  *out = nullptr;
  uint64_t end = offset + size;
  if (end < offset || end > arena->capacity)
    return tooBig(arena, what, offset, size, err);
  if (end > arena->highWater)
    arena->highWater = end;
  *out = static_cast<char *>(nncc_arena_base(arena)) + offset;
  return ok(err);
}

nncc_status nncc_arena_alloc(nncc_arena *arena, uint64_t size, uint64_t alignment,
                             const char *what, uint64_t *out_offset, nncc_error *err) {
  if (!arena || !out_offset)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_arena_alloc: %s is NULL",
                arena ? "out_offset" : "arena");
  if (alignment == 0)
    alignment = NNCC_ARENA_ALIGNMENT;
  if (alignment & (alignment - 1))
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "nncc_arena_alloc(%s): alignment %llu is not a power of two",
                label(what).c_str(), (unsigned long long)alignment);
  uint64_t offset = (arena->bump + alignment - 1) & ~(alignment - 1);
  if (offset < arena->bump)
    return tooBig(arena, what, arena->bump, size, err);
  void *ignored;
  if (nncc_status s = nncc_arena_region(arena, offset, size, what, &ignored, err))
    return s;
  arena->bump = offset + size;
  *out_offset = offset;
  return ok(err);
}

void nncc_arena_reset(nncc_arena *arena) {
  if (arena)
    arena->bump = 0;
}

uint64_t nncc_arena_high_water(const nncc_arena *arena) {
  return arena ? arena->highWater : 0;
}

void nncc_arena_reset_high_water(nncc_arena *arena) {
  if (arena)
    arena->highWater = 0;
}

} // extern "C"
