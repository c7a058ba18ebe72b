//===- SafetensorsFuzzer.cpp - libFuzzer target for the safetensors reader ===//
//
// Each input is a whole safetensors image handed to
// nncc_safetensors_open_memory. The reader must either reject it with one of
// its documented statuses and a message, or accept it with views that stay
// inside the image (exactly the image's bytes at file_offset, no two
// overlapping); an accepted image written back with the writer must read
// back the same. A violated rule aborts (a finding, like an ASan/UBSan
// report). Built and run by utils/sanitize.sh (docs/runtime.md, "Sanitizers
// and fuzzing").
//
//===----------------------------------------------------------------------===//

#include "nncc/Runtime/nncc_runtime.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void finding(const char *what, const char *detail = "") {
  std::fprintf(stderr, "safetensors fuzzer: %s%s%s\n", what, *detail ? ": " : "", detail);
  std::abort();
}

void check(bool ok, const char *what, const char *detail = "") {
  if (!ok)
    finding(what, detail);
}

uint64_t headerLength(const uint8_t *data, size_t size) {
  uint64_t n = 0;
  for (int i = 7; i >= 0 && size >= 8; --i)
    n = (n << 8) | data[i];
  return n;
}

/// The error contract of every fallible call: status mirrored, message
/// NUL-terminated, non-empty on failure and empty on success.
void checkError(nncc_status s, const nncc_error &err) {
  check(err.status == s, "err.status differs from the returned status");
  check(std::memchr(err.message, '\0', sizeof err.message) != nullptr,
        "error message not NUL-terminated");
  if (s == NNCC_OK)
    check(err.message[0] == '\0', "message on success", err.message);
  else
    check(err.message[0] != '\0', "failure without a message", nncc_status_name(s));
}

