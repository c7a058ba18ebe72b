//===- TrainStep.cpp - the optimizer step and gradient accumulation -------===//
//
// train_step (forward, backward, gradient clipping, the update on the CPU or
// the device), accumulate_gradients / apply_gradients (a weighted running
// mean of micro-batch gradients).
//
//===----------------------------------------------------------------------===//
#include "ModelState.h"
#include "nncc/Kernels/Kernels.h"

#include <cinttypes>
#include <cmath>
#include <tuple>

using namespace nncc::ms;

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
