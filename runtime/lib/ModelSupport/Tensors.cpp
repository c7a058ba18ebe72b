//===- Tensors.cpp - inputs, bindings, cotangents and outputs -------------===//
//
// set_input (every dim checked against the table and the other inputs),
// bind (the caller's memory in place of the context's), set_cotangent,
// get_output, and the pointers generated code reads them through.
//
//===----------------------------------------------------------------------===//
#include "ModelState.h"

#include <cinttypes>
#include <tuple>

using namespace nncc::ms;

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
void *tensorData(nncc_model *m, Tensor &t) {
  return m->target == NNCC_TARGET_CUDA ? reinterpret_cast<void *>(t.device) : t.data();
}
} // namespace

void *nncc_ms_grad(nncc_model *m, int32_t i) { return tensorData(m, m->grads[i]); }
void *nncc_ms_cotangent(nncc_model *m, int32_t i) { return tensorData(m, m->cotangents[i]); }
void *nncc_ms_input_grad(nncc_model *m, int32_t i) { return tensorData(m, m->inputGrads[i]); }
void *nncc_ms_input(nncc_model *m, int32_t i) { return tensorData(m, m->inputs[i]); }
void *nncc_ms_param(nncc_model *m, int32_t i) { return tensorData(m, m->params[i]); }
void *nncc_ms_output(nncc_model *m, int32_t i) { return tensorData(m, m->outputs[i]); }

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
