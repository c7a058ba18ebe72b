//===- ModelSupport.cpp - the model-independent half of generated libraries ===//
//
// Implements nncc_model.h from the tables of an nncc_ms_model_def (see
// ModelSupport.h). No LLVM, no exceptions; every failure is a status with a
// message naming the tensor, nothing aborts or prints.
//
//===----------------------------------------------------------------------===//
#include "nncc/ModelSupport/ModelSupport.h"
#include "nncc/ModelSupport/ArenaPlan.h"
#include "nncc/Kernels/IndexMath.h"
#include "nncc/Kernels/Kernels.h"

#include <algorithm>
#include <tuple>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <unordered_map>
#include <deque>
#include <vector>

using nncc::kernels::merge_reduce_dims;
using nncc::kernels::strided_offsets;

namespace {

/// 64-byte aligned, zero-filled host memory that grows on demand.
struct HostBuffer {
  void *data = nullptr;
  uint64_t capacity = 0;

  ~HostBuffer() { std::free(data); }
  void release() {
    std::free(data);
    data = nullptr;
    capacity = 0;
  }
  bool reserve(uint64_t bytes) {
    if (bytes <= capacity && data)
      return true;
    void *p = nullptr;
    uint64_t rounded = (std::max<uint64_t>(bytes, 1) + 63) / 64 * 64;
    if (posix_memalign(&p, 64, rounded) != 0)
      return false;
    std::memset(p, 0, rounded);
    std::free(data);
    data = p;
    capacity = rounded;
    return true;
  }
};

struct Tensor {
  std::vector<int64_t> shape;
  uint64_t bytes = 0;
  HostBuffer host;
  bool set = false;
  bool dropped = false;    // unset because a newer input changed its dims
  uint64_t generation = 0; // forward count when it was set
  nncc_CUdeviceptr device = 0;
  uint64_t deviceCapacity = 0;
  bool hostStale = false; // CUDA: the device copy is newer (gradients)
  // CUDA bind: `device` is the caller's memory (never freed or resized).
  bool deviceBound = false;
  // Caller-owned memory (bind, CPU target): used instead of `host`.
  void *bound = nullptr;
  std::vector<int64_t> boundShape; // outputs, gradients, cotangents: checked per run

  void *data() const { return bound ? bound : host.data; }
};

} // namespace

struct nncc_model {
  const nncc_ms_model_def *def = nullptr;
  const nncc_model_abi *abi = nullptr;
  nncc_target target = NNCC_TARGET_CPU;

  std::vector<Tensor> inputs, params, outputs;
  std::vector<int64_t> bound;  // current binding (-1: unbound)
  std::vector<int64_t> dims;   // dims of the running/last forward
  uint64_t generation = 0;     // completed forward calls
  bool paramsDirty = true;     // device copy out of date
  bool paramsHostStale = false; // CUDA: a train_step updated the device copy
  bool outputsValid = false;
  // The last forward computed the loss (ABI 9: false when it served without
  // an input only the loss reads; lossMissing names them).
  bool withLoss = true;
  std::string lossMissing;
  std::vector<Tensor> grads;   // "grad.<param>" (training)
  // VJP libraries: the backward's seeds and the gradients of float inputs.
  std::vector<Tensor> cotangents, inputGrads;
  bool trainReady = false;     // residuals of a forward_train in the arena
  bool gradsValid = false;
  // Optimizer state (train_step): moments / momentum buffers per parameter.
  std::vector<HostBuffer> optM, optV;
  std::vector<Tensor> cudaOptM, cudaOptV; // the same, on the device (CUDA)
  // bf16 on CUDA: fp32 master copies of the parameters, which the update
  // changes (the bf16 parameters are their rounding); stale after the host
  // wrote the parameters, when the next update sets them from the device copy.
  std::vector<Tensor> cudaOptW;
  bool masterStale = true;
  int64_t optStep = 0;
  // Frozen parameters (set_frozen, ABI 10): num_params flags and their count.
  std::vector<int32_t> frozen;
  int32_t numFrozen = 0;
  int32_t stateOptimizer = -1; // nncc_optimizer_kind of the state held (-1: none)
  nncc_train_stats stats{};
  // Gradient accumulation (ABI 8): the running mean of the micro-batches'
  // gradients since the last step, per parameter (CUDA: in the arithmetic
  // type, fp32 for bf16).
  std::vector<HostBuffer> accMean;
  std::vector<Tensor> cudaAccMean;
  int32_t accCount = 0;     // micro-batches folded in
  double accWeight = 0.0;   // their total weight
  // Random streams (ABI 9: sample offset; docs/training.md, "Random
  // streams"): the run seed mixed into every op's key, and the batch row of
  // the current inputs' first sample (advanced by accumulate_gradients,
  // reset by each optimizer step).
  uint64_t rngSeed = 0;
  int64_t sampleOffset = 0;

  // Plan for planDims.
  std::vector<int64_t> planDims;
  std::vector<uint64_t> offsets, sizes;
  std::vector<void *> bufferPtrs;
  uint64_t planBytes = 0;
  bool planValid = false;
  nncc_arena *arena = nullptr;

  nncc_cuda_context *cuda = nullptr;
  nncc_stream *stream = nullptr;     // where the model's work runs: one of
  nncc_stream *ownStream = nullptr;  //   the context's own stream, or
  nncc_stream *callerStream = nullptr; // the caller's (set_cuda_stream)
  void *cudaState = nullptr;
};

namespace {

/// n f32 values stored as `dtype` (F64: widened exactly; BF16: rounded to
/// nearest even, the kernels' rounding; F32: copied).
void storeFromF32(nncc_dtype dtype, const float *src, uint64_t n, void *dst) {
  switch (dtype) {
  case NNCC_DTYPE_F64:
    for (uint64_t k = 0; k < n; ++k)
      static_cast<double *>(dst)[k] = src[k];
    return;
  case NNCC_DTYPE_BF16:
    for (uint64_t k = 0; k < n; ++k)
      static_cast<uint16_t *>(dst)[k] = nncc_f32_to_bf16(src[k]);
    return;
  default:
    std::memcpy(dst, src, n * sizeof(float));
    return;
  }
}

/// err may be null; internally we always want a place for the message.
struct ErrorSlot {
  nncc_error local;
  nncc_error *e;
  explicit ErrorSlot(nncc_error *err) : e(err ? err : &local) {}
};

std::string shapeString(const int64_t *shape, int64_t rank) {
  std::string s = "[";
  for (int64_t i = 0; i < rank; ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

/// A caller's shape of `rank` dims when `expected` are due: at most
/// `expected` dims are read (the caller's array may hold no more than the
/// tensor does when `rank` is wrong), the rest is counted.
std::string callerShape(const int64_t *shape, int32_t rank, int32_t expected) {
  int32_t shown = std::min(rank, std::max(expected, 0));
  if (shown > 0 && !shape)
    return "[?]";
  std::string s = shapeString(shape, shown);
  if (rank > shown)
    s.insert(s.size() - 1, std::string(shown ? ", " : "") + "... (" + std::to_string(rank) +
                               " dims)");
  return s;
}

/// A name or path from the caller or a file, quoted for a message
/// (nncc_quote: control characters and invalid UTF-8 escaped, long ones cut).
std::string q(const char *text) {
  if (!text)
    return "(null)";
  size_t len = std::strlen(text);
  std::string out(nncc_quote(text, len, nullptr, 0), '\0');
  nncc_quote(text, len, &out[0], out.size() + 1);
  return out;
}
std::string q(const std::string &text) {
  std::string out(nncc_quote(text.data(), text.size(), nullptr, 0), '\0');
  nncc_quote(text.data(), text.size(), &out[0], out.size() + 1);
  return out;
}

std::string dimsString(const nncc_model_abi *abi, const nncc_tensor_info &t) {
  std::string s = "[";
  for (int32_t i = 0; i < t.rank; ++i) {
    if (i)
      s += ", ";
    int64_t d = t.dims[i];
    if (d >= 0)
      s += std::to_string(d);
    else if (-d - 1 < abi->num_dims)
      s += abi->dim_names[-d - 1];
    else
      s += "?";
  }
  return s + "]";
}

std::string nameList(const nncc_tensor_info *infos, int32_t n) {
  std::string s;
  for (int32_t i = 0; i < n; ++i) {
    if (i)
      s += ", ";
    s += "'";
    s += infos[i].name;
    s += "'";
  }
  return n ? s : std::string("(none)");
}

int32_t findByName(const nncc_tensor_info *infos, int32_t n, const char *name) {
  for (int32_t i = 0; i < n; ++i)
    if (std::strcmp(infos[i].name, name) == 0)
      return i;
  return -1;
}

/// prod(shape) * elemSize, or false on overflow.
bool byteSize(const int64_t *shape, int64_t rank, uint64_t elemSize, uint64_t &out) {
  uint64_t n = elemSize;
  for (int64_t i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      return false;
    uint64_t d = static_cast<uint64_t>(shape[i]);
    if (d != 0 && n > UINT64_MAX / d)
      return false;
    n *= d;
  }
  out = n;
  return true;
}

/// The concrete shape of a table entry under `dims`; false if a dim is
/// unbound or not representable.
bool concreteShape(const nncc_model_abi *abi, const int64_t *dimsEnc, int32_t rank,
                   const std::vector<int64_t> &dims, std::vector<int64_t> &out) {
  out.resize(static_cast<size_t>(rank));
  for (int32_t i = 0; i < rank; ++i) {
    int64_t d = dimsEnc[i];
    if (d >= 0) {
      out[i] = d;
      continue;
    }
    int64_t sym = -d - 1;
    if (sym >= abi->num_dims || dims[sym] < 0)
      return false;
    out[i] = dims[sym];
  }
  return true;
}

nncc_status checkModel(nncc_model *model, const char *what, nncc_error *err) {
  if (!model)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "%s: model is NULL", what);
  return NNCC_OK;
}

//===----------------------------------------------------------------------===//
// CUDA helpers (device memory through libnncc_runtime's dlopen'ed driver)
//===----------------------------------------------------------------------===//

nncc_status ensureDevice(nncc_model *m, Tensor &t, uint64_t bytes, const char *what,
                         nncc_error *err) {
  if (t.deviceBound || (t.device && t.deviceCapacity >= bytes))
    return NNCC_OK;
  if (t.device) {
    nncc_cuda_free(m->cuda, t.device, nullptr);
    t.device = 0;
    t.deviceCapacity = 0;
  }
  uint64_t cap = std::max<uint64_t>(bytes, 256);
  if (nncc_status s = nncc_cuda_malloc(m->cuda, cap, &t.device, err))
    return nncc_error_prefix(err, "allocating device memory for '%s': ", what), s;
  t.deviceCapacity = cap;
  return NNCC_OK;
}

/// CUDA bind: `data` (a device pointer, or NULL to unbind) becomes the
/// tensor's device copy in place of the context's own.
void bindDevice(nncc_model *m, Tensor &t, void *data) {
  if (t.device && !t.deviceBound)
    nncc_cuda_free(m->cuda, t.device, nullptr);
  t.bound = nullptr;
  t.device = reinterpret_cast<nncc_CUdeviceptr>(data);
  t.deviceCapacity = 0;
  t.deviceBound = data != nullptr;
  t.hostStale = false;
}

/// CUDA: copies the parameters back to the host after train_step updated
/// them on the device (before anything reads or partly rewrites them there).
nncc_status syncParamsToHost(nncc_model *m, nncc_error *err) {
  if (m->target != NNCC_TARGET_CUDA)
    return NNCC_OK;
  for (int32_t i = 0; i < m->abi->num_params; ++i) {
    Tensor &p = m->params[i];
    // Bound parameters are the caller's to change at any time: always read.
    if (!m->paramsHostStale && !p.deviceBound)
      continue;
    if (nncc_status s = nncc_cuda_memcpy_dtoh(m->cuda, p.data(), p.device, p.bytes, nullptr, err))
      return nncc_error_prefix(err, "copying parameter '%s' to the host: ",
                               m->abi->params[i].name),
             s;
  }
  m->paramsHostStale = false;
  return NNCC_OK;
}

/// CUDA: parameters bound to the caller's device memory receive the values
/// load_weights / init_weights just wrote to their host staging copy.
nncc_status pushBoundParams(nncc_model *m, nncc_error *err) {
  if (m->target != NNCC_TARGET_CUDA)
    return NNCC_OK;
  for (int32_t i = 0; i < m->abi->num_params; ++i) {
    Tensor &p = m->params[i];
    if (p.deviceBound) {
      if (nncc_status s = nncc_cuda_memcpy_htod(m->cuda, p.device, p.data(), p.bytes, nullptr,
                                                err))
        return nncc_error_prefix(err, "parameter '%s': ", m->abi->params[i].name), s;
      m->masterStale = true;
    }
  }
  return NNCC_OK;
}

/// CUDA: the host copy of a device result (a gradient), when it is stale.
nncc_status syncToHost(nncc_model *m, Tensor &t, const char *name, nncc_error *err) {
  if (!t.hostStale || t.deviceBound)
    return NNCC_OK;
  if (nncc_status s = nncc_cuda_memcpy_dtoh(m->cuda, t.data(), t.device, t.bytes, nullptr, err))
    return nncc_error_prefix(err, "copying '%s' to the host: ", name), s;
  t.hostStale = false;
  return NNCC_OK;
}

/// CUDA, before a launch sequence: the parameters (when the host copy
/// changed) and the inputs to the device, room for the outputs.
nncc_status prepareDevice(nncc_model *m, nncc_error *e) {
  const nncc_model_abi *abi = m->abi;
  if (m->paramsDirty) {
    for (int32_t i = 0; i < abi->num_params; ++i)
      if (!m->params[i].deviceBound)
        if (nncc_status s = nncc_cuda_memcpy_htod(m->cuda, m->params[i].device,
                                                  m->params[i].data(), m->params[i].bytes,
                                                  m->stream, e))
          return s;
    m->paramsDirty = false;
    m->masterStale = true;
  }
  for (int32_t i = 0; i < abi->num_inputs; ++i) {
    Tensor &t = m->inputs[i];
    if (t.deviceBound || !t.set) // unset: an input only the loss reads (ABI 9)
      continue;
    if (nncc_status s = ensureDevice(m, t, t.bytes, abi->inputs[i].name, e))
      return s;
    if (nncc_status s = nncc_cuda_memcpy_htod(m->cuda, t.device, t.data(), t.bytes, m->stream, e))
      return s;
  }
  for (int32_t i = 0; i < abi->num_outputs; ++i)
    if (nncc_status s = ensureDevice(m, m->outputs[i], m->outputs[i].bytes,
                                     abi->outputs[i].name, e))
      return s;
  return NNCC_OK;
}

/// CUDA: device memory for the tensors of a table (gradients, cotangents),
/// and with `upload` their host values copied there.
nncc_status deviceTensors(nncc_model *m, std::vector<Tensor> &ts, const nncc_tensor_info *infos,
                          bool upload, nncc_error *e) {
  for (size_t i = 0; i < ts.size(); ++i) {
    Tensor &t = ts[i];
    if (t.deviceBound)
      continue;
    if (nncc_status s = ensureDevice(m, t, t.bytes, infos[i].name, e))
      return s;
    t.hostStale = false;
    if (upload && t.bytes)
      if (nncc_status s = nncc_cuda_memcpy_htod(m->cuda, t.device, t.data(), t.bytes,
                                                m->stream, e))
        return s;
  }
  return NNCC_OK;
}

/// CUDA, after a launch sequence: waits for it, then copies the outputs to
/// the host.
nncc_status finishDevice(nncc_model *m, nncc_error *e) {
  if (nncc_status s = nncc_stream_synchronize(m->stream, e))
    return s;
  for (int32_t i = 0; i < m->abi->num_outputs; ++i)
    if (m->outputs[i].deviceBound) {
      // the caller's device memory holds it
    } else if (nncc_status s = nncc_cuda_memcpy_dtoh(m->cuda, m->outputs[i].data(),
                                              m->outputs[i].device, m->outputs[i].bytes,
                                              nullptr, e))
      return s;
  return NNCC_OK;
}

void releaseCuda(nncc_model *m) {
  if (m->cudaState && m->def->cuda_teardown)
    m->def->cuda_teardown(m->cudaState);
  m->cudaState = nullptr;
  for (auto *group : {&m->inputs, &m->params, &m->outputs, &m->grads, &m->cotangents,
                      &m->inputGrads, &m->cudaOptM, &m->cudaOptV, &m->cudaOptW,
                      &m->cudaAccMean})
    for (Tensor &t : *group) {
      if (t.device && !t.deviceBound)
        nncc_cuda_free(m->cuda, t.device, nullptr);
      t.device = 0;
      t.deviceBound = false;
    }
  if (m->arena) {
    nncc_arena_destroy(m->arena);
    m->arena = nullptr;
  }
  nncc_stream_destroy(m->callerStream);
  nncc_stream_destroy(m->ownStream);
  m->stream = m->ownStream = m->callerStream = nullptr;
  if (m->cuda)
    nncc_cuda_context_destroy(m->cuda);
  m->cuda = nullptr;
}

nncc_status setupCuda(nncc_model *m, nncc_error *err) {
  const char *model = m->abi->model_name;
  if (!m->def->forward_cuda)
    return nncc_error_set(err, NNCC_ERROR_UNSUPPORTED,
                          "model '%s' was compiled without the CUDA target; "
                          "recompile with 'nncc compile --target cuda' (or all), "
                          "or create it with NNCC_TARGET_CPU",
                          model);
  int count = 0;
  if (nncc_status s = nncc_cuda_device_count(&count, err)) {
    nncc_error_prefix(err, "cannot run model '%s' on CUDA: ", model);
    return s == NNCC_ERROR_CUDA_UNAVAILABLE ? s : err->status;
  }
  if (count <= 0)
    return nncc_error_set(err, NNCC_ERROR_CUDA_UNAVAILABLE,
                          "cannot run model '%s' on CUDA: the CUDA driver reports no "
                          "device; run with --target cpu",
                          model);
  if (nncc_status s = nncc_cuda_context_create(0, &m->cuda, err))
    return nncc_error_prefix(err, "creating the CUDA context: "), s;
  if (nncc_status s = nncc_stream_create_cuda(m->cuda, &m->ownStream, err))
    return nncc_error_prefix(err, "creating the CUDA stream: "), s;
  m->stream = m->ownStream;
  for (int32_t i = 0; i < m->abi->num_params; ++i)
    if (nncc_status s = ensureDevice(m, m->params[i], m->params[i].bytes,
                                     m->abi->params[i].name, err))
      return s;
  if (m->def->cuda_setup)
    if (nncc_status s = m->def->cuda_setup(m, &m->cudaState, err))
      return nncc_error_prefix(err, "setting up CUDA libraries: "), s;
  return NNCC_OK;
}

//===----------------------------------------------------------------------===//
// Planning
//===----------------------------------------------------------------------===//

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

/// Claims the arena regions of the buffers whose live range meets launches
/// [lo, hi) (checked against the capacity; raises the high-water mark).
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

template <typename T>
void reduceImpl(int32_t rank, const int64_t *shape, uint32_t mask, int mean,
                       const T *x, T *y) {
  // Merge adjacent dims of the same kind (size-1 dims vanish), then walk
  // the outer dims with an odometer and the innermost one contiguously.
  // Every output element sums its inputs in row-major order.
  int64_t total = 1, kept = 1;
  for (int32_t d = 0; d < rank; ++d) {
    total *= shape[d];
    if (!(mask >> d & 1))
      kept *= shape[d];
  }
  std::vector<int64_t> size(rank > 0 ? rank : 1);
  uint32_t merged = 0;
  size_t n = static_cast<size_t>(merge_reduce_dims(rank, shape, mask, size.data(), &merged));
  auto reduced = [&](int64_t d) { return (merged >> d & 1u) != 0; };
  std::vector<double> acc(static_cast<size_t>(kept), 0.0);
  if (total > 0) {
    if (n == 0)
      size[0] = 1, merged = 0, n = 1;
    std::vector<int64_t> keptStride(n, 0);
    for (int64_t d = (int64_t)n - 1, st = 1; d >= 0; --d)
      if (!reduced(d)) {
        keptStride[d] = st;
        st *= size[d];
      }
    std::vector<int64_t> idx(n, 0);
    const int64_t inner = size[n - 1];
    const bool innerReduced = reduced((int64_t)n - 1);
    int64_t o = 0;
    for (int64_t i = 0; i < total; i += inner) {
      const T *xi = x + i;
      if (innerReduced) {
        double s = acc[o];
        for (int64_t c = 0; c < inner; ++c)
          s += static_cast<double>(xi[c]);
        acc[o] = s;
      } else {
        double *ao = acc.data() + o;
        for (int64_t c = 0; c < inner; ++c)
          ao[c] += static_cast<double>(xi[c]);
      }
      for (int64_t d = (int64_t)n - 2; d >= 0; --d) { // odometer step
        o += keptStride[d];
        if (++idx[d] < size[d])
          break;
        o -= keptStride[d] * size[d];
        idx[d] = 0;
      }
    }
  }
  double cnt = kept ? static_cast<double>(total) / static_cast<double>(kept) : 1.0;
  for (int64_t o = 0; o < kept; ++o)
    y[o] = static_cast<T>(mean ? acc[o] / cnt : acc[o]);
}

/// fill(dst + at, count, at) over [0, n) in chunks, on all threads. The
/// runtime's fills are pure functions of the element index, so the values
/// do not depend on the split (or on OpenMP being there at all).
template <typename T, typename Fill>
void fillInChunks(T *dst, uint64_t n, Fill fill) {
  constexpr uint64_t kChunk = uint64_t(1) << 16;
  int64_t chunks = static_cast<int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    uint64_t at = static_cast<uint64_t>(c) * kChunk;
    fill(dst + at, std::min(kChunk, n - at), at);
  }
}

} // namespace

