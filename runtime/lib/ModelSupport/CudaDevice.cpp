//===- CudaDevice.cpp - device copies, streams and the CUDA context -------===//
//
// The CUDA half of a model context: device memory through libnncc_runtime's
// dlopen'ed driver, the copies before and after a launch sequence, the
// caller's stream. Nothing here runs for NNCC_TARGET_CPU.
//
//===----------------------------------------------------------------------===//
#include "ModelState.h"

using namespace nncc::ms;

namespace nncc {
namespace ms {

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

void bindDevice(nncc_model *m, Tensor &t, void *data) {
  if (t.device && !t.deviceBound)
    nncc_cuda_free(m->cuda, t.device, nullptr);
  t.bound = nullptr;
  t.device = reinterpret_cast<nncc_CUdeviceptr>(data);
  t.deviceCapacity = 0;
  t.deviceBound = data != nullptr;
  t.hostStale = false;
}

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

nncc_status syncToHost(nncc_model *m, Tensor &t, const char *name, nncc_error *err) {
  if (!t.hostStale || t.deviceBound)
    return NNCC_OK;
  if (nncc_status s = nncc_cuda_memcpy_dtoh(m->cuda, t.data(), t.device, t.bytes, nullptr, err))
    return nncc_error_prefix(err, "copying '%s' to the host: ", name), s;
  t.hostStale = false;
  return NNCC_OK;
}

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

} // namespace ms
} // namespace nncc

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

void *nncc_ms_cuda_stream(nncc_model *m) {
  return m->stream ? static_cast<void *>(nncc_stream_cuda_handle(m->stream)) : nullptr;
}
void *nncc_ms_cuda_state(nncc_model *m) { return m->cudaState; }
