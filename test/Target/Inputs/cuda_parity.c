/* cuda_parity LIB [B T [train [cpu|cpu-perturbed]]]: runs the model of LIB (built with --target
 * all) on the CPU and on CUDA with the same weights (init_weights(seed 7))
 * and the same inputs, and compares every float output: max |cuda - cpu| /
 * max(|cpu|, 1e-3) must be <= 1e-4 (fp32). With `train` (a library built
 * with --grad) also the training step: forward_train + backward (every
 * output and every grad.<param>), then one train_step of the model's own
 * configuration on each side and a forward with the updated weights, then
 * one step on two accumulated micro-batches (accumulate_gradients,
 * apply_gradients) and a forward after it.
 * Prints one line per compared tensor and "PARITY OK" or "PARITY FAIL";
 * exit status 0 only when everything matched. A fifth argument `cpu` runs
 * the second context on the CPU too, `cpu-perturbed` with other weights
 * (init seed 8): the harness's own checks, on machines without a GPU.
 *
 * Inputs are synthetic but valid: floats uniform in [-1, 1) (an input named
 * "times" is increasing per row), integer inputs are small non-negative ids
 * (< 2, valid for any embedding / class count >= 2) except "lengths"-like
 * names (name contains "len"), which get T, T-1, T-2, ... (>= 1); bool
 * inputs (padding masks) pad the last position of odd rows.
 *
 * Written for the `cuda` lit feature. First run on an H100 on 2026-11-26
 * (forward and training step of every seed model: PARITY OK, worst relative
 * error 1.19e-6; docs/cuda.md, "First run on an H100 (2026-11-26)"). */