extern "C" {

uint64_t nncc_ms_plan_offsets(int32_t n, const uint64_t *bytes, const int32_t *first,
                              const int32_t *last, uint64_t *offsets) {
  static_assert(nncc::plan::kAlignment == NNCC_ARENA_ALIGNMENT,
                "the compiler's and the runtime's arena alignment differ");
  return nncc::plan::placeBuffers(n, bytes, first, last, offsets);
}

nncc_status nncc_ms_create(const nncc_ms_model_def *def, nncc_target target,
                           nncc_model **out, nncc_error *err) {
  ErrorSlot slot(err);
  nncc_error *e = slot.e;
  if (!out)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "create: out is NULL");
  *out = nullptr;
  if (!def || !def->abi)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "create: no model definition");
  if (target != NNCC_TARGET_CPU && target != NNCC_TARGET_CUDA)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "create: unknown target %d (NNCC_TARGET_CPU = 0, "
                          "NNCC_TARGET_CUDA = 1)",
                          static_cast<int>(target));
  const nncc_model_abi *abi = def->abi;
  nncc_model *m = new (std::nothrow) nncc_model;
  if (!m)
    return nncc_error_set(err, NNCC_ERROR_OUT_OF_MEMORY, "create: out of host memory");
  m->def = def;
  m->abi = abi;
  m->target = target;
  m->inputs.resize(static_cast<size_t>(abi->num_inputs));
  m->outputs.resize(static_cast<size_t>(abi->num_outputs));
  m->params.resize(static_cast<size_t>(abi->num_params));
  m->bound.assign(static_cast<size_t>(abi->num_dims), -1);
  m->dims.assign(static_cast<size_t>(abi->num_dims), -1);
  m->frozen.assign(static_cast<size_t>(abi->num_params), 0);
  for (int32_t i = 0; i < abi->num_params; ++i) {
    const nncc_tensor_info &info = abi->params[i];
    Tensor &t = m->params[i];
    t.shape.assign(info.dims, info.dims + info.rank);
    if (!byteSize(info.dims, info.rank, nncc_dtype_size(info.dtype), t.bytes)) {
      nncc_ms_destroy(m);
      return nncc_error_set(err, NNCC_ERROR_INTERNAL,
                            "parameter '%s' has a symbolic or invalid shape %s",
                            info.name, dimsString(abi, info).c_str());
    }
    if (!t.host.reserve(t.bytes)) {
      nncc_ms_destroy(m);
      return nncc_error_set(err, NNCC_ERROR_OUT_OF_MEMORY,
                            "parameter '%s': cannot allocate %" PRIu64 " bytes",
                            info.name, t.bytes);
    }
  }
  if (target == NNCC_TARGET_CUDA) {
    if (nncc_status s = setupCuda(m, e)) {
      nncc_ms_destroy(m);
      return s;
    }
  }
  *out = m;
  nncc_error_clear(err);
  return NNCC_OK;
}

void nncc_ms_destroy(nncc_model *m) {
  if (!m)
    return;
  if (m->target == NNCC_TARGET_CUDA)
    releaseCuda(m);
  if (m->arena)
    nncc_arena_destroy(m->arena);
  delete m;
}

nncc_status nncc_ms_load_weights(nncc_model *m, const char *path, nncc_error *err) {
  if (nncc_status s = checkModel(m, "load_weights", err))
    return s;
  if (!path)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "load_weights: path is NULL");
  ErrorSlot slot(err);
  nncc_error *e = slot.e;
  // A failed load keeps the current values, which may live on the device.
  if (nncc_status s = syncParamsToHost(m, e))
    return nncc_error_prefix(e, "load_weights: "), s;
  nncc_safetensors *file = nullptr;
  if (nncc_status s = nncc_safetensors_open(path, &file, e)) {
    nncc_error_prefix(e, "loading weights from %s: ", q(path).c_str());
    return s;
  }
  const nncc_model_abi *abi = m->abi;
  // Check every parameter before changing any: a failed load leaves the
  // model as it was.
  std::vector<nncc_tensor_view> views(static_cast<size_t>(abi->num_params));
  std::vector<char> fromF32(static_cast<size_t>(abi->num_params), 0);
  for (int32_t i = 0; i < abi->num_params; ++i) {
    const nncc_tensor_info &info = abi->params[i];
    // f64 and bf16 builds also load f32 files (widened exactly, or rounded
    // to the nearest bf16).
    if ((info.dtype == NNCC_DTYPE_F64 || info.dtype == NNCC_DTYPE_BF16) &&
        nncc_safetensors_get(file, info.name, NNCC_DTYPE_F32, info.rank, info.dims,
                             &views[i], nullptr) == NNCC_OK) {
      fromF32[i] = 1;
      continue;
    }
    if (nncc_status s = nncc_safetensors_get(file, info.name, info.dtype, info.rank,
                                             info.dims, &views[i], e)) {
      nncc_error_prefix(e, "loading weights from %s: parameter '%s': ", q(path).c_str(),
                        info.name);
      nncc_safetensors_close(file);
      return s;
    }
  }
  for (int32_t i = 0; i < abi->num_params; ++i) {
    if (fromF32[i]) {
      storeFromF32(abi->params[i].dtype, static_cast<const float *>(views[i].data),
                   views[i].numel, m->params[i].data());
      continue;
    }
    std::memcpy(m->params[i].data(), views[i].data, m->params[i].bytes);
  }
  nncc_safetensors_close(file);
  for (Tensor &p : m->params)
    p.set = true;
  m->trainReady = m->gradsValid = false;
  m->paramsDirty = true;
  m->accCount = 0; // gradients of other weights
  if (nncc_status s = pushBoundParams(m, e))
    return nncc_error_prefix(e, "loading weights from %s: ", q(path).c_str()), s;
  nncc_error_clear(err);
  return NNCC_OK;
}

