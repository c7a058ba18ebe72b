//===- ArenaPlanning.cpp - the buffer plan and the arena ------------------===//
//
// The compiler's buffer table (sizes from the dims, live ranges in launch
// indices) placed into one arena by nncc::plan (ArenaPlan.h, the compiler's
// own placement), re-planned when the dims change.
//
//===----------------------------------------------------------------------===//
#include "ModelState.h"
#include "nncc/ModelSupport/ArenaPlan.h"

#include <cinttypes>

using namespace nncc::ms;

namespace nncc {
namespace ms {

nncc_status plan(nncc_model *m, nncc_error *err) {
  const nncc_ms_model_def *def = m->def;
  if (m->planValid && m->planDims == m->dims)
    return NNCC_OK;
  int32_t n = def->num_buffers;
  m->sizes.assign(static_cast<size_t>(n), 0);
  m->offsets.assign(static_cast<size_t>(n), 0);
  std::vector<int32_t> first(static_cast<size_t>(n)), last(static_cast<size_t>(n));
  std::vector<int64_t> shape;
  for (int32_t i = 0; i < n; ++i) {
    const nncc_ms_buffer &b = def->buffers[i];
    first[i] = b.first;
    last[i] = b.last;
    if (b.rank < 0) {
      if (!def->workspace_bytes)
        return nncc_error_set(err, NNCC_ERROR_INTERNAL,
                              "buffer '%s' has a computed size but the model defines "
                              "no workspace_bytes function",
                              b.name);
      m->sizes[i] = def->workspace_bytes(i, m->dims.data());
      continue;
    }
    if (!concreteShape(m->abi, b.dims, b.rank, m->dims, shape) ||
        !byteSize(shape.data(), b.rank, b.elem_size, m->sizes[i]))
      return nncc_error_set(err, NNCC_ERROR_OUT_OF_MEMORY,
                            "buffer '%s': size overflows or depends on an unbound dim",
                            b.name);
  }
  uint64_t total = nncc_ms_plan_offsets(n, m->sizes.data(), first.data(), last.data(),
                                        m->offsets.data());
  if (!m->arena || nncc_arena_capacity(m->arena) < total) {
    if (m->arena)
      nncc_arena_destroy(m->arena);
    m->arena = nullptr;
    nncc_status s = m->target == NNCC_TARGET_CUDA
                        ? nncc_arena_create_cuda(m->cuda, total, &m->arena, err)
                        : nncc_arena_create_cpu(total, &m->arena, err);
    if (s)
      return nncc_error_prefix(err, "allocating the %" PRIu64 "-byte arena: ", total), s;
  }
  // Pointers now; the regions are claimed (high-water mark) by the
  // functions that use them (claimRegions).
  m->bufferPtrs.assign(static_cast<size_t>(n), nullptr);
  char *base = static_cast<char *>(nncc_arena_base(m->arena));
  for (int32_t i = 0; i < n; ++i)
    m->bufferPtrs[i] = base ? base + m->offsets[i] : nullptr;
  m->planDims = m->dims;
  m->planBytes = total;
  m->planValid = true;
  return NNCC_OK;
}

nncc_status claimRegions(nncc_model *m, int32_t lo, int32_t hi, nncc_error *err) {
  const nncc_ms_model_def *def = m->def;
  for (int32_t i = 0; i < def->num_buffers; ++i) {
    const nncc_ms_buffer &b = def->buffers[i];
    if (!nncc::plan::meets(b.first, b.last, lo, hi))
      continue;
    void *at = nullptr;
    if (nncc_status s = nncc_arena_region(m->arena, m->offsets[i], m->sizes[i], b.name, &at, err))
      return s;
  }
  return NNCC_OK;
}

} // namespace ms
} // namespace nncc

uint64_t nncc_ms_plan_offsets(int32_t n, const uint64_t *bytes, const int32_t *first,
                              const int32_t *last, uint64_t *offsets) {
  static_assert(nncc::plan::kAlignment == NNCC_ARENA_ALIGNMENT,
                "the compiler's and the runtime's arena alignment differ");
  return nncc::plan::placeBuffers(n, bytes, first, last, offsets);
}

nncc_status nncc_ms_memory_stats(nncc_model *m, uint64_t *arena_bytes,
                                 uint64_t *peak_bytes, nncc_error *err) {
  if (nncc_status s = checkModel(m, "memory_stats", err))
    return s;
  if (arena_bytes)
    *arena_bytes = m->arena ? nncc_arena_capacity(m->arena) : 0;
  if (peak_bytes)
    *peak_bytes = m->arena ? nncc_arena_high_water(m->arena) : 0;
  nncc_error_clear(err);
  return NNCC_OK;
}

void *nncc_ms_buffer_ptr(nncc_model *m, int32_t i) { return m->bufferPtrs[i]; }
