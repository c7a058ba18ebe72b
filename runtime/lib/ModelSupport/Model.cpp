//===- Model.cpp - create, destroy, forward and backward ------------------===//
//
// Implements nncc_model.h from the tables of an nncc_ms_model_def (see
// ModelSupport.h; ModelState.h lists the files of the other concepts). No
// LLVM, no exceptions; every failure is a status with a message naming the
// tensor, nothing aborts or prints.
//
//===----------------------------------------------------------------------===//
#include "ModelState.h"

#include <cinttypes>
#include <new>

using namespace nncc::ms;

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

nncc_target nncc_ms_target(const nncc_model *m) { return m->target; }
int nncc_ms_computes_loss(const nncc_model *m) { return m->withLoss ? 1 : 0; }
const int64_t *nncc_ms_dims(const nncc_model *m) { return m->dims.data(); }
int64_t nncc_ms_bound_dim(const nncc_model *m, int32_t i) {
  return m && i >= 0 && i < static_cast<int32_t>(m->bound.size()) ? m->bound[i] : -1;
}
