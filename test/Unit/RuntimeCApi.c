/* RuntimeCApi.c - the public headers compiled as strict C99 (-Wpedantic -Werror=pedantic),
 * exercising the C API the way generated code and C programs use it. */
#include "nncc/Runtime/Philox.h"
#include "nncc/Runtime/nncc_runtime.h"

#include <stdio.h>
#include <string.h>

int nncc_runtime_c_api_smoke(char *message, size_t capacity);

int nncc_runtime_c_api_smoke(char *message, size_t capacity) {
  nncc_error err;
  nncc_safetensors_writer *w = NULL;
  nncc_safetensors *f = NULL;
  nncc_tensor_view view;
  nncc_arena *arena = NULL;
  void *image = NULL;
  size_t size = 0;
  float weights[6] = {1, 2, 3, 4, 5, 6};
  float loaded[6];
  int64_t shape[2] = {2, 3};
  void *region = NULL;
  float normal[4];
  int i;

  if (nncc_safetensors_writer_create(&w, &err) != NNCC_OK ||
      nncc_safetensors_writer_add(w, "fc.weight", NNCC_DTYPE_F32, 2, shape, weights,
                                  sizeof weights, &err) != NNCC_OK ||
      nncc_safetensors_writer_serialize(w, &image, &size, &err) != NNCC_OK ||
      nncc_safetensors_open_memory(image, size, &f, &err) != NNCC_OK ||
      nncc_safetensors_read_into(f, "fc.weight", NNCC_DTYPE_F32, 2, shape, loaded,
                                 sizeof loaded, &err) != NNCC_OK) {
    snprintf(message, capacity, "%s: %s", nncc_status_name(err.status), err.message);
    return 1;
  }
  if (memcmp(weights, loaded, sizeof weights) != 0) {
    snprintf(message, capacity, "values differ");
    return 1;
  }
  shape[0] = 3;
  if (nncc_safetensors_get(f, "fc.weight", NNCC_DTYPE_F32, 2, shape, &view, &err) !=
      NNCC_ERROR_SHAPE_MISMATCH) {
    snprintf(message, capacity, "expected a shape mismatch");
    return 1;
  }
  nncc_safetensors_close(f);
  nncc_safetensors_writer_destroy(w);
  nncc_free(image);

  if (nncc_arena_create_cpu(64, &arena, &err) != NNCC_OK ||
      nncc_arena_region(arena, 0, 64, "x", &region, &err) != NNCC_OK ||
      nncc_arena_region(arena, 1, 64, "y", &region, &err) != NNCC_ERROR_OUT_OF_MEMORY) {
    snprintf(message, capacity, "arena: %s", err.message);
    return 1;
  }
  nncc_arena_destroy(arena);

  nncc_rng_fill_normal_f32(normal, 4, 1, 2, 3, 0.0f, 1.0f);
  for (i = 0; i < 4; ++i)
    if (normal[i] != nncc_rng_normal(1, 2, 3 + (uint64_t)i)) {
      snprintf(message, capacity, "rng differs at %d", i);
      return 1;
    }
  return 0;
}