nncc_status nncc_ms_init_weights(nncc_model *m, uint64_t seed, nncc_error *err) {
  if (nncc_status s = checkModel(m, "init_weights", err))
    return s;
  // Parameters without an initialiser keep their values.
  if (nncc_status s = syncParamsToHost(m, err))
    return nncc_error_prefix(err, "init_weights: "), s;
  const nncc_model_abi *abi = m->abi;
  for (int32_t i = 0; i < abi->num_params; ++i) {
    const nncc_tensor_info &info = abi->params[i];
    nncc_ms_init init = m->def->param_inits ? m->def->param_inits[i]
                                            : nncc_ms_init{NNCC_MS_INIT_NONE, 0, 0};
    if (init.kind == NNCC_MS_INIT_NONE)
      continue;
    if (info.dtype != NNCC_DTYPE_F32 && info.dtype != NNCC_DTYPE_F64 &&
        info.dtype != NNCC_DTYPE_BF16)
      return nncc_error_set(err, NNCC_ERROR_UNSUPPORTED,
                            "init_weights: parameter '%s' has element type %s; only "
                            "F32, F64 and BF16 parameters are initialised",
                            info.name, nncc_dtype_name(info.dtype));
    if (init.kind < NNCC_MS_INIT_ZEROS || init.kind > NNCC_MS_INIT_NORMAL)
      return nncc_error_set(err, NNCC_ERROR_INTERNAL,
                            "init_weights: parameter '%s' has unknown init kind %d",
                            info.name, static_cast<int>(init.kind));
  }
  for (int32_t i = 0; i < abi->num_params; ++i) {
    const nncc_tensor_info &info = abi->params[i];
    nncc_ms_init init = m->def->param_inits ? m->def->param_inits[i]
                                            : nncc_ms_init{NNCC_MS_INIT_NONE, 0, 0};
    Tensor &t = m->params[i];
    uint64_t n = t.bytes / std::max<size_t>(nncc_dtype_size(info.dtype), 1);
    bool f64 = info.dtype == NNCC_DTYPE_F64;
    // bf16 parameters: the f32 draw (the f32 build's values), rounded.
    std::vector<float> f32Values(info.dtype == NNCC_DTYPE_BF16 ? n : 0);
    float *f32 = info.dtype == NNCC_DTYPE_BF16 ? f32Values.data()
                                                : static_cast<float *>(t.data());
    // One Philox stream per parameter: a parameter's values depend only on
    // the seed and its index, not on the other parameters' sizes.
    uint64_t stream = static_cast<uint64_t>(i);
    double fill = 0;
    switch (init.kind) {
    case NNCC_MS_INIT_NONE:
      continue;
    case NNCC_MS_INIT_UNIFORM:
      if (f64)
        fillInChunks(static_cast<double *>(t.data()), n, [&](double *d, uint64_t k, uint64_t at) {
          nncc_rng_fill_uniform_f64(d, k, seed, stream, at, init.a, init.b);
        });
      else
        fillInChunks(f32, n, [&](float *d, uint64_t k, uint64_t at) {
          nncc_rng_fill_uniform_f32(d, k, seed, stream, at, static_cast<float>(init.a),
                                    static_cast<float>(init.b));
        });
      break;
    case NNCC_MS_INIT_NORMAL:
      if (f64)
        fillInChunks(static_cast<double *>(t.data()), n, [&](double *d, uint64_t k, uint64_t at) {
          nncc_rng_fill_normal_f64(d, k, seed, stream, at, init.a, init.b);
        });
      else
        fillInChunks(f32, n, [&](float *d, uint64_t k, uint64_t at) {
          nncc_rng_fill_normal_f32(d, k, seed, stream, at, static_cast<float>(init.a),
                                   static_cast<float>(init.b));
        });
      break;
    case NNCC_MS_INIT_ZEROS:
      fill = 0;
      break;
    case NNCC_MS_INIT_ONES:
      fill = 1;
      break;
    default:
      fill = init.a;
      break;
    }
    if (init.kind != NNCC_MS_INIT_UNIFORM && init.kind != NNCC_MS_INIT_NORMAL)
      for (uint64_t k = 0; k < n; ++k) {
        if (f64)
          static_cast<double *>(t.data())[k] = fill;
        else
          f32[k] = static_cast<float>(fill);
      }
    if (info.dtype == NNCC_DTYPE_BF16)
      storeFromF32(NNCC_DTYPE_BF16, f32, n, t.data());
  }
  for (Tensor &p : m->params)
    p.set = true;
  m->trainReady = m->gradsValid = false;
  m->paramsDirty = true;
  m->accCount = 0; // gradients of other weights
  if (nncc_status s = pushBoundParams(m, err))
    return nncc_error_prefix(err, "init_weights: "), s;
  nncc_error_clear(err);
  return NNCC_OK;
}

nncc_status nncc_ms_save_weights(nncc_model *m, const char *path, nncc_error *err) {
  if (nncc_status s = checkModel(m, "save_weights", err))
    return s;
  if (!path)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "save_weights: path is NULL");
  ErrorSlot slot(err);
  nncc_error *e = slot.e;
  if (nncc_status s = syncParamsToHost(m, e))
    return nncc_error_prefix(e, "save_weights: "), s;
  nncc_safetensors_writer *w = nullptr;
  if (nncc_status s = nncc_safetensors_writer_create(&w, e))
    return s;
  nncc_status s = NNCC_OK;
  for (int32_t i = 0; i < m->abi->num_params && !s; ++i) {
    const nncc_tensor_info &info = m->abi->params[i];
    s = nncc_safetensors_writer_add(w, info.name, info.dtype, info.rank, info.dims,
                                    m->params[i].data(), m->params[i].bytes, e);
  }
  if (!s)
    s = nncc_safetensors_writer_set_metadata(w, "nncc_model", m->abi->model_name, e);
  if (!s)
    s = nncc_safetensors_writer_write(w, path, e);
  nncc_safetensors_writer_destroy(w);
  if (s)
    nncc_error_prefix(e, "saving weights to %s: ", q(path).c_str());
  else
    nncc_error_clear(err);
  return s;
}

namespace {
/// set_input (`borrow` false: copies `data`) and bind of an input (`borrow`:
/// the input reads the caller's memory from now on).
nncc_status acceptInput(nncc_model *m, const char *what, const char *name, nncc_dtype dtype,
                        int32_t rank, const int64_t *shape, const void *data, bool borrow,
                        nncc_error *err) {
  const nncc_model_abi *abi = m->abi;
  if (!name)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "%s: name is NULL", what);
  const std::string qs = q(name);
  const char *qn = qs.c_str();
  int32_t idx = findByName(abi->inputs, abi->num_inputs, name);
  if (idx < 0)
    return nncc_error_set(err, NNCC_ERROR_NOT_FOUND,
                          "%s: model '%s' has no input %s (inputs: %s)", what,
                          abi->model_name, qn,
                          nameList(abi->inputs, abi->num_inputs).c_str());
  const nncc_tensor_info &info = abi->inputs[idx];
  if (dtype != info.dtype)
    return nncc_error_set(err, NNCC_ERROR_DTYPE_MISMATCH,
                          "input %s: expected element type %s, got %s", qn,
                          nncc_dtype_name(info.dtype), nncc_dtype_name(dtype));
  if (rank < 0 || (rank > 0 && !shape))
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "input %s: invalid rank %d or NULL shape", qn, rank);
  std::string expected = dimsString(abi, info);
  if (rank != info.rank)
    return nncc_error_set(err, NNCC_ERROR_SHAPE_MISMATCH,
                          "input %s: expected rank %d %s, got rank %d %s", qn,
                          info.rank, expected.c_str(), rank,
                          callerShape(shape, rank, info.rank).c_str());
  std::string got = shapeString(shape, rank);
  for (int32_t i = 0; i < rank; ++i)
    if (shape[i] < 0)
      return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                            "input %s: negative size %" PRId64 " in dim %d of %s", qn,
                            shape[i], i, got.c_str());
  // Static dims must match; symbolic dims must agree within this input and
  // with every input set since the last forward (inputs set before it that
  // disagree are dropped: they belong to the previous batch).
  std::vector<int64_t> mine(static_cast<size_t>(abi->num_dims), -1);
  for (int32_t i = 0; i < rank; ++i) {
    int64_t d = info.dims[i];
    if (d >= 0) {
      if (shape[i] != d)
        return nncc_error_set(err, NNCC_ERROR_SHAPE_MISMATCH,
                              "input %s: dim %d must be %" PRId64 ", got %" PRId64
                              " (expected %s, got %s)",
                              qn, i, d, shape[i], expected.c_str(), got.c_str());
      continue;
    }
    int64_t sym = -d - 1;
    if (sym >= abi->num_dims)
      return nncc_error_set(err, NNCC_ERROR_INTERNAL,
                            "input %s: dim %d refers to unknown symbol %" PRId64, qn,
                            i, sym);
    if (mine[sym] >= 0 && mine[sym] != shape[i])
      return nncc_error_set(err, NNCC_ERROR_SHAPE_MISMATCH,
                            "input %s: dims of %s must agree (%s), got %s", qn,
                            abi->dim_names[sym], expected.c_str(), got.c_str());
    mine[sym] = shape[i];
  }
  for (int32_t sym = 0; m->def->dim_ranges && sym < abi->num_dims; ++sym) {
    const nncc_ms_dim_range &r = m->def->dim_ranges[sym];
    const char *dim = abi->dim_names[sym];
    if (mine[sym] >= 0 && mine[sym] < r.min)
      return nncc_error_set(err, NNCC_ERROR_SHAPE_MISMATCH,
                            "input %s: %s = %" PRId64 " is below %" PRId64
                            ", the smallest the model serves (%s)",
                            qn, dim, mine[sym], r.min, r.min_why);
    if (mine[sym] >= 0 && r.max >= 0 && mine[sym] > r.max)
      return nncc_error_set(err, NNCC_ERROR_SHAPE_MISMATCH,
                            "input %s: %s = %" PRId64 " is above %" PRId64
                            ", the largest the model serves (%s)",
                            qn, dim, mine[sym], r.max, r.max_why);
  }
  for (int32_t j = 0; j < abi->num_inputs; ++j) {
    const Tensor &o = m->inputs[j];
    if (j == idx || !o.set || o.generation != m->generation)
      continue;
    const nncc_tensor_info &oi = abi->inputs[j];
    for (int32_t k = 0; k < oi.rank; ++k) {
      int64_t d = oi.dims[k];
      if (d >= 0)
        continue;
      int64_t sym = -d - 1;
      if (mine[sym] >= 0 && mine[sym] != o.shape[k])
        return nncc_error_set(err, NNCC_ERROR_SHAPE_MISMATCH,
                              "input %s: %s = %" PRId64 " (shape %s) but input '%s' "
                              "set %s = %" PRId64 " (shape %s)",
                              qn, abi->dim_names[sym], mine[sym], got.c_str(), oi.name,
                              abi->dim_names[sym], o.shape[k],
                              shapeString(o.shape.data(), oi.rank).c_str());
    }
  }
  uint64_t bytes = 0;
  if (!byteSize(shape, rank, nncc_dtype_size(dtype), bytes))
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "input %s: size of %s overflows", qn, got.c_str());
  if (bytes && !data)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "input %s: data is NULL",
                          qn);
  Tensor &t = m->inputs[idx];
  if (borrow) {
    t.bound = const_cast<void *>(data);
  } else {
    if (t.deviceBound) // a copy replaces a CUDA binding
      bindDevice(m, t, nullptr);
    t.bound = nullptr;
    if (!t.host.reserve(bytes))
      return nncc_error_set(err, NNCC_ERROR_OUT_OF_MEMORY,
                            "input %s: cannot allocate %" PRIu64 " bytes", qn, bytes);
    if (bytes)
      std::memcpy(t.data(), data, bytes);
  }
  t.shape.assign(shape, shape + rank);
  t.bytes = bytes;
  t.set = true;
  t.dropped = false;
  t.generation = m->generation;
  // Rebind: this input's symbols win; stale inputs that disagree are dropped.
  for (int32_t j = 0; j < abi->num_inputs; ++j) {
    Tensor &o = m->inputs[j];
    if (j == idx || !o.set)
      continue;
    const nncc_tensor_info &oi = abi->inputs[j];
    for (int32_t k = 0; k < oi.rank; ++k) {
      int64_t d = oi.dims[k];
      if (d < 0 && mine[-d - 1] >= 0 && mine[-d - 1] != o.shape[k]) {
        o.set = false;
        o.dropped = true;
      }
    }
  }
  for (int32_t s = 0; s < abi->num_dims; ++s)
    if (mine[s] >= 0)
      m->bound[s] = mine[s];
  m->trainReady = false;
  nncc_error_clear(err);
  return NNCC_OK;
}
} // namespace

nncc_status nncc_ms_set_input(nncc_model *m, const char *name, nncc_dtype dtype,
                              int32_t rank, const int64_t *shape, const void *data,
                              nncc_error *err) {
  if (nncc_status s = checkModel(m, "set_input", err))
    return s;
  return acceptInput(m, "set_input", name, dtype, rank, shape, data, /*borrow=*/false, err);
}

namespace {
enum class RunKind { Forward, Train };
nncc_status runModel(nncc_model *m, RunKind kind, nncc_error *err);
} // namespace

nncc_status nncc_ms_forward(nncc_model *m, nncc_error *err) {
  if (nncc_status s = checkModel(m, "forward", err))
    return s;
  return runModel(m, RunKind::Forward, err);
}

nncc_status nncc_ms_forward_train(nncc_model *m, nncc_error *err) {
  if (nncc_status s = checkModel(m, "forward_train", err))
    return s;
  if (!m->def->forward_train_cpu)
    return nncc_error_set(err, NNCC_ERROR_UNSUPPORTED,
                          "forward_train: '%s' was compiled without gradients (nncc "
                          "compile --grad)", m->abi->model_name);
  if (m->target == NNCC_TARGET_CUDA) {
    const char *why = !m->def->forward_train_cuda
                          ? "the library was compiled without CUDA training code"
                      : m->def->cuda_train_unsupported ? m->def->cuda_train_unsupported()
                                                       : nullptr;
    if (why)
      return nncc_error_set(err, NNCC_ERROR_UNSUPPORTED,
                            "forward_train: '%s' cannot train on CUDA: %s; train it with "
                            "NNCC_TARGET_CPU",
                            m->abi->model_name, why);
  }
  return runModel(m, RunKind::Train, err);
}

nncc_status nncc_ms_backward(nncc_model *m, nncc_error *err) {
  if (nncc_status s = checkModel(m, "backward", err))
    return s;
  if (!m->def->backward_cpu)
    return nncc_error_set(err, NNCC_ERROR_UNSUPPORTED,
                          "backward: '%s' was compiled without gradients (nncc "
                          "compile --grad)", m->abi->model_name);
  if (!m->trainReady)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "backward: no forward_train since the last forward, input or "
                          "weight change");
  ErrorSlot slot(err);
  m->gradsValid = false;
  nncc_status s = claimRegions(m, m->def->boundary + 1, m->def->num_launches, slot.e);
  if (!s && m->target == NNCC_TARGET_CUDA) {
    // Cotangents were set on the host after forward_train; the gradients
    // stay on the device until something reads them (get_output).
    s = deviceTensors(m, m->cotangents, m->abi->cotangents, /*upload=*/true, slot.e);
    if (!s)
      s = m->def->backward_cuda(m, slot.e);
    if (!s)
      s = nncc_stream_synchronize(m->stream, slot.e);
    for (auto *group : {&m->grads, &m->inputGrads})
      for (Tensor &t : *group)
        t.hostStale = !s;
  } else if (!s) {
    s = m->def->backward_cpu(m, slot.e);
  }
  if (s) {
    m->trainReady = false;
    nncc_error_prefix(slot.e, "backward of '%s': ", m->abi->model_name);
    return s;
  }
  m->gradsValid = true;
  nncc_error_clear(err);
  return NNCC_OK;
}

