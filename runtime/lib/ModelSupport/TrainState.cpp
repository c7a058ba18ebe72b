//===- TrainState.cpp - save and load the training state ------------------===//
//
// ABI 7: parameters, optimizer state (torch.optim's state_dict names) and
// the step in one safetensors file.
//
//===----------------------------------------------------------------------===//
#include "ModelState.h"

#include <cinttypes>
#include <deque>

using namespace nncc::ms;

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
