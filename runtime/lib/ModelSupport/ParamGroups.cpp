//===- ParamGroups.cpp - parameter groups, schedules, frozen parameters ---===//
//
// The compiler's parameter groups (#nn.param_group: weight decay, layer-wise
// lr decay), the learning-rate schedules, the step counter and frozen
// parameters.
//
//===----------------------------------------------------------------------===//
#include "ModelState.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>

using namespace nncc::ms;

namespace nncc {
namespace ms {
// The parameter groups are the compiler's (#nn.param_group, emitted as
// kParamGroups): weight decay or not, and the exponent of layer_decay.
bool paramDecays(const nncc_model_abi *abi, int32_t i) {
  return !abi->param_groups || abi->param_groups[i].decay != 0;
}

double paramLrScale(const nncc_model_abi *abi, int32_t i, double layerDecay) {
  int32_t depth = abi->param_groups ? abi->param_groups[i].lr_depth : 0;
  return depth == 0 ? 1.0 : std::pow(layerDecay, double(depth));
}

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

nncc_status checkLayerDecay(const nncc_train_config *c, const char *what, nncc_error *err) {
  if (!(c->layer_decay > 0.0 && c->layer_decay <= 1.0))
    return badField(err, what, "layer_decay", c->layer_decay, "(0, 1] (1: none)");
  return NNCC_OK;
}
} // namespace ms
} // namespace nncc

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

const int32_t *nncc_ms_frozen(const nncc_model *m) {
  return m && m->numFrozen > 0 ? m->frozen.data() : nullptr;
}
