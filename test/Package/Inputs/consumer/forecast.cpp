// Runs gru_forecaster (linked at build time through nncc_add_model) on
// deterministic inputs with weights from a safetensors file and prints the
// prediction and the loss, one number per line.
#include "gru_forecaster.h"

#include <cmath>
#include <cstdio>
#include <vector>

namespace {
bool ok(nncc_status s, const nncc_error &err, const char *what) {
  if (s == NNCC_OK)
    return true;
  std::fprintf(stderr, "%s failed: %s: %s\n", what, nncc_status_name(s), err.message);
  return false;
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s weights.safetensors\n", argv[0]);
    return 2;
  }
  const nncc_model_abi *abi = nncc_gru_forecaster_get_abi();
  if (abi->abi_version != NNCC_MODEL_ABI_VERSION) {
    std::fprintf(stderr, "ABI version %u, header %d\n", abi->abi_version, NNCC_MODEL_ABI_VERSION);
    return 1;
  }
  nncc_error err;
  nncc_model *model = nullptr;
  if (!ok(abi->create(NNCC_TARGET_CPU, &model, &err), err, "create") ||
      !ok(abi->load_weights(model, argv[1], &err), err, "load_weights"))
    return 1;

  // The inputs gru_reference.py rebuilds: B 3 windows of T 5 steps, F 6.
  const int64_t B = 3, T = 5, F = 6;
  std::vector<float> x(B * T * F), next(B);
  for (int64_t i = 0; i < B * T * F; ++i)
    x[i] = std::sin(0.37f * float(i));
  for (int64_t b = 0; b < B; ++b)
    next[b] = 0.1f * float(b) - 0.05f;
  std::vector<int32_t> lengths = {5, 3, 1};

  int64_t xShape[] = {B, T, F}, lShape[] = {B}, nShape[] = {B, 1};
  bool good = ok(abi->set_input(model, "x", NNCC_DTYPE_F32, 3, xShape, x.data(), &err), err, "x") &&
              ok(abi->set_input(model, "lengths", NNCC_DTYPE_I32, 1, lShape, lengths.data(), &err), err,
                 "lengths") &&
              ok(abi->set_input(model, "next_return", NNCC_DTYPE_F32, 2, nShape, next.data(), &err), err,
                 "next_return") &&
              ok(abi->forward(model, &err), err, "forward");
  for (const char *name : {"pred", "loss"}) {
    nncc_dtype dtype;
    int32_t rank;
    const int64_t *shape;
    const void *data;
    good = good && ok(abi->get_output(model, name, &dtype, &rank, &shape, &data, &err), err, name);
    if (!good)
      break;
    int64_t n = 1;
    for (int32_t i = 0; i < rank; ++i)
      n *= shape[i];
    for (int64_t i = 0; i < n; ++i)
      std::printf("%s %.9g\n", name, double(static_cast<const float *>(data)[i]));
  }
  abi->destroy(model);
  return good ? 0 : 1;
}
