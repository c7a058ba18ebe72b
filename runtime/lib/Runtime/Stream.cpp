//===- Stream.cpp - in-order work queues: CPU (synchronous) and CUDA ------===//

#include "RuntimeInternal.h"

using namespace nncc::rt;

extern "C" {

nncc_status nncc_stream_create_cpu(nncc_stream **out, nncc_error *err) {
  if (!out)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_stream_create_cpu: out is NULL");
  *out = new nncc_stream();
  return ok(err);
}

nncc_status nncc_stream_create_cuda(nncc_cuda_context *ctx, nncc_stream **out,
                                    nncc_error *err) {
  if (!out)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_stream_create_cuda: out is NULL");
  *out = nullptr;
  if (!ctx)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_stream_create_cuda: ctx is NULL");
  if (nncc_status s = nncc_cuda_context_make_current(ctx, err))
    return s;
  nncc_CUstream handle = nullptr;
  if (nncc_status s = nncc_cuda_check(ctx->driver->cuStreamCreate(&handle, 0),
                                      "cuStreamCreate", err))
    return s;
  auto *stream = new nncc_stream();
  stream->kind = NNCC_DEVICE_CUDA;
  stream->ctx = ctx;
  stream->handle = handle;
  *out = stream;
  return ok(err);
}

nncc_status nncc_stream_wrap_cuda(nncc_cuda_context *ctx, nncc_CUstream handle,
                                  nncc_stream **out, nncc_error *err) {
  if (!out)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_stream_wrap_cuda: out is NULL");
  *out = nullptr;
  if (!ctx)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_stream_wrap_cuda: ctx is NULL");
  auto *stream = new nncc_stream();
  stream->kind = NNCC_DEVICE_CUDA;
  stream->ctx = ctx;
  stream->handle = handle;
  stream->owned = false;
  *out = stream;
  return ok(err);
}

void nncc_stream_destroy(nncc_stream *stream) {
  if (!stream)
    return;
  if (stream->kind == NNCC_DEVICE_CUDA && stream->owned &&
      nncc_cuda_context_make_current(stream->ctx, nullptr) == NNCC_OK)
    stream->ctx->driver->cuStreamDestroy(stream->handle);
  delete stream;
}

nncc_device_kind nncc_stream_device(const nncc_stream *stream) {
  return stream ? stream->kind : NNCC_DEVICE_CPU;
}

nncc_CUstream nncc_stream_cuda_handle(const nncc_stream *stream) {
  return stream ? stream->handle : nullptr;
}

nncc_status nncc_stream_synchronize(nncc_stream *stream, nncc_error *err) {
  if (!stream)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_stream_synchronize: stream is NULL");
  if (stream->kind == NNCC_DEVICE_CPU) {
    if (stream->sticky.status != NNCC_OK) {
      if (err)
        *err = stream->sticky;
      return stream->sticky.status;
    }
    return ok(err);
  }
  if (nncc_status s = nncc_cuda_context_make_current(stream->ctx, err))
    return s;
  return nncc_cuda_check(stream->ctx->driver->cuStreamSynchronize(stream->handle),
                         "cuStreamSynchronize", err);
}

nncc_status nncc_stream_enqueue_host(nncc_stream *stream, nncc_host_fn fn, void *user_data,
                                     nncc_error *err) {
  if (!stream || !fn)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_stream_enqueue_host: %s is NULL",
                stream ? "fn" : "stream");
  if (stream->kind == NNCC_DEVICE_CUDA) {
    if (nncc_status s = nncc_stream_synchronize(stream, err))
      return s;
    nncc_error local{};
    nncc_status s = fn(user_data, &local);
    if (s != NNCC_OK) {
      local.status = s;
      if (err)
        *err = local;
      return s;
    }
    return ok(err);
  }
  // CPU: in order and synchronous; the first failure is sticky.
  if (stream->sticky.status != NNCC_OK) {
    if (err)
      *err = stream->sticky;
    return stream->sticky.status;
  }
  nncc_error local{};
  nncc_status s = fn(user_data, &local);
  if (s != NNCC_OK) {
    local.status = s;
    if (local.message[0] == '\0')
      fail(&local, s, "host task failed: %s", nncc_status_string(s));
    stream->sticky = local;
    if (err)
      *err = local;
    return s;
  }
  return ok(err);
}

} // extern "C"