nncc_status nncc_ms_forward_backward(nncc_model *m, nncc_error *err) {
  if (nncc_status s = nncc_ms_forward_train(m, err))
    return s;
  return nncc_ms_backward(m, err);
}

/// Random streams (docs/training.md, "Random streams"): a step's draws
/// start at draw step << 42 of each op's stream (RandomMasks.h counts draws), so
/// an op draws up to 2^42 values per step.
uint64_t nncc_ms_dropout_offset(const nncc_model *m) {
  return m ? static_cast<uint64_t>(m->optStep) << 42 : 0;
}

/// The current inputs' samples: the leading dim of the first set input of
/// rank >= 1 (nncc train's data: leading dim = samples); 0 when none.
static int64_t batchRows(const nncc_model *m) {
  for (const Tensor &t : m->inputs)
    if (t.set && !t.shape.empty())
      return t.shape[0];
  return 0;
}

uint64_t nncc_ms_rng_offset(const nncc_model *m, uint64_t draws) {
  if (!m)
    return 0;
  uint64_t offset = nncc_ms_dropout_offset(m);
  const int64_t rows = batchRows(m);
  // Batch-major draws (sample b's are [b, b + 1) * draws / rows): sample b
  // of this call is sample sampleOffset + b of the batch.
  if (m->sampleOffset > 0 && rows > 0 && draws % static_cast<uint64_t>(rows) == 0)
    offset += static_cast<uint64_t>(m->sampleOffset) * (draws / static_cast<uint64_t>(rows));
  return offset;
}

/// murmur3's 64-bit finaliser: a bijection with mix(0) = 0, so run seed 0
/// keeps each op's own key (the streams of libraries before ABI 9).
static uint64_t mixSeed(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

uint64_t nncc_ms_rng_key(const nncc_model *m, uint64_t opSeed) {
  return m ? opSeed ^ mixSeed(m->rngSeed) : opSeed;
}

extern "C" nncc_status nncc_ms_set_seed(nncc_model *m, uint64_t seed, nncc_error *err) {
  if (nncc_status s = checkModel(m, "set_seed", err))
    return s;
  m->rngSeed = seed;
  m->trainReady = m->gradsValid = false; // residuals of other masks
  nncc_error_clear(err);
  return NNCC_OK;
}

extern "C" nncc_status nncc_ms_set_sample_offset(nncc_model *m, int64_t row, nncc_error *err) {
  if (nncc_status s = checkModel(m, "set_sample_offset", err))
    return s;
  if (row < 0)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "set_sample_offset: the row must be >= 0, got %" PRId64, row);
  if (row != m->sampleOffset)
    m->trainReady = m->gradsValid = false;
  m->sampleOffset = row;
  nncc_error_clear(err);
  return NNCC_OK;
}

static void *tensorData(nncc_model *m, Tensor &t) {
  return m->target == NNCC_TARGET_CUDA ? reinterpret_cast<void *>(t.device) : t.data();
}
void *nncc_ms_grad(nncc_model *m, int32_t i) { return tensorData(m, m->grads[i]); }
void *nncc_ms_cotangent(nncc_model *m, int32_t i) { return tensorData(m, m->cotangents[i]); }
void *nncc_ms_input_grad(nncc_model *m, int32_t i) { return tensorData(m, m->inputGrads[i]); }

nncc_status nncc_ms_bind(nncc_model *m, int32_t binding, const char *name, nncc_dtype dtype,
                         int32_t rank, const int64_t *shape, void *data, nncc_error *err) {
  if (nncc_status s = checkModel(m, "bind", err))
    return s;
  const nncc_model_abi *abi = m->abi;
  if (!name)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "bind: name is NULL");
  const std::string qs = q(name);
  const char *qn = qs.c_str();
  // On CUDA the memory is device memory of the context's device (e.g. a
  // framework's CUDA tensor), used in place of the context's device copy.
  const bool cuda = m->target == NNCC_TARGET_CUDA;
  uint32_t elem = nncc_dtype_size(dtype);
  if (data && elem && reinterpret_cast<uintptr_t>(data) % elem != 0)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "bind %s: the memory is not aligned to its %u-byte elements", qn,
                          elem);
  if (data && (rank < 0 || (rank > 0 && !shape)))
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "bind %s: invalid rank %d or NULL shape", qn, rank);

  if (binding == NNCC_BIND_INPUT) {
    if (data) {
      nncc_status s = acceptInput(m, "bind", name, dtype, rank, shape, data, /*borrow=*/true, err);
      int32_t idx = findByName(abi->inputs, abi->num_inputs, name);
      if (s == NNCC_OK && cuda) // the borrowed pointer is a device pointer
        bindDevice(m, m->inputs[idx], data);
      return s;
    }
    int32_t idx = findByName(abi->inputs, abi->num_inputs, name);
    if (idx < 0)
      return nncc_error_set(err, NNCC_ERROR_NOT_FOUND, "bind: model '%s' has no input %s",
                            abi->model_name, qn);
    Tensor &t = m->inputs[idx];
    if (t.bound || t.deviceBound) { // unbound: to be set again
      t.bound = nullptr;
      bindDevice(m, t, nullptr);
      t.set = false;
    }
    m->trainReady = false;
    nncc_error_clear(err);
    return NNCC_OK;
  }

  // The table and the tensors of the other kinds.
  const nncc_tensor_info *infos = nullptr;
  int32_t count = 0;
  std::vector<Tensor> *tensors = nullptr;
  const char *kind = "";
  switch (binding) {
  case NNCC_BIND_OUTPUT:
    infos = abi->outputs, count = abi->num_outputs, tensors = &m->outputs, kind = "output";
    break;
  case NNCC_BIND_PARAM:
    infos = abi->params, count = abi->num_params, tensors = &m->params, kind = "parameter";
    break;
  case NNCC_BIND_GRAD:
    kind = "gradient";
    if (findByName(abi->input_grads, abi->num_input_grads, name) >= 0)
      infos = abi->input_grads, count = abi->num_input_grads, tensors = &m->inputGrads;
    else
      infos = abi->grads, count = abi->num_grads, tensors = &m->grads;
    break;
  case NNCC_BIND_COTANGENT:
    infos = abi->cotangents, count = abi->num_cotangents, tensors = &m->cotangents,
    kind = "cotangent";
    break;
  default:
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "bind %s: unknown binding kind %d", qn, binding);
  }
  int32_t idx = infos ? findByName(infos, count, name) : -1;
  if (idx < 0)
    return nncc_error_set(err, NNCC_ERROR_NOT_FOUND, "bind: model '%s' has no %s %s%s",
                          abi->model_name, kind, qn,
                          count ? "" : " (none: see nncc compile --grad / --vjp)");
  const nncc_tensor_info &info = infos[idx];
  if (data && dtype != info.dtype)
    return nncc_error_set(err, NNCC_ERROR_DTYPE_MISMATCH,
                          "bind %s %s: expected element type %s, got %s", kind, qn,
                          nncc_dtype_name(info.dtype), nncc_dtype_name(dtype));
  bool shapeOk = !data || rank == info.rank;
  for (int32_t i = 0; data && shapeOk && i < rank; ++i)
    shapeOk = shape[i] >= 0 && (info.dims[i] < 0 || info.dims[i] == shape[i]);
  if (!shapeOk)
    return nncc_error_set(err, NNCC_ERROR_SHAPE_MISMATCH, "bind %s %s: expected %s, got %s",
                          kind, qn, dimsString(abi, info).c_str(),
                          callerShape(shape, rank, info.rank).c_str());
  if (tensors->size() < static_cast<size_t>(count))
    tensors->resize(static_cast<size_t>(count));
  Tensor &t = (*tensors)[idx];

  if (binding == NNCC_BIND_PARAM && cuda) {
    // The host copy stays: load_weights / init_weights stage values there.
    if (data) {
      bindDevice(m, t, data);
      t.set = true;
    } else if (t.deviceBound) { // the context takes a copy of the current values
      if (nncc_status s = nncc_cuda_memcpy_dtoh(m->cuda, t.data(), t.device, t.bytes, nullptr,
                                                err))
        return nncc_error_prefix(err, "bind parameter %s: ", qn), s;
      bindDevice(m, t, nullptr);
      if (nncc_status s = ensureDevice(m, t, t.bytes, name, err))
        return s;
    }
    m->paramsDirty = true;
    m->trainReady = m->gradsValid = false;
  } else if (binding == NNCC_BIND_PARAM) {
    if (data) {
      t.bound = data;
      t.host.release();
      t.set = true;
    } else if (t.bound) { // the context takes a copy of the current values
      if (!t.host.reserve(t.bytes))
        return nncc_error_set(err, NNCC_ERROR_OUT_OF_MEMORY,
                              "bind parameter %s: cannot allocate %" PRIu64 " bytes", qn,
                              t.bytes);
      std::memcpy(t.host.data, t.bound, t.bytes);
      t.bound = nullptr;
    }
    m->paramsDirty = true;
    m->trainReady = m->gradsValid = false;
  } else {
    if (cuda)
      bindDevice(m, t, data);
    else
      t.bound = data;
    if (data)
      t.boundShape.assign(shape, shape + rank);
    if (binding == NNCC_BIND_OUTPUT)
      m->outputsValid = false;
    else if (binding == NNCC_BIND_GRAD)
      m->gradsValid = false;
  }
  nncc_error_clear(err);
  return NNCC_OK;
}

nncc_status nncc_ms_set_cotangent(nncc_model *m, const char *name, nncc_dtype dtype,
                                  int32_t rank, const int64_t *shape, const void *data,
                                  nncc_error *err) {
  if (nncc_status s = checkModel(m, "set_cotangent", err))
    return s;
  const nncc_model_abi *abi = m->abi;
  if (!name)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "set_cotangent: name is NULL");
  const std::string qs = q(name);
  const char *qn = qs.c_str();
  int32_t idx = findByName(abi->cotangents, abi->num_cotangents, name);
  if (idx < 0)
    return nncc_error_set(err, NNCC_ERROR_NOT_FOUND,
                          "set_cotangent: model '%s' has no cotangent %s (cotangents: %s)",
                          abi->model_name, qn,
                          abi->num_cotangents
                              ? nameList(abi->cotangents, abi->num_cotangents).c_str()
                              : "none: compile with --grad --vjp");
  const nncc_tensor_info &info = abi->cotangents[idx];
  if (!m->trainReady)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "set_cotangent %s: no forward_train since the last forward, "
                          "input or weight change (the cotangent's shape is its output's "
                          "for the dims of that forward_train)", qn);
  if (dtype != info.dtype)
    return nncc_error_set(err, NNCC_ERROR_DTYPE_MISMATCH,
                          "cotangent %s: expected element type %s, got %s", qn,
                          nncc_dtype_name(info.dtype), nncc_dtype_name(dtype));
  Tensor &t = m->cotangents[idx];
  if (rank != info.rank || (rank > 0 && !shape) ||
      !std::equal(t.shape.begin(), t.shape.end(), shape))
    return nncc_error_set(err, NNCC_ERROR_SHAPE_MISMATCH,
                          "cotangent %s: expected shape %s, got %s", qn,
                          shapeString(t.shape.data(), info.rank).c_str(),
                          rank >= 0 && (shape || rank == 0)
                              ? callerShape(shape, rank, info.rank).c_str()
                              : "an invalid shape");
  if (t.bytes && !data)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "cotangent %s: data is NULL",
                          qn);
  if (t.bound || t.deviceBound) { // a copy replaces the caller's memory
    t.bound = nullptr;
    t.deviceBound = false;
    t.device = 0;
    if (!t.host.reserve(t.bytes))
      return nncc_error_set(err, NNCC_ERROR_OUT_OF_MEMORY,
                            "cotangent %s: cannot allocate %" PRIu64 " bytes", qn, t.bytes);
  }
  if (t.bytes)
    std::memcpy(t.data(), data, t.bytes);
  m->gradsValid = false;
  nncc_error_clear(err);
  return NNCC_OK;
}

namespace {
/// Memory for a result of the shape in `t.shape` (`t.bytes`): the context's,
/// or the caller's bound memory, which must have that shape.
nncc_status prepareResult(Tensor &t, const char *name, nncc_error *e) {
  if (t.bound || t.deviceBound) {
    if (t.boundShape != t.shape)
      return nncc_error_set(e, NNCC_ERROR_SHAPE_MISMATCH,
                            "'%s' is bound to caller memory of shape %s, but this run "
                            "needs %s",
                            name, shapeString(t.boundShape.data(), t.boundShape.size()).c_str(),
                            shapeString(t.shape.data(), t.shape.size()).c_str());
    return NNCC_OK;
  }
  if (!t.host.reserve(t.bytes))
    return nncc_error_set(e, NNCC_ERROR_OUT_OF_MEMORY, "'%s': cannot allocate %" PRIu64 " bytes",
                          name, t.bytes);
  return NNCC_OK;
}

/// Sizes the tables' tensors for the bound dims (zero-filled unless bound).
nncc_status sizeTensors(nncc_model *m, const nncc_tensor_info *infos, int32_t n,
                        std::vector<Tensor> &tensors, nncc_error *e) {
  tensors.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    Tensor &t = tensors[i];
    if (!concreteShape(m->abi, infos[i].dims, infos[i].rank, m->dims, t.shape) ||
        !byteSize(t.shape.data(), infos[i].rank, nncc_dtype_size(infos[i].dtype), t.bytes))
      return nncc_error_set(e, NNCC_ERROR_OUT_OF_MEMORY, "'%s' %s is too large",
                            infos[i].name, dimsString(m->abi, infos[i]).c_str());
    if (nncc_status s = prepareResult(t, infos[i].name, e))
      return s;
    if (!t.bound && !t.deviceBound) // caller-owned cotangents are the caller's to fill
      std::memset(t.data(), 0, t.bytes);
  }
  return NNCC_OK;
}

