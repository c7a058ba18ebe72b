//===- ModelState.h - the model context of libnncc_model_support ----------===//
//
// What every file of libnncc_model_support shares: struct nncc_model (the
// opaque context of nncc_model.h), its tensors, and the helpers more than
// one concept uses. Internal: generated code sees only ModelSupport.h.
//
// The files, one runtime concept each: Model.cpp (create, destroy, forward,
// backward), Tensors.cpp (inputs, bindings, outputs), Weights.cpp (load,
// init, save), ArenaPlanning.cpp (the buffer plan and the arena),
// CudaDevice.cpp (device copies and streams), RandomStreams.cpp (seeds and
// draw offsets), ParamGroups.cpp (parameter groups, schedules, frozen
// parameters), TrainState.cpp (save/load of the training state),
// TrainStep.cpp (the optimizer step and gradient accumulation),
// Profiling.cpp (NNCC_PROFILE), LaunchHelpers.cpp (what launches call:
// kernel statuses, strided copies, reductions) and TensorTables.cpp (lookups
// and messages over the ABI's tensor tables).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_MODELSUPPORT_MODELSTATE_H
#define NNCC_MODELSUPPORT_MODELSTATE_H

#include "nncc/ModelSupport/ModelSupport.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace nncc {
namespace ms {

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

} // namespace ms
} // namespace nncc

struct nncc_model {
  const nncc_ms_model_def *def = nullptr;
  const nncc_model_abi *abi = nullptr;
  nncc_target target = NNCC_TARGET_CPU;

