//===- Weights.cpp - load, initialise and save the parameters -------------===//
//
// load_weights (safetensors; f64 and bf16 builds also read f32 files),
// init_weights (the compiler's initialisers, one Philox stream per
// parameter) and save_weights.
//
//===----------------------------------------------------------------------===//
#include "ModelState.h"
#include "nncc/Kernels/Kernels.h"

#include <cinttypes>

using namespace nncc::ms;

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