/// VJP libraries, before forward_train: the cotangents at their defaults
/// (1 for the loss, 0 elsewhere) and room for the input gradients.
nncc_status prepareVJP(nncc_model *m, nncc_error *e) {
  const nncc_model_abi *abi = m->abi;
  if (!abi->num_cotangents)
    return NNCC_OK;
  if (nncc_status s = sizeTensors(m, abi->cotangents, abi->num_cotangents, m->cotangents, e))
    return s;
  if (nncc_status s = sizeTensors(m, abi->input_grads, abi->num_input_grads, m->inputGrads, e))
    return s;
  int32_t loss = findByName(abi->cotangents, abi->num_cotangents, "cotangent.loss");
  if (loss >= 0 && !m->cotangents[loss].bound && !m->cotangents[loss].deviceBound) {
    if (abi->cotangents[loss].dtype == NNCC_DTYPE_F64)
      *static_cast<double *>(m->cotangents[loss].data()) = 1.0;
    else
      *static_cast<float *>(m->cotangents[loss].data()) = 1.0f;
  }
  return NNCC_OK;
}

nncc_status runModel(nncc_model *m, RunKind kind, nncc_error *err) {
  ErrorSlot slot(err);
  nncc_error *e = slot.e;
  const nncc_model_abi *abi = m->abi;
  m->outputsValid = false;
  m->trainReady = false;
  m->gradsValid = false;
  if (!std::all_of(m->params.begin(), m->params.end(), [](const Tensor &p) { return p.set; }))
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "forward: the parameters of '%s' are not initialised; call "
                          "load_weights or init_weights first (or bind every parameter)",
                          abi->model_name);
  // Bind every dim from the inputs (all must be set and agree; in
  // inference, the inputs only the loss reads may be missing, and then the
  // loss is not computed).
  std::vector<int64_t> dims(static_cast<size_t>(abi->num_dims), -1);
  m->withLoss = true;
  m->lossMissing.clear();
  for (int32_t j = 0; j < abi->num_inputs; ++j) {
    const nncc_tensor_info &info = abi->inputs[j];
    const Tensor &t = m->inputs[j];
    if (!t.set && kind == RunKind::Forward && abi->abi_version >= 9 &&
        abi->inference_inputs && !abi->inference_inputs[j]) {
      m->withLoss = false;
      m->lossMissing += (m->lossMissing.empty() ? "'" : ", '") + std::string(info.name) + "'";
      continue;
    }
    if (!t.set)
      return nncc_error_set(err, NNCC_ERROR_NOT_FOUND,
                            "forward: input '%s' %s has not been set%s", info.name,
                            dimsString(abi, info).c_str(),
                            t.dropped ? " for these dims (an input set later "
                                        "changed them; set it again)"
                                      : "");
    for (int32_t k = 0; k < info.rank; ++k) {
      int64_t d = info.dims[k];
      if (d >= 0)
        continue;
      int64_t &v = dims[-d - 1];
      if (v >= 0 && v != t.shape[k])
        return nncc_error_set(err, NNCC_ERROR_SHAPE_MISMATCH,
                              "forward: inputs disagree on %s (%" PRId64 " vs %" PRId64 ")",
                              abi->dim_names[-d - 1], v, t.shape[k]);
      v = t.shape[k];
    }
  }
  for (int32_t s = 0; s < abi->num_dims; ++s)
    if (dims[s] < 0)
      return nncc_error_set(err, NNCC_ERROR_UNSUPPORTED,
                            "forward: dim %s is not the size of any input%s%s%s",
                            abi->dim_names[s], m->withLoss ? "" : " given (not set: ",
                            m->lossMissing.c_str(), m->withLoss ? "" : ")");
  m->dims = dims;
  // Outputs.
  for (int32_t j = 0; j < abi->num_outputs; ++j) {
    const nncc_tensor_info &info = abi->outputs[j];
    Tensor &t = m->outputs[j];
    if (!concreteShape(abi, info.dims, info.rank, m->dims, t.shape) ||
        !byteSize(t.shape.data(), info.rank, nncc_dtype_size(info.dtype), t.bytes))
      return nncc_error_set(err, NNCC_ERROR_OUT_OF_MEMORY,
                            "forward: output '%s' %s is too large", info.name,
                            dimsString(abi, info).c_str());
    if (nncc_status s = prepareResult(t, info.name, e))
      return nncc_error_prefix(e, "forward: output "), s;
  }
  if (nncc_status s = plan(m, e))
    return nncc_error_prefix(e, "forward: "), s;

  nncc_status s = NNCC_OK;
  if (kind == RunKind::Train) {
    m->grads.resize(static_cast<size_t>(abi->num_params));
    for (int32_t i = 0; i < abi->num_params; ++i) {
      Tensor &g = m->grads[i];
      g.bytes = m->params[i].bytes;
      g.shape = m->params[i].shape;
      if (nncc_status gs = prepareResult(g, abi->grads[i].name, e))
        return nncc_error_prefix(e, "forward_train: gradient "), gs;
    }
    if (nncc_status vs = prepareVJP(m, e))
      return nncc_error_prefix(e, "forward_train: "), vs;
    s = claimRegions(m, m->def->train_begin, m->def->boundary, e);
    if (!s && m->target == NNCC_TARGET_CUDA) {
      s = prepareDevice(m, e);
      if (!s)
        s = deviceTensors(m, m->grads, abi->grads, /*upload=*/false, e);
      if (!s)
        s = deviceTensors(m, m->inputGrads, abi->input_grads, /*upload=*/false, e);
      if (!s)
        s = m->def->forward_train_cuda(m, e);
      if (!s)
        s = finishDevice(m, e);
    } else if (!s) {
      s = m->def->forward_train_cpu(m, e);
    }
  } else if ((s = claimRegions(m, 0, m->def->train_begin, e))) {
    // An arena region beyond the capacity: the plan is broken.
  } else if (m->target == NNCC_TARGET_CPU) {
    s = m->def->forward_cpu
            ? m->def->forward_cpu(m, e)
            : nncc_error_set(e, NNCC_ERROR_UNSUPPORTED, "no CPU code in this library");
  } else {
    s = prepareDevice(m, e);
    if (!s)
      s = m->def->forward_cuda(m, e);
    if (!s)
      s = finishDevice(m, e);
  }
  if (s) {
    nncc_error_prefix(e, "forward of '%s': ", abi->model_name);
    return s;
  }
  ++m->generation;
  m->outputsValid = true;
  m->trainReady = kind == RunKind::Train;
  nncc_error_clear(err);
  return NNCC_OK;
}
} // namespace

namespace {
/// What get_output hands out: the host copy, or the caller's bound memory
/// (a device pointer for a CUDA binding).
const void *resultData(const nncc_model *, const Tensor &t) {
  return t.deviceBound ? reinterpret_cast<const void *>(t.device) : t.data();
}
} // namespace

nncc_status nncc_ms_get_output(nncc_model *m, const char *name, nncc_dtype *dtype,
                               int32_t *rank, const int64_t **shape, const void **data,
                               nncc_error *err) {
  if (nncc_status s = checkModel(m, "get_output", err))
    return s;
  if (!name)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "get_output: name is NULL");
  const std::string qs = q(name);
  const char *qn = qs.c_str();
  const nncc_model_abi *abi = m->abi;
  // grad.<param> and grad.<input>: valid after a successful backward.
  if (strncmp(name, "grad.", 5) == 0) {
    for (auto [infos, count, tensors] :
         {std::tuple(abi->grads, abi->num_grads, &m->grads),
          std::tuple(abi->input_grads, abi->num_input_grads, &m->inputGrads)}) {
      int32_t g = count > 0 ? findByName(infos, count, name) : -1;
      if (g < 0)
        continue;
      if (!m->gradsValid)
        return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                              "get_output %s: no successful backward since the last "
                              "forward, input, cotangent or weight change", qn);
      if (nncc_status s = syncToHost(m, (*tensors)[g], name, err))
        return nncc_error_prefix(err, "get_output: "), s;
      if (dtype)
        *dtype = infos[g].dtype;
      if (rank)
        *rank = infos[g].rank;
      if (shape)
        *shape = (*tensors)[g].shape.data();
      if (data)
        *data = resultData(m, (*tensors)[g]);
      nncc_error_clear(err);
      return NNCC_OK;
    }
  }
  int32_t idx = findByName(abi->outputs, abi->num_outputs, name);
  if (idx < 0)
    return nncc_error_set(err, NNCC_ERROR_NOT_FOUND,
                          "get_output: model '%s' has no output %s (outputs: %s)",
                          abi->model_name, qn,
                          nameList(abi->outputs, abi->num_outputs).c_str());
  if (!m->outputsValid)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "get_output %s: no successful forward since the model was "
                          "created or last failed",
                          qn);
  if (!m->withLoss && idx + 1 == abi->num_outputs && strcmp(name, "loss") == 0)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "get_output %s: the last forward ran without %s, which only the "
                          "loss reads, so it did not compute the loss; set %s to compute it",
                          qn, m->lossMissing.c_str(),
                          m->lossMissing.find(',') == std::string::npos ? "it" : "them");
  const Tensor &t = m->outputs[idx];
  if (dtype)
    *dtype = abi->outputs[idx].dtype;
  if (rank)
    *rank = abi->outputs[idx].rank;
  if (shape)
    *shape = t.shape.data();
  if (data)
    *data = resultData(m, t);
  nncc_error_clear(err);
  return NNCC_OK;
}

nncc_status nncc_ms_set_cuda_stream(nncc_model *m, void *stream, nncc_error *err) {
  if (nncc_status s = checkModel(m, "set_cuda_stream", err))
    return s;
  if (m->target != NNCC_TARGET_CUDA)
    return nncc_error_set(err, NNCC_ERROR_UNSUPPORTED,
                          "set_cuda_stream: '%s' runs on the CPU target", m->abi->model_name);
  // The work queued so far finishes first, on the stream it was queued on.
  if (nncc_status s = nncc_stream_synchronize(m->stream, err))
    return nncc_error_prefix(err, "set_cuda_stream: "), s;
  nncc_stream *wrapped = nullptr;
  if (stream)
    if (nncc_status s = nncc_stream_wrap_cuda(m->cuda, static_cast<nncc_CUstream>(stream),
                                              &wrapped, err))
      return nncc_error_prefix(err, "set_cuda_stream: "), s;
  nncc_stream_destroy(m->callerStream);
  m->callerStream = wrapped;
  m->stream = wrapped ? wrapped : m->ownStream;
  nncc_error_clear(err);
  return NNCC_OK;
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

nncc_target nncc_ms_target(const nncc_model *m) { return m->target; }
int nncc_ms_computes_loss(const nncc_model *m) { return m->withLoss ? 1 : 0; }
const int64_t *nncc_ms_dims(const nncc_model *m) { return m->dims.data(); }
int64_t nncc_ms_bound_dim(const nncc_model *m, int32_t i) {
  return m && i >= 0 && i < static_cast<int32_t>(m->bound.size()) ? m->bound[i] : -1;
}

void *nncc_ms_input(nncc_model *m, int32_t i) { return tensorData(m, m->inputs[i]); }
void *nncc_ms_param(nncc_model *m, int32_t i) { return tensorData(m, m->params[i]); }
void *nncc_ms_output(nncc_model *m, int32_t i) { return tensorData(m, m->outputs[i]); }
void *nncc_ms_buffer_ptr(nncc_model *m, int32_t i) { return m->bufferPtrs[i]; }
void *nncc_ms_cuda_stream(nncc_model *m) {
  return m->stream ? static_cast<void *>(nncc_stream_cuda_handle(m->stream)) : nullptr;
}
void *nncc_ms_cuda_state(nncc_model *m) { return m->cudaState; }
const int32_t *nncc_ms_frozen(const nncc_model *m) {
  return m && m->numFrozen > 0 ? m->frozen.data() : nullptr;
}

//===--- NNCC_PROFILE: per-launch wall time ---------------------------------===//
namespace {
struct ProfileEntry {
  std::string launch;
  uint64_t calls = 0, skipped = 0;
  double seconds = 0;
};
struct Profile {
  std::string path;               // "" = stderr
  uint64_t skip = 0;              // NNCC_PROFILE_SKIP: untimed first calls
  std::vector<ProfileEntry> entries;
  std::unordered_map<std::string, size_t> index;
};
// -1: not read yet, 0: off, 1: on. Launches run on the caller's thread.
int gProfileState = -1;
Profile *gProfile = nullptr;

void writeProfile() {
  Profile *p = gProfile;
  if (!p)
    return;
  FILE *f = p->path.empty() ? stderr : std::fopen(p->path.c_str(), "a");
  if (!f)
    return;
  std::vector<const ProfileEntry *> order;
  double total = 0;
  for (const ProfileEntry &e : p->entries) {
    order.push_back(&e);
    total += e.seconds;
  }
  std::stable_sort(order.begin(), order.end(), [](const ProfileEntry *a, const ProfileEntry *b) {
    return a->seconds > b->seconds;
  });
  std::fprintf(f, "# nncc profile: seconds\tcalls\tlaunch (total %.6f s)\n", total);
  for (const ProfileEntry *e : order)
    if (e->calls) // launches whose every call was skipped are left out
      std::fprintf(f, "%.6f\t%" PRIu64 "\t%s\n", e->seconds, e->calls, e->launch.c_str());
  if (f != stderr)
    std::fclose(f);
}

bool profileOn() {
  if (gProfileState < 0) {
    const char *env = std::getenv("NNCC_PROFILE");
    gProfileState = env && *env && std::strcmp(env, "0") != 0;
    if (gProfileState) {
      gProfile = new Profile();
      if (std::strcmp(env, "1") != 0 && std::strcmp(env, "-") != 0)
        gProfile->path = env;
      if (const char *skip = std::getenv("NNCC_PROFILE_SKIP"))
        gProfile->skip = std::strtoull(skip, nullptr, 10);
      std::atexit(writeProfile);
    }
  }
  return gProfileState == 1;
}

double profileNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
} // namespace

double nncc_ms_prof_begin(void) { return profileOn() ? profileNow() : 0.0; }

void nncc_ms_prof_end(double t0, const char *launch) {
  if (gProfileState == 1)
    nncc_ms_prof_add(profileNow() - t0, launch);
}

void nncc_ms_prof_add(double dt, const char *launch) {
  if (gProfileState != 1)
    return;
  auto [it, fresh] = gProfile->index.try_emplace(launch, gProfile->entries.size());
  if (fresh)
    gProfile->entries.push_back({launch, 0, 0});
  ProfileEntry &e = gProfile->entries[it->second];
  if (e.skipped < gProfile->skip) {
    e.skipped += 1;
    return;
  }
  e.calls += 1;
  e.seconds += dt;
}

nncc_status nncc_ms_kernel_status(int rc, const char *launch, nncc_error *err) {
  switch (rc) {
  case 0:
    return NNCC_OK;
  case -2:
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "%s: an index input is out of range", launch);
  case -3:
    return nncc_error_set(err, NNCC_ERROR_UNSUPPORTED, "%s: unsupported by the kernel",
                          launch);
  default:
    return nncc_error_set(err, NNCC_ERROR_INTERNAL,
                          "%s: the kernel rejected its arguments (code %d)", launch, rc);
  }
}