struct Tensor {
  std::string name;
  nncc_dtype dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

/// Reads every tensor of `f`, checking each view; with `image` (the bytes
/// `f` was opened from), also that the view is those bytes: inside the data
/// buffer, where file_offset says, overlapping no other view (the reader's
/// own copy of the image has slack, so ASan alone would miss small overruns).
void readTensors(const nncc_safetensors *f, std::vector<Tensor> &out,
                 const uint8_t *image = nullptr, size_t imageSize = 0) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (size_t i = 0, n = nncc_safetensors_count(f); i < n; ++i) {
    nncc_tensor_view v;
    nncc_error err;
    nncc_status s = nncc_safetensors_tensor_at(f, i, &v, &err);
    checkError(s, err);
    check(s == NNCC_OK, "tensor_at failed on an accepted file", err.message);
    check(v.name != nullptr, "view without a name");
    check(v.rank >= 0, "negative rank", v.name);
    check(nncc_dtype_size(v.dtype) != 0, "view with an invalid dtype", v.name);
    uint64_t numel = 1;
    for (int32_t d = 0; d < v.rank; ++d) {
      check(v.shape[d] >= 0, "negative dim", v.name);
      numel *= static_cast<uint64_t>(v.shape[d]);
    }
    check(numel == v.numel, "numel is not the product of the shape", v.name);
    check(v.nbytes == v.numel * nncc_dtype_size(v.dtype), "nbytes != numel * dtype size", v.name);
    if (i > 0)
      check(out.back().name < v.name, "tensors not in ascending name order", v.name);

    if (image) {
      uint64_t dataStart = 8 + headerLength(image, imageSize);
      check(v.file_offset >= dataStart, "view starts inside the header", v.name);
      check(v.file_offset <= imageSize && v.nbytes <= imageSize - v.file_offset,
            "view ends past the image", v.name);
      check(std::memcmp(v.data, image + v.file_offset, v.nbytes) == 0,
            "view is not the image's bytes at file_offset", v.name);
      if (v.nbytes)
        ranges.emplace_back(v.file_offset, v.file_offset + v.nbytes);
    }
    Tensor t{v.name, v.dtype, std::vector<int64_t>(v.shape, v.shape + v.rank), std::string()};
    // Touches every byte of the view (ASan: must be inside the image).
    t.bytes.assign(static_cast<const char *>(v.data), v.nbytes);

    nncc_tensor_view again;
    s = nncc_safetensors_find(f, v.name, &again, &err);
    checkError(s, err);
    check(s == NNCC_OK && again.data == v.data, "find disagrees with tensor_at", v.name);
    std::vector<char> copy(v.nbytes + 1);
    s = nncc_safetensors_read_into(f, v.name, v.dtype, v.rank, v.shape, copy.data(), v.nbytes,
                                   &err);
    checkError(s, err);
    check(s == NNCC_OK, "read_into failed on an accepted tensor", err.message);
    check(std::memcmp(copy.data(), t.bytes.data(), v.nbytes) == 0, "read_into copied other bytes",
          v.name);
    s = nncc_safetensors_read_into(f, v.name, v.dtype, v.rank, v.shape, copy.data(), v.nbytes + 1,
                                   &err);
    checkError(s, err);
    check(s != NNCC_OK, "read_into accepted a destination of the wrong size", v.name);
    out.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    check(ranges[i - 1].second <= ranges[i].first, "accepted overlapping tensors");
}

void readMetadata(const nncc_safetensors *f, std::vector<std::pair<std::string, std::string>> &out) {
  for (size_t i = 0, n = nncc_safetensors_metadata_count(f); i < n; ++i) {
    const char *k = nullptr, *v = nullptr;
    nncc_error err;
    nncc_status s = nncc_safetensors_metadata_at(f, i, &k, &v, &err);
    checkError(s, err);
    check(s == NNCC_OK && k && v, "metadata_at failed on an accepted file");
    const char *got = nncc_safetensors_metadata_get(f, k);
    check(got && std::strcmp(got, v) == 0, "metadata_get disagrees with metadata_at", k);
    if (i > 0)
      check(out.back().first < k, "metadata not in ascending key order", k);
    out.emplace_back(k, v);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nncc_safetensors *f = nullptr;
  nncc_error err;
  std::memset(&err, 0x55, sizeof err);
  nncc_status s = nncc_safetensors_open_memory(data, size, &f, &err);
  checkError(s, err);
  if (s != NNCC_OK) {
    check(f == nullptr, "output set on failure");
    check(s == NNCC_ERROR_CORRUPT_FILE || s == NNCC_ERROR_UNSUPPORTED ||
              s == NNCC_ERROR_OUT_OF_MEMORY,
          "undocumented status for a bad image", nncc_status_name(s));
    return 0;
  }
  check(f != nullptr, "NNCC_OK without a file");
  check(size >= 8 && headerLength(data, size) <= size - 8, "accepted a header past the end");

  std::vector<Tensor> tensors;
  std::vector<std::pair<std::string, std::string>> metadata;
  readTensors(f, tensors, data, size);
  readMetadata(f, metadata);
  nncc_tensor_view none;
  check(nncc_safetensors_find(f, "__metadata__", &none, nullptr) == NNCC_ERROR_NOT_FOUND,
        "__metadata__ readable as a tensor");
  nncc_safetensors_close(f);

  // Round trip: what the reader accepted, the writer writes and the reader
  // reads back unchanged; except a tensor named "", which the reader takes
  // (the format allows it) and the writer refuses by its contract
  // (nncc_runtime.h: names must be non-empty).
  tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                               [](const Tensor &t) { return t.name.empty(); }),
                tensors.end());
  nncc_safetensors_writer *w = nullptr;
  check(nncc_safetensors_writer_create(&w, &err) == NNCC_OK, "writer_create failed");
  for (const Tensor &t : tensors) {
    s = nncc_safetensors_writer_add(w, t.name.c_str(), t.dtype, static_cast<int32_t>(t.shape.size()),
                                    t.shape.data(), t.bytes.data(), t.bytes.size(), &err);
    checkError(s, err);
    check(s == NNCC_OK, "the writer refuses a tensor the reader accepted", err.message);
  }
  for (const auto &m : metadata) {
    s = nncc_safetensors_writer_set_metadata(w, m.first.c_str(), m.second.c_str(), &err);
    checkError(s, err);
    check(s == NNCC_OK, "the writer refuses metadata the reader accepted", err.message);
  }
  void *image = nullptr;
  size_t imageSize = 0;
  s = nncc_safetensors_writer_serialize(w, &image, &imageSize, &err);
  checkError(s, err);
  check(s == NNCC_OK, "serialize failed", err.message);
  nncc_safetensors_writer_destroy(w);

  s = nncc_safetensors_open_memory(image, imageSize, &f, &err);
  checkError(s, err);
  check(s == NNCC_OK, "the reader refuses what the writer wrote", err.message);
  std::vector<Tensor> tensors2;
  std::vector<std::pair<std::string, std::string>> metadata2;
  readTensors(f, tensors2, static_cast<const uint8_t *>(image), imageSize);
  readMetadata(f, metadata2);
  nncc_safetensors_close(f);
  nncc_free(image);
  check(tensors2.size() == tensors.size(), "round trip changed the tensor count");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor &a = tensors[i], &b = tensors2[i];
    check(a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.bytes == b.bytes,
          "round trip changed a tensor", a.name.c_str());
  }
  check(metadata == metadata2, "round trip changed the metadata");
  return 0;
}