  std::vector<nncc::ms::Tensor> inputs, params, outputs;
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
  std::vector<nncc::ms::Tensor> grads;   // "grad.<param>" (training)
  // VJP libraries: the backward's seeds and the gradients of float inputs.
  std::vector<nncc::ms::Tensor> cotangents, inputGrads;
  bool trainReady = false;     // residuals of a forward_train in the arena
  bool gradsValid = false;
  // Optimizer state (train_step): moments / momentum buffers per parameter.
  std::vector<nncc::ms::HostBuffer> optM, optV;
  std::vector<nncc::ms::Tensor> cudaOptM, cudaOptV; // the same, on the device (CUDA)
  // bf16 on CUDA: fp32 master copies of the parameters, which the update
  // changes (the bf16 parameters are their rounding); stale after the host
  // wrote the parameters, when the next update sets them from the device copy.
  std::vector<nncc::ms::Tensor> cudaOptW;
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
  std::vector<nncc::ms::HostBuffer> accMean;
  std::vector<nncc::ms::Tensor> cudaAccMean;
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

namespace nncc {
namespace ms {

/// err may be null; internally we always want a place for the message.
struct ErrorSlot {
  nncc_error local;
  nncc_error *e;
  explicit ErrorSlot(nncc_error *err) : e(err ? err : &local) {}
};

//===--- TensorTables.cpp ---------------------------------------------------===//

std::string shapeString(const int64_t *shape, int64_t rank);
/// A caller's shape of `rank` dims when `expected` are due: at most
/// `expected` dims are read (the caller's array may hold no more than the
/// tensor does when `rank` is wrong), the rest is counted.
std::string callerShape(const int64_t *shape, int32_t rank, int32_t expected);
/// A name or path from the caller or a file, quoted for a message
/// (nncc_quote: control characters and invalid UTF-8 escaped, long ones cut).
std::string q(const char *text);
std::string q(const std::string &text);
/// A table entry's dims, symbolic ones by name: "[B, 128]".
std::string dimsString(const nncc_model_abi *abi, const nncc_tensor_info &t);
/// "'a', 'b'" (or "(none)").
std::string nameList(const nncc_tensor_info *infos, int32_t n);
int32_t findByName(const nncc_tensor_info *infos, int32_t n, const char *name);
/// prod(shape) * elemSize, or false on overflow.
bool byteSize(const int64_t *shape, int64_t rank, uint64_t elemSize, uint64_t &out);
/// The concrete shape of a table entry under `dims`; false if a dim is
/// unbound or not representable.
bool concreteShape(const nncc_model_abi *abi, const int64_t *dimsEnc, int32_t rank,
                   const std::vector<int64_t> &dims, std::vector<int64_t> &out);
/// The NULL-model error of entry point `what`.
nncc_status checkModel(nncc_model *model, const char *what, nncc_error *err);

//===--- CudaDevice.cpp (device memory through libnncc_runtime's driver) ----===//

/// Device memory of at least `bytes` for `t` (kept when large enough).
nncc_status ensureDevice(nncc_model *m, Tensor &t, uint64_t bytes, const char *what,
                         nncc_error *err);
/// CUDA bind: `data` (a device pointer, or NULL to unbind) becomes the
/// tensor's device copy in place of the context's own.
void bindDevice(nncc_model *m, Tensor &t, void *data);
/// CUDA: copies the parameters back to the host after train_step updated
/// them on the device (before anything reads or partly rewrites them there).
nncc_status syncParamsToHost(nncc_model *m, nncc_error *err);
/// CUDA: parameters bound to the caller's device memory receive the values
/// load_weights / init_weights just wrote to their host staging copy.
nncc_status pushBoundParams(nncc_model *m, nncc_error *err);
/// CUDA: the host copy of a device result (a gradient), when it is stale.
nncc_status syncToHost(nncc_model *m, Tensor &t, const char *name, nncc_error *err);
/// CUDA, before a launch sequence: the parameters (when the host copy
/// changed) and the inputs to the device, room for the outputs.
nncc_status prepareDevice(nncc_model *m, nncc_error *e);
/// CUDA: device memory for the tensors of a table (gradients, cotangents),
/// and with `upload` their host values copied there.
nncc_status deviceTensors(nncc_model *m, std::vector<Tensor> &ts, const nncc_tensor_info *infos,
                          bool upload, nncc_error *e);
/// CUDA, after a launch sequence: waits for it, then copies the outputs to
/// the host.
nncc_status finishDevice(nncc_model *m, nncc_error *e);
/// The CUDA context, stream and device memory of a model created for CUDA.
nncc_status setupCuda(nncc_model *m, nncc_error *err);
void releaseCuda(nncc_model *m);

//===--- ArenaPlanning.cpp --------------------------------------------------===//

/// The buffers' sizes and offsets for the current dims, and an arena that
/// holds them (kept while the dims do not change).
nncc_status plan(nncc_model *m, nncc_error *err);
/// Claims the arena regions of the buffers whose live range meets launches
/// [lo, hi) (checked against the capacity; raises the high-water mark).
nncc_status claimRegions(nncc_model *m, int32_t lo, int32_t hi, nncc_error *err);

//===--- ParamGroups.cpp ----------------------------------------------------===//

/// Whether parameter i takes weight decay (#nn.param_group).
bool paramDecays(const nncc_model_abi *abi, int32_t i);
/// Parameter i's learning-rate factor: layerDecay^depth.
double paramLrScale(const nncc_model_abi *abi, int32_t i, double layerDecay);
/// `field` = `v` of a configuration is outside `range` (a message; `v` in
/// the fewest digits that give it back).
nncc_status badField(nncc_error *err, const char *what, const char *field, double v,
                     const char *range);
/// layer_decay, which param_group reads too.
nncc_status checkLayerDecay(const nncc_train_config *c, const char *what, nncc_error *err);

//===--- small shared queries -----------------------------------------------===//

/// The current inputs' samples: the leading dim of the first set input of
/// rank >= 1 (nncc train's data: leading dim = samples); 0 when none.
inline int64_t batchRows(const nncc_model *m) {
  for (const Tensor &t : m->inputs)
    if (t.set && !t.shape.empty())
      return t.shape[0];
  return 0;
}

/// Elements of parameter i.
inline uint64_t paramNumel(const nncc_model *m, int32_t i) {
  return m->params[i].bytes / std::max<size_t>(nncc_dtype_size(m->abi->params[i].dtype), 1);
}

} // namespace ms
} // namespace nncc

#endif // NNCC_MODELSUPPORT_MODELSTATE_H