void nncc_ms_copy_nd(uint32_t elem_size, int32_t rank, const int64_t *shape, void *dst,
                     const int64_t *dst_strides, const void *src,
                     const int64_t *src_strides) {
  int64_t total = 1;
  for (int32_t d = 0; d < rank; ++d)
    total *= shape[d];
  if (total <= 0)
    return;
  char *out = static_cast<char *>(dst);
  const char *in = static_cast<const char *>(src);
  int64_t inner = rank ? shape[rank - 1] : 1;
  int64_t rows = total / inner;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t so = 0, dso = 0; // the row's offsets: its index over dims 0..rank-2
    strided_offsets(r, rank - 1, shape, src_strides, &so, dst_strides, &dso);
    int64_t ss = rank ? src_strides[rank - 1] : 1, ds = rank ? dst_strides[rank - 1] : 1;
    if (ss == 1 && ds == 1) {
      std::memcpy(out + dso * elem_size, in + so * elem_size, inner * elem_size);
      continue;
    }
    for (int64_t j = 0; j < inner; ++j)
      std::memcpy(out + (dso + j * ds) * elem_size, in + (so + j * ss) * elem_size,
                  elem_size);
  }
}

void nncc_ms_reduce_f32(int32_t rank, const int64_t *shape, uint32_t mask, int mean,
                        const float *x, float *y) {
  reduceImpl(rank, shape, mask, mean, x, y);
}
void nncc_ms_reduce_f64(int32_t rank, const int64_t *shape, uint32_t mask, int mean,
                        const double *x, double *y) {
  reduceImpl(rank, shape, mask, mean, x, y);
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Training: parameter groups, schedules, train_step
//===----------------------------------------------------------------------===//

namespace {
// The parameter groups are the compiler's (#nn.param_group, emitted as
// kParamGroups): weight decay or not, and the exponent of layer_decay.
bool paramDecays(const nncc_model_abi *abi, int32_t i) {
  return !abi->param_groups || abi->param_groups[i].decay != 0;
}

double paramLrScale(const nncc_model_abi *abi, int32_t i, double layerDecay) {
  int32_t depth = abi->param_groups ? abi->param_groups[i].lr_depth : 0;
  return depth == 0 ? 1.0 : std::pow(layerDecay, double(depth));
}

/// `field` = `v` of a configuration is outside `range` (a message; `v` in
/// the fewest digits that give it back).
nncc_status badField(nncc_error *err, const char *what, const char *field, double v,
                     const char *range) {
  char text[40];
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, v);
    if (std::isnan(v) || std::strtod(text, nullptr) == v)
      break;
  }
  return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                        "%s: the configuration's %s = %s is outside its range: %s", what,
                        field, text, range);
}

/// layer_decay, which param_group reads too.
nncc_status checkLayerDecay(const nncc_train_config *c, const char *what, nncc_error *err) {
  if (!(c->layer_decay > 0.0 && c->layer_decay <= 1.0))
    return badField(err, what, "layer_decay", c->layer_decay, "(0, 1] (1: none)");
  return NNCC_OK;
}
} // namespace

extern "C" double nncc_ms_schedule_lr(const nncc_train_config *c, int64_t t) {
  if (!c)
    return 0.0;
  const double lr = c->lr;
  const double pi = 3.14159265358979323846;
  double O = double(c->total > 0 ? c->total : 0);
  double W = c->warmup >= 0 ? double(c->warmup) : O * c->warmup_fraction;
  switch (c->schedule) {
  case NNCC_SCHEDULE_WARMUP_COSINE:
  case NNCC_SCHEDULE_COSINE: {
    double cyc = c->schedule == NNCC_SCHEDULE_COSINE ? 0.0 : c->cycles;
    if (c->schedule == NNCC_SCHEDULE_COSINE)
      W = 0;
    if (double(t) < W)
      return lr * double(t) / std::max(1.0, W);
    // C(x) = arccos(2x - 1) / (2 pi), eq. 3.2.
    double C = std::acos(std::min(1.0, std::max(-1.0, 2.0 * cyc - 1.0))) / (2.0 * pi);
    double f = 0.5 * (1.0 + std::cos(2.0 * pi * C * (double(t) - W) / std::max(1.0, O - W)));
    return lr * std::max(0.0, f);
  }
  case NNCC_SCHEDULE_LINEAR:
    if (double(t) < W)
      return lr * double(t) / std::max(1.0, W);
    return lr * std::max(0.0, (O - double(t)) / std::max(1.0, O - W));
  case NNCC_SCHEDULE_STEP:
    return lr * std::pow(c->gamma, std::floor(double(t) / double(std::max<int64_t>(1, c->step_size))));
  default:
    return lr;
  }
}

extern "C" nncc_status nncc_ms_param_group(nncc_model *m, int32_t i,
                                           const nncc_train_config *c, int32_t *decay,
                                           double *lr_scale, nncc_error *err) {
  if (nncc_status s = checkModel(m, "param_group", err))
    return s;
  if (i < 0 || i >= m->abi->num_params)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "param_group: index %d out of range (%d parameters)", i,
                          m->abi->num_params);
  if (!c)
    c = m->abi->train_config;
  if (c)
    if (nncc_status s = checkLayerDecay(c, "param_group", err))
      return s;
  if (decay)
    *decay = paramDecays(m->abi, i) ? 1 : 0;
  if (lr_scale)
    *lr_scale = c ? paramLrScale(m->abi, i, c->layer_decay) : 1.0;
  nncc_error_clear(err);
  return NNCC_OK;
}

extern "C" nncc_status nncc_ms_reset_optimizer(nncc_model *m, nncc_error *err) {
  if (nncc_status s = checkModel(m, "reset_optimizer", err))
    return s;
  m->optM.clear();
  m->optV.clear();
  for (auto *group : {&m->cudaOptM, &m->cudaOptV, &m->cudaOptW}) {
    for (Tensor &t : *group)
      if (t.device)
        nncc_cuda_free(m->cuda, t.device, nullptr);
    group->clear();
  }
  m->optStep = 0;
  m->stateOptimizer = -1;
  m->stats = nncc_train_stats{};
  nncc_error_clear(err);
  return NNCC_OK;
}

extern "C" nncc_status nncc_ms_set_step(nncc_model *m, int64_t step, nncc_error *err) {
  if (nncc_status s = checkModel(m, "set_step", err))
    return s;
  if (step < 0)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "set_step: the step must be >= 0, got %" PRId64, step);
  m->optStep = step;
  m->trainReady = m->gradsValid = false; // residuals of other masks
  nncc_error_clear(err);
  return NNCC_OK;
}

namespace {
/// The index of parameter `name` for `what` (set_frozen, get_frozen), or an
/// error naming it and listing the parameters.
nncc_status frozenIndex(nncc_model *m, const char *name, const char *what, int32_t &index,
                        nncc_error *err) {
  if (nncc_status s = checkModel(m, what, err))
    return s;
  if (!name)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "%s: name is NULL", what);
  index = findByName(m->abi->params, m->abi->num_params, name);
  if (index < 0)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "%s: '%s' has no parameter %s; its parameters: %s", what,
                          m->abi->model_name, q(name).c_str(),
                          nameList(m->abi->params, m->abi->num_params).c_str());
  return NNCC_OK;
}
} // namespace

extern "C" nncc_status nncc_ms_set_frozen(nncc_model *m, const char *name, int32_t frozen,
                                          nncc_error *err) {
  int32_t i = -1;
  if (nncc_status s = frozenIndex(m, name, "set_frozen", i, err))
    return s;
  if (frozen != 0 && frozen != 1)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "set_frozen: frozen must be 0 (trainable) or 1 (frozen), got %d",
                          frozen);
  m->numFrozen += frozen - m->frozen[i];
  m->frozen[i] = frozen;
  nncc_error_clear(err);
  return NNCC_OK;
}

extern "C" nncc_status nncc_ms_get_frozen(nncc_model *m, const char *name, int32_t *frozen,
                                          nncc_error *err) {
  int32_t i = -1;
  if (nncc_status s = frozenIndex(m, name, "get_frozen", i, err))
    return s;
  if (frozen)
    *frozen = m->frozen[i];
  nncc_error_clear(err);
  return NNCC_OK;
}

extern "C" nncc_status nncc_ms_train_stats(nncc_model *m, nncc_train_stats *out,
                                           nncc_error *err) {
  if (nncc_status s = checkModel(m, "train_stats", err))
    return s;
  if (out)
    *out = m->stats;
  nncc_error_clear(err);
  return NNCC_OK;
}

//===----------------------------------------------------------------------===//
// Training state (ABI 7): parameters, optimizer state and step in one file
//===----------------------------------------------------------------------===//

namespace {

const char *optimizerName(int32_t kind) {
  return kind == NNCC_OPTIM_SGD ? "sgd" : kind == NNCC_OPTIM_ADAM ? "adam" : "adamw";
}

/// One kind of per-parameter optimizer state, named as torch.optim's
/// state_dict names it: "optimizer.<kind>.<parameter>".
struct StateGroup {
  const char *kind;
  std::vector<HostBuffer> *host; // CPU
  std::vector<Tensor> *device;   // CUDA
};

/// The state groups an optimizer keeps (bf16: also the fp32 master weights).
std::vector<StateGroup> stateGroups(nncc_model *m, int32_t optimizer) {
  std::vector<StateGroup> groups;
  if (optimizer == NNCC_OPTIM_SGD) {
    groups.push_back({"momentum_buffer", &m->optM, &m->cudaOptM});
  } else {
    groups.push_back({"exp_avg", &m->optM, &m->cudaOptM});
    groups.push_back({"exp_avg_sq", &m->optV, &m->cudaOptV});
  }
  if (std::strcmp(m->abi->precision, "bf16") == 0)
    groups.push_back({"master", nullptr, &m->cudaOptW});
  return groups;
}

/// The element type of the optimizer state: the parameters' own, except
/// for bf16 parameters, whose state (and masters) are fp32.
nncc_dtype stateDtype(const nncc_model *m) {
  return std::strcmp(m->abi->precision, "f64") == 0 ? NNCC_DTYPE_F64 : NNCC_DTYPE_F32;
}

uint64_t paramNumel(const nncc_model *m, int32_t i) {
  return m->params[i].bytes / std::max<size_t>(nncc_dtype_size(m->abi->params[i].dtype), 1);
}

std::string stateName(const char *kind, const char *param) {
  return std::string("optimizer.") + kind + "." + param;
}

} // namespace

extern "C" nncc_status nncc_ms_save_train_state(nncc_model *m, const char *path,
                                                nncc_error *err) {
  if (nncc_status s = checkModel(m, "save_train_state", err))
    return s;
  if (!path)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "save_train_state: path is NULL");
  ErrorSlot slot(err);
  nncc_error *e = slot.e;
  if (nncc_status s = syncParamsToHost(m, e))
    return nncc_error_prefix(e, "save_train_state: "), s;
  const nncc_model_abi *abi = m->abi;
  const bool cuda = m->target == NNCC_TARGET_CUDA;
  nncc_safetensors_writer *w = nullptr;
  if (nncc_status s = nncc_safetensors_writer_create(&w, e))
    return s;
  nncc_status s = NNCC_OK;
  for (int32_t i = 0; i < abi->num_params && !s; ++i) {
    const nncc_tensor_info &info = abi->params[i];
    s = nncc_safetensors_writer_add(w, info.name, info.dtype, info.rank, info.dims,
                                    m->params[i].data(), m->params[i].bytes, e);
  }
  // The state as the optimizer left it; device state is copied out first
  // into buffers that live until the file is written (the writer borrows
  // its data; a deque never moves its elements). Masters are written only
  // when current (stale ones are rebuilt from the parameters by the next
  // step).
  std::deque<HostBuffer> staged;
  const nncc_dtype dt = stateDtype(m);
  if (m->stateOptimizer >= 0)
    for (const StateGroup &g : stateGroups(m, m->stateOptimizer)) {
      if (g.device == &m->cudaOptW && m->masterStale)
        continue;
      for (int32_t i = 0; i < abi->num_params && !s; ++i) {
        const uint64_t bytes = paramNumel(m, i) * nncc_dtype_size(dt);
        const void *data = nullptr;
        if (cuda && i < int32_t(g.device->size()) && (*g.device)[i].device) {
          staged.emplace_back();
          if (!staged.back().reserve(bytes)) {
            s = nncc_error_set(e, NNCC_ERROR_OUT_OF_MEMORY,
                               "cannot stage the optimizer state");
            break;
          }
          s = nncc_cuda_memcpy_dtoh(m->cuda, staged.back().data, (*g.device)[i].device, bytes,
                                    nullptr, e);
          data = staged.back().data;
        } else if (!cuda && g.host && i < int32_t(g.host->size()) && (*g.host)[i].data) {
          data = (*g.host)[i].data;
        }
        if (!s && data) {
          const nncc_tensor_info &info = abi->params[i];
          s = nncc_safetensors_writer_add(w, stateName(g.kind, info.name).c_str(), dt, info.rank,
                                          info.dims, data, bytes, e);
        }
      }
    }
  const std::string step = std::to_string(m->optStep);
  std::string frozenNames; // ABI 10: the frozen parameters, comma-separated
  for (int32_t i = 0; i < abi->num_params; ++i)
    if (m->frozen[i])
      frozenNames += (frozenNames.empty() ? "" : ",") + std::string(abi->params[i].name);
  const std::pair<const char *, const char *> metadata[] = {
      {"nncc_frozen", frozenNames.c_str()},
      {"nncc_model", abi->model_name},
      {"nncc_precision", abi->precision},
      {"nncc_train_state", "1"},
      {"nncc_step", step.c_str()},
      {"nncc_optimizer", m->stateOptimizer >= 0 ? optimizerName(m->stateOptimizer) : "none"}};
  for (auto [key, value] : metadata)
    if (!s)
      s = nncc_safetensors_writer_set_metadata(w, key, value, e);
  if (!s)
    s = nncc_safetensors_writer_write(w, path, e);
  nncc_safetensors_writer_destroy(w);
  if (s)
    nncc_error_prefix(e, "saving the training state to %s: ", q(path).c_str());
  else
    nncc_error_clear(err);
  return s;
}