#include "nncc/Runtime/nncc_model.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef const nncc_model_abi *(*get_abi_fn)(void);

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double next_uniform(void) { /* xorshift64*, [0, 1) */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (double)((rng_state * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

static int fail(const char *what, const nncc_error *e) {
  fprintf(stderr, "%s failed: %s: %s\n", what, nncc_status_name(e->status), e->message);
  printf("PARITY FAIL\n");
  return 1;
}

/* Compares one named float tensor of both contexts (get_output). */
static int compareOne(const nncc_model_abi *abi, nncc_model *m[2], const char *phase,
                      const char *name) {
  nncc_error e;
  nncc_dtype dt[2];
  int32_t rank[2];
  const int64_t *shape[2];
  const void *data[2];
  for (int k = 0; k < 2; ++k)
    if (abi->get_output(m[k], name, &dt[k], &rank[k], &shape[k], &data[k], &e)) {
      fprintf(stderr, "get_output %s (%s): %s\n", name, k ? "cuda" : "cpu", e.message);
      return 0;
    }
  int64_t n = 1;
  for (int32_t d = 0; d < rank[0]; ++d)
    n *= shape[0][d];
  double maxAbs = 0, maxDiff = 0;
  for (int64_t j = 0; j < n; ++j) {
    double a, b;
    if (dt[0] == NNCC_DTYPE_F64) {
      a = ((const double *)data[0])[j];
      b = ((const double *)data[1])[j];
    } else if (dt[0] == NNCC_DTYPE_F32) {
      a = ((const float *)data[0])[j];
      b = ((const float *)data[1])[j];
    } else {
      return 1;
    }
    if (fabs(a) > maxAbs)
      maxAbs = fabs(a);
    double diff = fabs(a - b);
    if (!(diff <= maxDiff)) /* NaN counts as a mismatch */
      maxDiff = isnan(diff) ? INFINITY : diff;
  }
  double rel = maxDiff / (maxAbs > 1e-3 ? maxAbs : 1e-3);
  int good = rel <= 1e-4;
  printf("%s %s: %lld values, max |cpu| %.6g, max |cuda - cpu| %.3g, relative %.3g %s\n",
         phase, name, (long long)n, maxAbs, maxDiff, rel, good ? "ok" : "MISMATCH");
  return good;
}

/* Every output, and with `grads` every grad.<param>. */
static int compareAll(const nncc_model_abi *abi, nncc_model *m[2], const char *phase,
                      int grads) {
  int ok = 1;
  for (int32_t i = 0; i < abi->num_outputs; ++i)
    ok &= compareOne(abi, m, phase, abi->outputs[i].name);
  for (int32_t i = 0; grads && i < abi->num_grads; ++i)
    ok &= compareOne(abi, m, phase, abi->grads[i].name);
  return ok;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIB [B T [train [cpu|cpu-perturbed]]]\n", argv[0]);
    return 2;
  }
  const int64_t dimB = argc > 2 ? atoll(argv[2]) : 3, dimT = argc > 3 ? atoll(argv[3]) : 16;
  const int train = argc > 4 && strcmp(argv[4], "train") == 0;
  const int perturbed = argc > 5 && strcmp(argv[5], "cpu-perturbed") == 0;
  const nncc_target second =
      argc > 5 && (perturbed || strcmp(argv[5], "cpu") == 0) ? NNCC_TARGET_CPU
                                                              : NNCC_TARGET_CUDA;
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  get_abi_fn get_abi = (get_abi_fn)dlsym(lib, "nncc_model_get_abi");
  if (!get_abi) {
    fprintf(stderr, "dlsym: %s\n", dlerror());
    return 1;
  }
  const nncc_model_abi *abi = get_abi();
  nncc_error e;
  nncc_model *m[2] = {NULL, NULL};
  for (int k = 0; k < 2; ++k) {
    if (abi->create(k ? second : NNCC_TARGET_CPU, &m[k], &e))
      return fail(k ? "create (cuda)" : "create (cpu)", &e);
    if (abi->init_weights(m[k], k && perturbed ? 8 : 7, &e))
      return fail("init_weights", &e);
  }
  for (int32_t i = 0; i < abi->num_inputs; ++i) {
    const nncc_tensor_info *in = &abi->inputs[i];
    int64_t shape[16], n = 1;
    for (int32_t d = 0; d < in->rank; ++d) {
      int64_t v = in->dims[d];
      if (v < 0) {
        const char *sym = abi->dim_names[-v - 1];
        v = strcmp(sym, "B") == 0 ? dimB : dimT;
      }
      shape[d] = v;
      n *= v;
    }
    const int64_t rowLen = in->rank >= 2 ? n / shape[0] : 1;
    size_t esz = nncc_dtype_size(in->dtype);
    unsigned char *buf = (unsigned char *)calloc((size_t)(n ? n : 1), esz);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t row = j / (rowLen ? rowLen : 1), col = j % (rowLen ? rowLen : 1);
      double f = 2.0 * next_uniform() - 1.0;
      if (strcmp(in->name, "times") == 0)
        f = 0.5 * (double)col + 0.25 * next_uniform();
      int64_t id = (int64_t)(next_uniform() * 2.0);
      if (strstr(in->name, "len")) {
        id = dimT - j % 3; /* [B]: T, T-1, T-2, T, ... */
        if (id < 1)
          id = 1;
      }
      switch (in->dtype) {
      case NNCC_DTYPE_F32:
        ((float *)buf)[j] = (float)f;
        break;
      case NNCC_DTYPE_F64:
        ((double *)buf)[j] = f;
        break;
      case NNCC_DTYPE_I32:
        ((int32_t *)buf)[j] = (int32_t)id;
        break;
      case NNCC_DTYPE_I64:
        ((int64_t *)buf)[j] = id;
        break;
      case NNCC_DTYPE_BOOL:
        buf[j] = (uint8_t)((row % 2 == 1) && col == rowLen - 1);
        break;
      default:
        break;
      }
    }
    for (int k = 0; k < 2; ++k)
      if (abi->set_input(m[k], in->name, in->dtype, in->rank, shape, buf, &e))
        return fail("set_input", &e);
    free(buf);
  }
  for (int k = 0; k < 2; ++k)
    if (abi->forward(m[k], &e))
      return fail(k ? "forward (cuda)" : "forward (cpu)", &e);
  int ok = compareAll(abi, m, "forward", 0);
  if (train && ok) {
    for (int k = 0; k < 2; ++k)
      if (abi->forward_backward(m[k], &e))
        return fail(k ? "forward_train + backward (cuda)" : "forward_train + backward (cpu)", &e);
    ok &= compareAll(abi, m, "training", 1);
    nncc_train_stats st[2];
    for (int k = 0; k < 2; ++k)
      if (abi->train_step(m[k], NULL, &e) || abi->train_stats(m[k], &st[k], &e))
        return fail(k ? "train_step (cuda)" : "train_step (cpu)", &e);
    double rel = fabs(st[1].grad_norm - st[0].grad_norm) / (st[0].grad_norm > 1e-3 ? st[0].grad_norm : 1e-3);
    printf("train_step: gradient norm cpu %.6g cuda %.6g, relative %.3g %s\n", st[0].grad_norm,
           st[1].grad_norm, rel, rel <= 1e-4 ? "ok" : "MISMATCH");
    ok &= rel <= 1e-4;
    for (int k = 0; k < 2; ++k)
      if (abi->forward(m[k], &e))
        return fail(k ? "forward after train_step (cuda)" : "forward after train_step (cpu)", &e);
    ok &= compareAll(abi, m, "after train_step", 0);
    /* Gradient accumulation (ABI 8): two micro-batches of the same rows
     * (weights 1 and 2; each draws its own dropout masks) and one step on
     * their weighted mean, on each side. */
    for (int k = 0; k < 2 && ok; ++k)
      if (abi->accumulate_gradients(m[k], 1.0, &e) ||
          abi->accumulate_gradients(m[k], 2.0, &e) || abi->apply_gradients(m[k], NULL, &e) ||
          abi->train_stats(m[k], &st[k], &e))
        return fail(k ? "accumulated step (cuda)" : "accumulated step (cpu)", &e);
    if (ok) {
      rel = fabs(st[1].grad_norm - st[0].grad_norm) /
            (st[0].grad_norm > 1e-3 ? st[0].grad_norm : 1e-3);
      printf("accumulated step: gradient norm cpu %.6g cuda %.6g, relative %.3g %s\n",
             st[0].grad_norm, st[1].grad_norm, rel, rel <= 1e-4 ? "ok" : "MISMATCH");
      ok &= rel <= 1e-4;
      for (int k = 0; k < 2; ++k)
        if (abi->forward(m[k], &e))
          return fail(k ? "forward after the accumulated step (cuda)"
                        : "forward after the accumulated step (cpu)",
                      &e);
      ok &= compareAll(abi, m, "after the accumulated step", 0);
    }
  }
  for (int k = 0; k < 2; ++k)
    abi->destroy(m[k]);
  printf(ok ? "PARITY OK\n" : "PARITY FAIL\n");
  return ok ? 0 : 1;
}