extern "C" nncc_status nncc_ms_load_train_state(nncc_model *m, const char *path,
                                                nncc_error *err) {
  if (nncc_status s = checkModel(m, "load_train_state", err))
    return s;
  if (!path)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "load_train_state: path is NULL");
  ErrorSlot slot(err);
  nncc_error *e = slot.e;
  const nncc_model_abi *abi = m->abi;
  const bool cuda = m->target == NNCC_TARGET_CUDA;
  nncc_safetensors *file = nullptr;
  if (nncc_status s = nncc_safetensors_open(path, &file, e))
    return nncc_error_prefix(e, "loading the training state from %s: ", q(path).c_str()), s;
  struct Closer {
    nncc_safetensors *f;
    ~Closer() { nncc_safetensors_close(f); }
  } closer{file};
  auto bad = [&](nncc_status status, const std::string &msg) {
    return nncc_error_set(e, status, "loading the training state from %s: %s",
                          q(path).c_str(), msg.c_str());
  };
  auto meta = [&](const char *key) {
    const char *v = nncc_safetensors_metadata_get(file, key);
    return std::string(v ? v : "");
  };
  // A metadata value for a message: as is when it is a plain word, else quoted.
  auto shown = [](const std::string &v) {
    bool word = !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
    return word ? v : q(v);
  };
  // Check everything before changing anything: a failed load leaves the
  // model and its optimizer as they were.
  if (meta("nncc_train_state") != "1")
    return bad(NNCC_ERROR_INVALID_ARGUMENT,
               "not a training state (no nncc_train_state metadata; weights alone load "
               "with load_weights)");
  if (meta("nncc_model") != abi->model_name)
    return bad(NNCC_ERROR_INVALID_ARGUMENT, "it is of model " + q(meta("nncc_model")) +
                                                ", this library is '" + abi->model_name + "'");
  if (meta("nncc_precision") != abi->precision)
    return bad(NNCC_ERROR_INVALID_ARGUMENT, "it is " + shown(meta("nncc_precision")) +
                                                ", this library is " + abi->precision);
  const std::string stepText = meta("nncc_step");
  char *end = nullptr;
  errno = 0;
  long long step = std::strtoll(stepText.c_str(), &end, 10);
  if (stepText.empty() || *end || errno || step < 0)
    return bad(NNCC_ERROR_INVALID_ARGUMENT, "nncc_step " + q(stepText) + " is not a step count");
  const std::string opt = meta("nncc_optimizer");
  int32_t optimizer = -1;
  for (int32_t k : {NNCC_OPTIM_SGD, NNCC_OPTIM_ADAM, NNCC_OPTIM_ADAMW})
    if (opt == optimizerName(k))
      optimizer = k;
  if (optimizer < 0 && opt != "none")
    return bad(NNCC_ERROR_INVALID_ARGUMENT,
               "nncc_optimizer " + q(opt) + " is not one of sgd, adam, adamw, none");
  const int32_t n = abi->num_params;
  // ABI 10: the frozen parameters (none in files without nncc_frozen).
  std::vector<int32_t> frozen(static_cast<size_t>(n), 0);
  {
    const std::string names = meta("nncc_frozen");
    for (size_t at = 0; at < names.size();) {
      size_t comma = names.find(',', at);
      std::string name = names.substr(at, comma == std::string::npos ? std::string::npos
                                                                     : comma - at);
      int32_t i = findByName(abi->params, n, name.c_str());
      if (i < 0)
        return bad(NNCC_ERROR_INVALID_ARGUMENT,
                   "nncc_frozen names " + q(name.c_str()) + ", not a parameter of '" +
                       abi->model_name + "'");
      frozen[i] = 1;
      if (comma == std::string::npos)
        break;
      at = comma + 1;
    }
  }
  std::vector<nncc_tensor_view> params(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const nncc_tensor_info &info = abi->params[i];
    if (nncc_status s = nncc_safetensors_get(file, info.name, info.dtype, info.rank, info.dims,
                                             &params[i], e))
      return nncc_error_prefix(e, "loading the training state from %s: parameter '%s': ",
                               q(path).c_str(), info.name),
             s;
  }
  // Each state group is present for every parameter or for none (SGD
  // without momentum keeps none; masters are left out when stale).
  const nncc_dtype dt = stateDtype(m);
  std::vector<StateGroup> groups = optimizer >= 0 ? stateGroups(m, optimizer)
                                                  : std::vector<StateGroup>{};
  std::vector<std::vector<nncc_tensor_view>> views(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    int32_t found = 0;
    for (int32_t i = 0; i < n; ++i) {
      nncc_tensor_view v{};
      if (nncc_safetensors_find(file, stateName(groups[g].kind, abi->params[i].name).c_str(),
                                &v, nullptr) == NNCC_OK)
        ++found;
    }
    if (found == 0)
      continue;
    views[g].resize(size_t(n));
    for (int32_t i = 0; i < n; ++i) {
      const nncc_tensor_info &info = abi->params[i];
      std::string name = stateName(groups[g].kind, info.name);
      if (nncc_status s = nncc_safetensors_get(file, name.c_str(), dt, info.rank, info.dims,
                                               &views[g][i], e))
        return nncc_error_prefix(e, "loading the training state from %s: '%s': ",
                                 q(path).c_str(), name.c_str()),
               s;
    }
  }
  if (optimizer != NNCC_OPTIM_SGD && optimizer >= 0 && (views[0].empty() || views[1].empty()))
    return bad(NNCC_ERROR_INVALID_ARGUMENT,
               std::string("the ") + opt + " state needs optimizer.exp_avg.* and "
               "optimizer.exp_avg_sq.* for every parameter");
  // Replace: the parameters, then the state.
  if (nncc_status s = nncc_ms_reset_optimizer(m, e))
    return s;
  for (int32_t i = 0; i < n; ++i) {
    std::memcpy(m->params[i].data(), params[i].data, m->params[i].bytes);
    m->params[i].set = true;
  }
  m->paramsHostStale = false;
  m->trainReady = m->gradsValid = false;
  m->paramsDirty = true;
  m->accCount = 0; // gradients of other weights
  if (optimizer >= 0) {
    m->optM = std::vector<HostBuffer>(cuda ? 0 : size_t(n));
    m->optV = std::vector<HostBuffer>(cuda ? 0 : size_t(n));
    m->cudaOptM = std::vector<Tensor>(cuda ? size_t(n) : 0);
    m->cudaOptV = std::vector<Tensor>(cuda ? size_t(n) : 0);
  }
  bool masters = false;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (views[g].empty())
      continue;
    if (!cuda && !groups[g].host)
      continue; // masters exist on CUDA only
    if (groups[g].device == &m->cudaOptW) {
      m->cudaOptW = std::vector<Tensor>(size_t(n));
      masters = true;
    }
    for (int32_t i = 0; i < n; ++i) {
      const uint64_t bytes = paramNumel(m, i) * nncc_dtype_size(dt);
      if (!cuda) {
        if (!(*groups[g].host)[i].reserve(bytes))
          return nncc_error_set(e, NNCC_ERROR_OUT_OF_MEMORY,
                                "load_train_state: cannot allocate the optimizer state");
        std::memcpy((*groups[g].host)[i].data, views[g][i].data, bytes);
        continue;
      }
      Tensor &t = (*groups[g].device)[i];
      t.bytes = bytes;
      if (nncc_status s = ensureDevice(m, t, bytes, abi->params[i].name, e))
        return nncc_error_prefix(e, "load_train_state: optimizer state: "), s;
      if (nncc_status s = nncc_cuda_memcpy_htod(m->cuda, t.device, views[g][i].data, bytes,
                                                nullptr, e))
        return nncc_error_prefix(e, "load_train_state: optimizer state: "), s;
    }
  }
  if (cuda) {
    // The parameters to the device now, so that the masters just loaded
    // are not taken for stale by the next step's upload.
    for (int32_t i = 0; i < n; ++i)
      if (!m->params[i].deviceBound)
        if (nncc_status s = nncc_cuda_memcpy_htod(m->cuda, m->params[i].device,
                                                  m->params[i].data(), m->params[i].bytes,
                                                  nullptr, e))
          return nncc_error_prefix(e, "load_train_state: parameter '%s': ",
                                   abi->params[i].name),
                 s;
    if (nncc_status s = pushBoundParams(m, e))
      return nncc_error_prefix(e, "load_train_state: "), s;
    m->paramsDirty = false;
  }
  m->masterStale = !masters;
  m->frozen = frozen;
  m->numFrozen = int32_t(std::count(frozen.begin(), frozen.end(), 1));
  m->optStep = step;
  m->stateOptimizer = optimizer;
  m->stats = nncc_train_stats{};
  m->stats.step = step;
  nncc_error_clear(err);
  return NNCC_OK;
}

namespace {
/// train_step's update on the device: the optimizer state (zeroed device
/// buffers, allocated on first use) and the generated update_cuda. bf16:
/// the state is fp32, and so are the master copies of the parameters (set
/// by the update from the bf16 parameters when new or stale).
nncc_status cudaUpdate(nncc_model *m, const nncc_train_config *c, const char *what, bool adam,
                       bool needM, bool first, int64_t step, double scale,
                       const std::vector<double> &lrs, const std::vector<double> &wds,
                       nncc_error *err) {
  const nncc_model_abi *abi = m->abi;
  const int32_t n = abi->num_params;
  const bool bf16 = strcmp(abi->precision, "bf16") == 0;
  if (bf16 && m->cudaOptW.size() != size_t(n))
    m->cudaOptW = std::vector<Tensor>(size_t(n));
  std::vector<void *> s1(size_t(n), nullptr), s2(size_t(n), nullptr), w(size_t(n), nullptr);
  HostBuffer zeros;
  for (int32_t i = 0; i < n; ++i) {
    // bf16 parameters (2 bytes) have fp32 state and masters.
    uint64_t bytes = bf16 ? m->params[i].bytes * 2 : m->params[i].bytes;
    for (auto [need, group, out] : {std::tuple(needM, &m->cudaOptM, &s1),
                                    std::tuple(adam, &m->cudaOptV, &s2),
                                    std::tuple(bf16, &m->cudaOptW, &w)}) {
      if (!need)
        continue;
      Tensor &t = (*group)[i];
      if (!t.device && group == &m->cudaOptW) { // set by the update itself
        t.bytes = bytes;
        if (nncc_status s = ensureDevice(m, t, bytes, abi->params[i].name, err))
          return nncc_error_prefix(err, "%s: master weights: ", what), s;
        m->masterStale = true;
      } else if (!t.device) {
        if (!zeros.reserve(bytes))
          return nncc_error_set(err, NNCC_ERROR_OUT_OF_MEMORY,
                                "%s: cannot allocate the optimizer state", what);
        t.bytes = bytes;
        if (nncc_status s = ensureDevice(m, t, bytes, abi->params[i].name, err))
          return nncc_error_prefix(err, "%s: optimizer state: ", what), s;
        if (nncc_status s = nncc_cuda_memcpy_htod(m->cuda, t.device, zeros.data, bytes,
                                                  m->stream, err))
          return nncc_error_prefix(err, "%s: optimizer state: ", what), s;
      }
      (*out)[i] = reinterpret_cast<void *>(t.device);
    }
  }
  // The update leaves frozen parameters out of its tables, so it would not
  // set their masters: set them here from the bf16 values (exact), so that
  // every master is current (save_train_state writes them; a parameter
  // unfrozen later starts from its own value).
  if (bf16 && m->masterStale && m->numFrozen > 0) {
    HostBuffer raw, wide;
    for (int32_t i = 0; i < n; ++i) {
      if (!m->frozen[i])
        continue;
      const uint64_t numel = m->params[i].bytes / 2;
      if (!raw.reserve(m->params[i].bytes) || !wide.reserve(numel * 4))
        return nncc_error_set(err, NNCC_ERROR_OUT_OF_MEMORY,
                              "%s: cannot stage the master weights", what);
      if (nncc_status s = nncc_cuda_memcpy_dtoh(m->cuda, raw.data, m->params[i].device,
                                                m->params[i].bytes, m->stream, err))
        return nncc_error_prefix(err, "%s: master weights: ", what), s;
      if (nncc_status s = nncc_stream_synchronize(m->stream, err))
        return nncc_error_prefix(err, "%s: master weights: ", what), s;
      for (uint64_t k = 0; k < numel; ++k)
        static_cast<float *>(wide.data)[k] =
            nncc_bf16_to_f32(static_cast<const uint16_t *>(raw.data)[k]);
      if (nncc_status s = nncc_cuda_memcpy_htod(m->cuda, m->cudaOptW[i].device, wide.data,
                                                numel * 4, m->stream, err))
        return nncc_error_prefix(err, "%s: master weights: ", what), s;
      if (nncc_status s = nncc_stream_synchronize(m->stream, err))
        return nncc_error_prefix(err, "%s: master weights: ", what), s;
    }
  }
  nncc_ms_cuda_update u{};
  u.optimizer = c->optimizer;
  u.step = step;
  u.first = first ? 1 : 0;
  u.grad_scale = scale;
  u.beta1 = c->beta1;
  u.beta2 = c->beta2;
  u.eps = c->eps;
  u.momentum = c->momentum;
  u.nesterov = c->nesterov;
  u.lr = lrs.data();
  u.weight_decay = wds.data();
  u.state1 = s1.data();
  u.state2 = s2.data();
  u.master = bf16 ? w.data() : nullptr;
  u.init_master = bf16 && m->masterStale ? 1 : 0;
  if (nncc_status s = m->def->update_cuda(m, &u, err))
    return nncc_error_prefix(err, "%s: the optimizer update: ", what), s;
  if (nncc_status s = nncc_stream_synchronize(m->stream, err))
    return nncc_error_prefix(err, "%s: the optimizer update: ", what), s;
  m->masterStale = false;
  return NNCC_OK;
}

/// Every field of `c` that a step reads (the optimizer's own, and the
/// schedule's), against the ranges the compiler's #nn.train verifies, with
/// non-finite values refused: a bad value would otherwise turn every
/// weight into NaN. epochs, batch and seed are the trainer's.
nncc_status checkTrainConfig(const nncc_train_config *c, const char *what, nncc_error *err) {
  const bool sgd = c->optimizer == NNCC_OPTIM_SGD;
  if (c->optimizer < NNCC_OPTIM_SGD || c->optimizer > NNCC_OPTIM_ADAMW)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "%s: the configuration's optimizer = %d is not one of 0 (sgd), 1 "
                          "(adam), 2 (adamw)",
                          what, c->optimizer);
  if (!(std::isfinite(c->lr) && c->lr > 0.0))
    return badField(err, what, "lr", c->lr, "finite and > 0");
  if (!(std::isfinite(c->weight_decay) && c->weight_decay >= 0.0))
    return badField(err, what, "weight_decay", c->weight_decay, "finite and >= 0");
  if (sgd) {
    if (!(std::isfinite(c->momentum) && c->momentum >= 0.0))
      return badField(err, what, "momentum", c->momentum, "finite and >= 0");
    if (c->nesterov != 0 && c->nesterov != 1)
      return badField(err, what, "nesterov", c->nesterov, "0 or 1");
  } else {
    if (!(c->beta1 >= 0.0 && c->beta1 < 1.0))
      return badField(err, what, "beta1", c->beta1, "[0, 1)");
    if (!(c->beta2 >= 0.0 && c->beta2 < 1.0))
      return badField(err, what, "beta2", c->beta2, "[0, 1)");
    if (!(std::isfinite(c->eps) && c->eps > 0.0))
      return badField(err, what, "eps", c->eps, "finite and > 0");
  }
  if (std::isnan(c->clip))
    return badField(err, what, "clip", c->clip, "a number (<= 0 or infinite: no clipping)");
  if (nncc_status s = checkLayerDecay(c, what, err))
    return s;
  switch (c->schedule) {
  case NNCC_SCHEDULE_CONSTANT:
  case NNCC_SCHEDULE_COSINE:
    break;
  case NNCC_SCHEDULE_WARMUP_COSINE:
    if (!(c->cycles >= 0.0 && c->cycles <= 1.0))
      return badField(err, what, "cycles", c->cycles, "[0, 1] (the final lr fraction)");
    [[fallthrough]];
  case NNCC_SCHEDULE_LINEAR:
    if (c->warmup < 0 && !(c->warmup_fraction >= 0.0 && c->warmup_fraction < 1.0))
      return badField(err, what, "warmup_fraction", c->warmup_fraction,
                      "[0, 1) (used since warmup < 0)");
    break;
  case NNCC_SCHEDULE_STEP:
    if (c->step_size < 1)
      return badField(err, what, "step_size", double(c->step_size), ">= 1");
    if (!(std::isfinite(c->gamma) && c->gamma > 0.0))
      return badField(err, what, "gamma", c->gamma, "finite and > 0");
    break;
  default:
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "%s: the configuration's schedule = %d is not one of 0 (constant), "
                          "1 (warmup_cosine), 2 (cosine), 3 (linear), 4 (step)",
                          what, c->schedule);
  }
  return NNCC_OK;
}

/// The configuration of a step (`config`, or the model's own when NULL),
/// checked, for `what` (train_step or apply_gradients).
nncc_status stepConfig(nncc_model *m, const void *config, const char *what,
                       const nncc_train_config *&c, nncc_error *err) {
  c = config ? static_cast<const nncc_train_config *>(config) : m->abi->train_config;
  if (!c)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "%s: no configuration", what);
  if (nncc_status s = checkTrainConfig(c, what, err))
    return s;
  if (m->target == NNCC_TARGET_CUDA && m->def->forward_train_cuda &&
      (!m->def->grad_sum_squares_cuda || !m->def->update_cuda))
    return nncc_error_set(err, NNCC_ERROR_UNSUPPORTED, "%s: '%s' has no CUDA optimizer update",
                          what, m->abi->model_name);
  if (m->abi->num_params > 0 && m->numFrozen == m->abi->num_params)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "%s: every parameter of '%s' is frozen (set_frozen): nothing to "
                          "train",
                          what, m->abi->model_name);
  return NNCC_OK;
}

/// One optimizer step on the gradients grad.<param> hold: the global norm,
/// clipping, the update of every parameter, the schedule and step counter
/// (train_step after its forward_backward, apply_gradients on the mean).
nncc_status optimizerStep(nncc_model *m, const nncc_train_config *c, const char *what,
                          nncc_error *err) {
  const nncc_model_abi *abi = m->abi;
  const double profT0 = nncc_ms_prof_begin();
  const bool f64 = strcmp(abi->precision, "f64") == 0;
  const int32_t n = abi->num_params;
  const bool cuda = m->target == NNCC_TARGET_CUDA;
  m->sampleOffset = 0; // the next step's batch starts at row 0
  // Global norm (double accumulation), clipping factor as torch's
  // clip_grad_norm_: max_norm / (norm + 1e-6) when below 1.
  double sq = 0.0;
  if (cuda) {
    if (nncc_status s = m->def->grad_sum_squares_cuda(m, &sq, err))
      return nncc_error_prefix(err, "%s: the gradient norm: ", what), s;
  } else {
    for (int32_t i = 0; i < n; ++i) {
      if (m->frozen[i]) // not trained: left out of the norm (torch's clip_grad_norm_ of the
        continue;       // parameters that require gradients)
      int64_t numel = int64_t(m->params[i].bytes / (f64 ? 8 : 4));
      sq += f64 ? nncc_sum_squares_f64(numel, static_cast<const double *>(m->grads[i].data()))
                : nncc_sum_squares_f32(numel, static_cast<const float *>(m->grads[i].data()));
    }
  }
  double norm = std::sqrt(sq);
  double scale = 1.0;
  if (c->clip > 0.0) {
    double coef = c->clip / (norm + 1e-6);
    if (coef < 1.0)
      scale = coef;
  }
  if (!std::isfinite(norm))
    return nncc_error_set(err, NNCC_ERROR_INTERNAL,
                          "%s: the gradient norm is not finite (%g); parameters left "
                          "unchanged",
                          what, norm);
  bool adam = c->optimizer != NNCC_OPTIM_SGD;
  bool needM = adam || c->momentum != 0.0;
  if ((cuda ? m->cudaOptM.size() : m->optM.size()) != size_t(n)) {
    m->optM = std::vector<HostBuffer>(cuda ? 0 : size_t(n));
    m->optV = std::vector<HostBuffer>(cuda ? 0 : size_t(n));
    m->cudaOptM = std::vector<Tensor>(cuda ? size_t(n) : 0);
    m->cudaOptV = std::vector<Tensor>(cuda ? size_t(n) : 0);
    m->cudaOptW.clear();
    m->optStep = 0;
  }
  m->stateOptimizer = c->optimizer;
  bool first = m->optStep == 0;
  int64_t step = ++m->optStep;
  double lr = nncc_ms_schedule_lr(c, step - 1);
  std::vector<double> lrs(static_cast<size_t>(n)), wds(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    wds[i] = paramDecays(abi, i) ? c->weight_decay : 0.0;
    lrs[i] = lr * paramLrScale(abi, i, c->layer_decay);
  }
  if (cuda) {
    if (nncc_status s = cudaUpdate(m, c, what, adam, needM, first, step, scale, lrs, wds, err))
      return s;
    m->paramsDirty = false;     // the device copy is the newer one now
    m->paramsHostStale = true;
  }
  for (int32_t i = 0; i < n && !cuda; ++i) {
    uint64_t bytes = m->params[i].bytes;
    if (needM && !m->optM[i].reserve(bytes))
      return nncc_error_set(err, NNCC_ERROR_OUT_OF_MEMORY,
                            "%s: cannot allocate the optimizer state", what);
    if (adam && !m->optV[i].reserve(bytes))
      return nncc_error_set(err, NNCC_ERROR_OUT_OF_MEMORY,
                            "%s: cannot allocate the optimizer state", what);
    if (m->frozen[i]) // no update, no decay, the state (zero-filled) left as it is
      continue;
    double wd = wds[i], lri = lrs[i];
    int64_t numel = int64_t(bytes / (f64 ? 8 : 4));
    void *p = m->params[i].data(), *g = m->grads[i].data();
    void *bm = needM ? m->optM[i].data : nullptr, *bv = adam ? m->optV[i].data : nullptr;
    int rc;
    if (adam) {
      int dec = c->optimizer == NNCC_OPTIM_ADAMW;
      rc = f64 ? nncc_adam_step_f64(numel, (double *)p, (const double *)g, (double *)bm,
                                    (double *)bv, scale, lri, c->beta1, c->beta2, c->eps, wd,
                                    dec, step)
               : nncc_adam_step_f32(numel, (float *)p, (const float *)g, (float *)bm,
                                    (float *)bv, scale, lri, c->beta1, c->beta2, c->eps, wd,
                                    dec, step);
    } else {
      rc = f64 ? nncc_sgd_step_f64(numel, (double *)p, (const double *)g, (double *)bm, scale,
                                   lri, c->momentum, wd, c->nesterov, first)
               : nncc_sgd_step_f32(numel, (float *)p, (const float *)g, (float *)bm, scale,
                                   lri, c->momentum, wd, c->nesterov, first);
    }
    if (nncc_status s = nncc_ms_kernel_status(rc, abi->params[i].name, err))
      return s;
  }
  if (!cuda)
    m->paramsDirty = true;
  m->trainReady = false; // the weights changed; grads stay readable
  m->stats.step = step;
  m->stats.lr = lr;
  m->stats.grad_norm = norm;
  m->stats.clip_scale = scale;
  nncc_ms_prof_end(profT0, "train_step: gradient norm + optimizer update (all parameters)");
  nncc_error_clear(err);
  return NNCC_OK;
}
} // namespace

extern "C" nncc_status nncc_ms_train_step(nncc_model *m, const void *config,
                                          nncc_error *err) {
  if (nncc_status s = checkModel(m, "train_step", err))
    return s;
  const nncc_train_config *c = nullptr;
  if (nncc_status s = stepConfig(m, config, "train_step", c, err))
    return s;
  if (m->accCount > 0)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "train_step: %d accumulated micro-batch(es) are waiting for "
                          "apply_gradients",
                          m->accCount);
  if (nncc_status s = nncc_ms_forward_backward(m, err))
    return s;
  return optimizerStep(m, c, "train_step", err);
}

extern "C" nncc_status nncc_ms_accumulate_gradients(nncc_model *m, double weight,
                                                    nncc_error *err) {
  if (nncc_status s = checkModel(m, "accumulate_gradients", err))
    return s;
  const nncc_model_abi *abi = m->abi;
  const int32_t n = abi->num_params;
  const bool cuda = m->target == NNCC_TARGET_CUDA;
  if (!(weight > 0.0) || !std::isfinite(weight))
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "accumulate_gradients: the weight must be positive and finite, got %g",
                          weight);
  if (cuda && m->def->forward_train_cuda && !m->def->grad_mean_cuda)
    return nncc_error_set(err, NNCC_ERROR_UNSUPPORTED,
                          "accumulate_gradients: '%s' has no CUDA gradient accumulation",
                          abi->model_name);
  nncc_status s = nncc_ms_forward_backward(m, err);
  if (s)
    return nncc_error_prefix(err, "accumulate_gradients: "), s;
  // The next micro-batch's samples follow this one's in the batch.
  m->sampleOffset += batchRows(m);
  const bool first = m->accCount == 0;
  if (first)
    m->accWeight = 0.0;
  const double alpha = weight / (m->accWeight + weight);
  const bool f64 = strcmp(abi->precision, "f64") == 0;
  if (cuda) {
    const uint64_t accElem = f64 ? 8 : 4; // acc_t: fp32 for f32 and bf16
    if (m->cudaAccMean.size() != size_t(n))
      m->cudaAccMean = std::vector<Tensor>(size_t(n));
    std::vector<void *> means(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
      Tensor &t = m->cudaAccMean[i];
      t.bytes = paramNumel(m, i) * accElem;
      if (nncc_status s = ensureDevice(m, t, t.bytes, abi->params[i].name, err))
        return nncc_error_prefix(err, "accumulate_gradients: "), s;
      means[i] = reinterpret_cast<void *>(t.device);
    }
    if (nncc_status s = m->def->grad_mean_cuda(m, means.data(), first ? 0 : 1, alpha, err))
      return nncc_error_prefix(err, "accumulate_gradients: "), s;
    if (nncc_status s = nncc_stream_synchronize(m->stream, err))
      return nncc_error_prefix(err, "accumulate_gradients: "), s;
  } else {
    if (m->accMean.size() != size_t(n))
      m->accMean = std::vector<HostBuffer>(size_t(n));
    for (int32_t i = 0; i < n; ++i) {
      const uint64_t bytes = m->params[i].bytes;
      if (!m->accMean[i].reserve(bytes))
        return nncc_error_set(err, NNCC_ERROR_OUT_OF_MEMORY,
                              "accumulate_gradients: cannot allocate the gradient means");
      const int64_t numel = int64_t(paramNumel(m, i));
      const int rc =
          f64 ? nncc_grad_mean_f64(numel, static_cast<double *>(m->accMean[i].data),
                                   static_cast<const double *>(m->grads[i].data()), alpha,
                                   first)
              : nncc_grad_mean_f32(numel, static_cast<float *>(m->accMean[i].data),
                                   static_cast<const float *>(m->grads[i].data()), alpha,
                                   first);
      if (nncc_status s = nncc_ms_kernel_status(rc, abi->params[i].name, err))
        return nncc_error_prefix(err, "accumulate_gradients: "), s;
    }
  }
  ++m->accCount;
  m->accWeight += weight;
  nncc_error_clear(err);
  return NNCC_OK;
}

extern "C" nncc_status nncc_ms_apply_gradients(nncc_model *m, const void *config,
                                               nncc_error *err) {
  if (nncc_status s = checkModel(m, "apply_gradients", err))
    return s;
  const nncc_train_config *c = nullptr;
  if (nncc_status s = stepConfig(m, config, "apply_gradients", c, err))
    return s;
  if (m->accCount == 0)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "apply_gradients: no gradients accumulated since the last step "
                          "(accumulate_gradients first)");
  const int32_t n = m->abi->num_params;
  if (m->target == NNCC_TARGET_CUDA) {
    std::vector<void *> means(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i)
      means[i] = reinterpret_cast<void *>(m->cudaAccMean[i].device);
    if (nncc_status s = m->def->grad_mean_cuda(m, means.data(), 2, 1.0, err))
      return nncc_error_prefix(err, "apply_gradients: "), s;
    for (Tensor &t : m->grads)
      t.hostStale = true;
  } else {
    for (int32_t i = 0; i < n; ++i)
      std::memcpy(m->grads[i].data(), m->accMean[i].data, m->params[i].bytes);
  }
  m->accCount = 0;
  m->accWeight = 0.0;
  m->gradsValid = true;
  return optimizerStep(m, c, "apply_gradients", err);
}
