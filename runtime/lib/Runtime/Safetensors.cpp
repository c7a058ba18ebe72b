//===- Safetensors.cpp - validated safetensors reader and writer ---------===//
//
// Format: 8-byte little-endian header length N, N bytes of UTF-8 JSON
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}, ...,
//    "__metadata__": {"key": "value", ...}}
// then the data buffer; offsets are relative to the start of the buffer.
//
// Everything a file could get wrong is checked before any view is handed
// out; nlohmann::json runs without exceptions (JSON_NOEXCEPTION), so every
// access is preceded by a type check.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace nncc::rt;
using json = nlohmann::json;

namespace {

constexpr uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000; // as HF safetensors

struct TensorEntry {
  std::string name;
  nncc_dtype dtype = NNCC_DTYPE_INVALID;
  std::vector<int64_t> shape;
  uint64_t numel = 0;
  uint64_t begin = 0, end = 0; // relative to the data buffer
};

} // namespace

struct nncc_safetensors {
  std::string source; // quoted path or "<memory>", for messages
  const uint8_t *bytes = nullptr;
  uint64_t size = 0;
  void *mapping = nullptr; // mmap'ed file, or
  void *owned = nullptr;   // malloc'ed copy
  uint64_t dataStart = 0;  // 8 + N
  std::vector<TensorEntry> tensors; // ascending name order
  std::vector<std::pair<std::string, std::string>> metadata; // ascending key

  ~nncc_safetensors() {
    if (mapping)
      munmap(mapping, size);
    std::free(owned);
  }
};

namespace {

// Records only the first syntax error of a failed parse.
struct ErrorOnlySax : nlohmann::json_sax<json> {
  size_t position = 0;
  std::string what;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t &) override { return true; }
  bool string(string_t &) override { return true; }
  bool binary(binary_t &) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t &) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t pos, const std::string &,
                   const nlohmann::detail::exception &ex) override {
    position = pos;
    what = ex.what();
    return false;
  }
};

const char *jsonKind(const json &j) { return j.type_name(); }

std::string describeNumber(const json &j) {
  if (j.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", j.get<double>());
    return buf;
  }
  if (j.is_number_integer() || j.is_number_unsigned())
    return j.dump();
  return std::string("a JSON ") + jsonKind(j);
}

bool isSpecDtypeWeDoNotSupport(const std::string &d) {
  static const char *const names[] = {"U16", "U32", "U64", "F8_E4M3", "F8_E5M2",
                                      "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2",
                                      "C64", "C128"};
  for (const char *n : names)
    if (d == n)
      return true;
  return false;
}

// Parses a tensor entry; `prefix` is "'file': tensor 'name'".
nncc_status parseEntry(const std::string &prefix, const json &info,
                       uint64_t dataSize, TensorEntry &t, nncc_error *err) {
  if (!info.is_object())
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: entry is a JSON %s, expected an object with dtype, shape, "
                "data_offsets",
                prefix.c_str(), jsonKind(info));
  auto dt = info.find("dtype");
  auto sh = info.find("shape");
  auto off = info.find("data_offsets");
  if (dt == info.end() || sh == info.end() || off == info.end())
    return fail(err, NNCC_ERROR_CORRUPT_FILE, "%s: missing \"%s\"", prefix.c_str(),
                dt == info.end() ? "dtype" : sh == info.end() ? "shape" : "data_offsets");

  // dtype
  if (!dt->is_string())
    return fail(err, NNCC_ERROR_CORRUPT_FILE, "%s: dtype is a JSON %s, expected a string",
                prefix.c_str(), jsonKind(*dt));
  const std::string &dname = dt->get_ref<const std::string &>();
  t.dtype = nncc_dtype_from_name(dname.c_str());
  if (t.dtype == NNCC_DTYPE_INVALID || dname.size() != std::strlen(dname.c_str()))
    return fail(err,
                isSpecDtypeWeDoNotSupport(dname) ? NNCC_ERROR_UNSUPPORTED
                                                 : NNCC_ERROR_CORRUPT_FILE,
                "%s: unknown dtype %s (supported: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL)",
                prefix.c_str(), quote(dname).c_str());

  // shape
  if (!sh->is_array())
    return fail(err, NNCC_ERROR_CORRUPT_FILE, "%s: shape is a JSON %s, expected an array",
                prefix.c_str(), jsonKind(*sh));
  t.shape.clear();
  t.shape.reserve(sh->size());
  uint64_t numel = 1;
  bool overflow = false;
  for (size_t i = 0; i < sh->size(); ++i) {
    const json &d = (*sh)[i];
    if (d.is_number_unsigned()) {
      uint64_t v = d.get<uint64_t>();
      if (v > static_cast<uint64_t>(INT64_MAX))
        return fail(err, NNCC_ERROR_CORRUPT_FILE,
                    "%s: shape[%zu] = %s does not fit in int64", prefix.c_str(), i,
                    describeNumber(d).c_str());
      t.shape.push_back(static_cast<int64_t>(v));
      if (__builtin_mul_overflow(numel, v, &numel))
        overflow = true;
      continue;
    }
    if (d.is_number_integer()) // signed and not unsigned: negative
      return fail(err, NNCC_ERROR_CORRUPT_FILE, "%s: shape[%zu] = %s is negative",
                  prefix.c_str(), i, describeNumber(d).c_str());
    if (d.is_number_float())
      return fail(err, NNCC_ERROR_CORRUPT_FILE,
                  "%s: shape[%zu] = %s is not an integer (or does not fit in 64 bits)",
                  prefix.c_str(), i, describeNumber(d).c_str());
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: shape[%zu] is a JSON %s, expected a non-negative integer",
                prefix.c_str(), i, jsonKind(d));
  }
  uint64_t itemsize = nncc_dtype_size(t.dtype);
  uint64_t nbytes = 0;
  if (overflow || __builtin_mul_overflow(numel, itemsize, &nbytes))
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: shape %s with dtype %s overflows 64-bit byte counts", prefix.c_str(),
                formatShape(t.shape).c_str(), dname.c_str());
  t.numel = numel;

  // data_offsets
  if (!off->is_array() || off->size() != 2)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: data_offsets must be an array of 2 non-negative integers, got %s",
                prefix.c_str(),
                off->is_array() ? ("an array of " + std::to_string(off->size())).c_str()
                                : (std::string("a JSON ") + jsonKind(*off)).c_str());
  for (size_t i = 0; i < 2; ++i) {
    const json &v = (*off)[i];
    if (!v.is_number_unsigned())
      return fail(err, NNCC_ERROR_CORRUPT_FILE,
                  "%s: data_offsets[%zu] = %s is not a non-negative 64-bit integer",
                  prefix.c_str(), i, describeNumber(v).c_str());
  }
  t.begin = (*off)[0].get<uint64_t>();
  t.end = (*off)[1].get<uint64_t>();
  if (t.end < t.begin)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: data_offsets [%llu, %llu] end before begin", prefix.c_str(),
                (unsigned long long)t.begin, (unsigned long long)t.end);
  if (t.end > dataSize)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: data_offsets [%llu, %llu] end beyond the data buffer (%llu bytes)",
                prefix.c_str(), (unsigned long long)t.begin, (unsigned long long)t.end,
                (unsigned long long)dataSize);
  if (t.end - t.begin != nbytes)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: data_offsets [%llu, %llu] span %llu bytes but dtype %s and shape %s "
                "need %llu bytes",
                prefix.c_str(), (unsigned long long)t.begin, (unsigned long long)t.end,
                (unsigned long long)(t.end - t.begin), dname.c_str(),
                formatShape(t.shape).c_str(), (unsigned long long)nbytes);
  return NNCC_OK;
}

nncc_status parseImage(nncc_safetensors &f, nncc_error *err) {
  const char *src = f.source.c_str();
  if (f.size < 8)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: file is %llu bytes, shorter than the 8-byte header length field",
                src, (unsigned long long)f.size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | f.bytes[i];
  if (n > kMaxHeaderBytes)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: header length %llu exceeds the 100 MB limit (file is %llu bytes)",
                src, (unsigned long long)n, (unsigned long long)f.size);
  if (n > f.size - 8)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: header length %llu exceeds the file size (%llu bytes, %llu after "
                "the length field)",
                src, (unsigned long long)n, (unsigned long long)f.size,
                (unsigned long long)(f.size - 8));
  if (n == 0)
    return fail(err, NNCC_ERROR_CORRUPT_FILE, "%s: header length is 0 (empty header)",
                src);
  const char *text = reinterpret_cast<const char *>(f.bytes + 8);
  size_t bad = firstInvalidUtf8(text, n);
  if (bad != n)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: header is not valid UTF-8 (byte 0x%02x at file offset %llu)", src,
                static_cast<unsigned>(static_cast<unsigned char>(text[bad])),
                (unsigned long long)(8 + bad));
  f.dataStart = 8 + n;
  uint64_t dataSize = f.size - f.dataStart;

  // Duplicate keys: nlohmann keeps the last one silently, so watch them go by.
  std::vector<std::set<std::string>> open;
  std::string duplicate;
  size_t duplicateDepth = 0;
  json::parser_callback_t watch = [&](int, json::parse_event_t event, json &parsed) {
    switch (event) {
    case json::parse_event_t::object_start:
      open.emplace_back();
      break;
    case json::parse_event_t::object_end:
      if (!open.empty())
        open.pop_back();
      break;
    case json::parse_event_t::key:
      if (!open.empty() && parsed.is_string() &&
          !open.back().insert(parsed.get_ref<const std::string &>()).second &&
          duplicate.empty()) {
        duplicate = parsed.get_ref<const std::string &>();
        duplicateDepth = open.size();
      }
      break;
    default:
      break;
    }
    return true;
  };
  json header = json::parse(text, text + n, watch, /*allow_exceptions=*/false);
  if (header.is_discarded()) {
    ErrorOnlySax sax;
    json::sax_parse(text, text + n, &sax);
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: header is not valid JSON (near file offset %llu): %s", src,
                (unsigned long long)(8 + (sax.position ? sax.position - 1 : 0)),
                sax.what.empty() ? "parse error" : sax.what.c_str());
  }
  if (!duplicate.empty())
    return fail(err, NNCC_ERROR_CORRUPT_FILE, "%s: duplicate %s %s in header", src,
                duplicateDepth == 1 ? "tensor name" : "key", quote(duplicate).c_str());
  if (!header.is_object())
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: header is a JSON %s, expected an object", src, jsonKind(header));

  f.tensors.clear();
  f.tensors.reserve(header.size());
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &name = it.key();
    if (name == "__metadata__") {
      const json &meta = it.value();
      if (!meta.is_object())
        return fail(err, NNCC_ERROR_CORRUPT_FILE,
                    "%s: __metadata__ is a JSON %s, expected an object of strings", src,
                    jsonKind(meta));
      for (auto m = meta.begin(); m != meta.end(); ++m) {
        if (!m.value().is_string())
          return fail(err, NNCC_ERROR_CORRUPT_FILE,
                      "%s: __metadata__ %s is a JSON %s, expected a string", src,
                      quote(m.key()).c_str(), jsonKind(m.value()));
        f.metadata.emplace_back(m.key(), m.value().get_ref<const std::string &>());
      }
      continue;
    }
    TensorEntry t;
    t.name = name;
    std::string prefix = std::string(src) + ": tensor " + quote(name);
    if (nncc_status s = parseEntry(prefix, it.value(), dataSize, t, err))
      return s;
    f.tensors.push_back(std::move(t));
  }

  // Overlaps between non-empty ranges.
  std::vector<const TensorEntry *> byOffset;
  for (const TensorEntry &t : f.tensors)
    if (t.end > t.begin)
      byOffset.push_back(&t);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const TensorEntry *a, const TensorEntry *b) {
              return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
            });
  const TensorEntry *reach = nullptr; // the range that extends furthest so far
  for (const TensorEntry *t : byOffset) {
    if (reach && t->begin < reach->end)
      return fail(err, NNCC_ERROR_CORRUPT_FILE,
                  "%s: tensors %s [%llu, %llu) and %s [%llu, %llu) overlap in the data "
                  "buffer",
                  src, quote(reach->name).c_str(), (unsigned long long)reach->begin,
                  (unsigned long long)reach->end, quote(t->name).c_str(),
                  (unsigned long long)t->begin, (unsigned long long)t->end);
    if (!reach || t->end > reach->end)
      reach = t;
  }
  return ok(err);
}

void fillView(const nncc_safetensors &f, const TensorEntry &t, nncc_tensor_view *out) {
  out->name = t.name.c_str();
  out->dtype = t.dtype;
  out->rank = static_cast<int32_t>(t.shape.size());
  out->shape = t.shape.data();
  out->numel = t.numel;
  out->data = f.bytes + f.dataStart + t.begin;
  out->nbytes = t.end - t.begin;
  out->file_offset = f.dataStart + t.begin;
}

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

const TensorEntry *lookup(const nncc_safetensors &f, const char *name) {
  auto it = std::lower_bound(
      f.tensors.begin(), f.tensors.end(), name,
      [](const TensorEntry &t, const char *n) { return t.name.compare(n) < 0; });
  if (it != f.tensors.end() && it->name == name)
    return &*it;
  return nullptr;
}

nncc_status notFound(const nncc_safetensors &f, const char *name, nncc_error *err) {
  std::string wanted = name;
  std::string hint;
  if (wanted.size() <= 512) {
    size_t best = SIZE_MAX;
    const TensorEntry *closest = nullptr;
    for (const TensorEntry &t : f.tensors) {
      if (t.name.size() > 512)
        continue;
      size_t d = editDistance(wanted, t.name);
      if (d < best) {
        best = d;
        closest = &t;
      }
    }
    if (closest && best <= std::max<size_t>(3, wanted.size() / 3))
      hint = "; did you mean " + quote(closest->name) + "?";
  }
  return fail(err, NNCC_ERROR_NOT_FOUND, "tensor %s not found in %s (%zu tensors)%s",
              quote(wanted).c_str(), f.source.c_str(), f.tensors.size(), hint.c_str());
}

} // namespace

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

namespace {
struct WriterEntry {
  std::string name;
  nncc_dtype dtype;
  std::vector<int64_t> shape;
  const void *data;
  uint64_t nbytes;
};
} // namespace

struct nncc_safetensors_writer {
  std::vector<WriterEntry> entries;
  std::set<std::string> names;
  std::vector<std::pair<std::string, std::string>> metadata;
};

namespace {

nncc_status buildHeader(const nncc_safetensors_writer &w, std::string &header,
                        uint64_t &dataBytes, nncc_error *err) {
  json h = json::object();
  uint64_t offset = 0;
  for (const WriterEntry &e : w.entries) {
    json shape = json::array();
    for (int64_t d : e.shape)
      shape.push_back(d);
    uint64_t end;
    if (__builtin_add_overflow(offset, e.nbytes, &end))
      return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "total tensor bytes overflow 64 bits");
    h[e.name] = {{"dtype", nncc_dtype_name(e.dtype)},
                 {"shape", std::move(shape)},
                 {"data_offsets", {offset, end}}};
    offset = end;
  }
  if (!w.metadata.empty()) {
    json meta = json::object();
    for (const auto &kv : w.metadata)
      meta[kv.first] = kv.second;
    h["__metadata__"] = std::move(meta);
  }
  header = h.dump(-1, ' ', false, json::error_handler_t::replace);
  header.append((8 - header.size() % 8) % 8, ' ');
  if (header.size() > kMaxHeaderBytes)
    return fail(err, NNCC_ERROR_UNSUPPORTED,
                "header would be %zu bytes, over the 100 MB limit readers accept",
                header.size());
  dataBytes = offset;
  return NNCC_OK;
}

void putLength(uint8_t *out, uint64_t n) {
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<uint8_t>(n >> (8 * i));
}

bool writeAll(int fd, const void *data, uint64_t size) {
  const auto *p = static_cast<const uint8_t *>(data);
  while (size > 0) {
    size_t chunk = size > (1u << 30) ? (1u << 30) : static_cast<size_t>(size);
    ssize_t k = ::write(fd, p, chunk);
    if (k < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    p += k;
    size -= static_cast<uint64_t>(k);
  }
  return true;
}

} // namespace

extern "C" {

nncc_status nncc_safetensors_open(const char *path, nncc_safetensors **out,
                                  nncc_error *err) {
  if (!out)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_safetensors_open: out is NULL");
  *out = nullptr;
  if (!path)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_safetensors_open: path is NULL");
  std::string source = quote(path, std::strlen(path));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return fail(err, e == ENOENT ? NNCC_ERROR_NOT_FOUND : NNCC_ERROR_IO,
                "cannot open %s: %s", source.c_str(), std::strerror(e));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return fail(err, NNCC_ERROR_IO, "cannot stat %s: %s", source.c_str(), std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(err, NNCC_ERROR_IO, "%s is not a regular file", source.c_str());
  }
  auto *f = new nncc_safetensors();
  f->source = source;
  f->size = static_cast<uint64_t>(st.st_size);
  if (f->size > 0) {
    void *map = mmap(nullptr, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      delete f;
      return fail(err, e == ENOMEM ? NNCC_ERROR_OUT_OF_MEMORY : NNCC_ERROR_IO,
                  "cannot map %s (%llu bytes): %s", source.c_str(),
                  (unsigned long long)st.st_size, std::strerror(e));
    }
    f->mapping = map;
    f->bytes = static_cast<const uint8_t *>(map);
  }
  ::close(fd);
  if (nncc_status s = parseImage(*f, err)) {
    delete f;
    return s;
  }
  *out = f;
  return ok(err);
}

nncc_status nncc_safetensors_open_memory(const void *data, size_t size,
                                         nncc_safetensors **out, nncc_error *err) {
  if (!out)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "nncc_safetensors_open_memory: out is NULL");
  *out = nullptr;
  if (!data && size)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "nncc_safetensors_open_memory: data is NULL but size is %zu", size);
  auto *f = new nncc_safetensors();
  f->source = "<memory>";
  f->size = size;
  if (size) {
    // 64-byte aligned copy so that aligned data offsets give aligned views.
    size_t rounded = (size + 63) / 64 * 64;
    f->owned = std::aligned_alloc(64, rounded);
    if (!f->owned) {
      delete f;
      return fail(err, NNCC_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes", size);
    }
    std::memcpy(f->owned, data, size);
    f->bytes = static_cast<const uint8_t *>(f->owned);
  }
  if (nncc_status s = parseImage(*f, err)) {
    delete f;
    return s;
  }
  *out = f;
  return ok(err);
}

void nncc_safetensors_close(nncc_safetensors *file) { delete file; }

size_t nncc_safetensors_count(const nncc_safetensors *file) {
  return file ? file->tensors.size() : 0;
}

nncc_status nncc_safetensors_tensor_at(const nncc_safetensors *file, size_t index,
                                       nncc_tensor_view *out, nncc_error *err) {
  if (!file || !out)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "nncc_safetensors_tensor_at: %s is NULL", file ? "out" : "file");
  if (index >= file->tensors.size())
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "tensor index %zu out of range: %s has %zu tensors", index,
                file->source.c_str(), file->tensors.size());
  fillView(*file, file->tensors[index], out);
  return ok(err);
}

nncc_status nncc_safetensors_find(const nncc_safetensors *file, const char *name,
                                  nncc_tensor_view *out, nncc_error *err) {
  if (!file || !name || !out)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_safetensors_find: %s is NULL",
                !file ? "file" : !name ? "name" : "out");
  const TensorEntry *t = lookup(*file, name);
  if (!t)
    return notFound(*file, name, err);
  fillView(*file, *t, out);
  return ok(err);
}

nncc_status nncc_safetensors_get(const nncc_safetensors *file, const char *name,
                                 nncc_dtype dtype, int32_t rank,
                                 const int64_t *expected_shape, nncc_tensor_view *out,
                                 nncc_error *err) {
  if (!file || !name || !out)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_safetensors_get: %s is NULL",
                !file ? "file" : !name ? "name" : "out");
  if (rank < 0 || (rank > 0 && !expected_shape))
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "nncc_safetensors_get(%s): rank %d with %s expected shape",
                quote(name, std::strlen(name)).c_str(), rank,
                expected_shape ? "an" : "a NULL");
  const TensorEntry *t = lookup(*file, name);
  if (!t)
    return notFound(*file, name, err);
  std::string qn = quote(t->name);
  if (t->dtype != dtype)
    return fail(err, NNCC_ERROR_DTYPE_MISMATCH,
                "tensor %s in %s: expected dtype %s, got %s", qn.c_str(),
                file->source.c_str(), nncc_dtype_name(dtype), nncc_dtype_name(t->dtype));
  bool same = t->shape.size() == static_cast<size_t>(rank);
  for (int32_t i = 0; same && i < rank; ++i)
    same = expected_shape[i] < 0 || expected_shape[i] == t->shape[i];
  if (!same)
    return fail(err, NNCC_ERROR_SHAPE_MISMATCH,
                "tensor %s in %s: expected shape %s, got %s", qn.c_str(),
                file->source.c_str(), formatShape(expected_shape, rank).c_str(),
                formatShape(t->shape).c_str());
  fillView(*file, *t, out);
  return ok(err);
}

nncc_status nncc_safetensors_read_into(const nncc_safetensors *file, const char *name,
                                       nncc_dtype dtype, int32_t rank,
                                       const int64_t *expected_shape, void *dst,
                                       uint64_t dst_bytes, nncc_error *err) {
  nncc_tensor_view v;
  if (nncc_status s = nncc_safetensors_get(file, name, dtype, rank, expected_shape, &v, err))
    return s;
  if (dst_bytes != v.nbytes)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "tensor %s in %s has %llu bytes but the destination holds %llu",
                quote(v.name, std::strlen(v.name)).c_str(), file->source.c_str(),
                (unsigned long long)v.nbytes, (unsigned long long)dst_bytes);
  if (v.nbytes && !dst)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "nncc_safetensors_read_into: dst is NULL");
  if (v.nbytes)
    std::memcpy(dst, v.data, v.nbytes);
  return ok(err);
}

size_t nncc_safetensors_metadata_count(const nncc_safetensors *file) {
  return file ? file->metadata.size() : 0;
}

nncc_status nncc_safetensors_metadata_at(const nncc_safetensors *file, size_t index,
                                         const char **key, const char **value,
                                         nncc_error *err) {
  if (!file || !key || !value)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "nncc_safetensors_metadata_at: NULL argument");
  if (index >= file->metadata.size())
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "metadata index %zu out of range: %s has %zu entries", index,
                file->source.c_str(), file->metadata.size());
  *key = file->metadata[index].first.c_str();
  *value = file->metadata[index].second.c_str();
  return ok(err);
}

const char *nncc_safetensors_metadata_get(const nncc_safetensors *file, const char *key) {
  if (!file || !key)
    return nullptr;
  for (const auto &kv : file->metadata)
    if (kv.first == key)
      return kv.second.c_str();
  return nullptr;
}

nncc_status nncc_safetensors_writer_create(nncc_safetensors_writer **out,
                                           nncc_error *err) {
  if (!out)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "nncc_safetensors_writer_create: out is NULL");
  *out = new nncc_safetensors_writer();
  return ok(err);
}

void nncc_safetensors_writer_destroy(nncc_safetensors_writer *writer) { delete writer; }

nncc_status nncc_safetensors_writer_add(nncc_safetensors_writer *writer, const char *name,
                                        nncc_dtype dtype, int32_t rank,
                                        const int64_t *shape, const void *data,
                                        uint64_t nbytes, nncc_error *err) {
  if (!writer || !name)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "nncc_safetensors_writer_add: %s is NULL",
                writer ? "name" : "writer");
  size_t len = std::strlen(name);
  std::string qn = quote(name, len);
  if (len == 0)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "tensor name is empty");
  if (!isValidUtf8(name, len))
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "tensor name %s is not valid UTF-8",
                qn.c_str());
  if (std::strcmp(name, "__metadata__") == 0)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "tensor name '__metadata__' is reserved by the format");
  if (writer->names.count(name))
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "duplicate tensor name %s", qn.c_str());
  size_t itemsize = nncc_dtype_size(dtype);
  if (itemsize == 0)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "tensor %s: invalid dtype %d",
                qn.c_str(), static_cast<int>(dtype));
  if (rank < 0 || (rank > 0 && !shape))
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "tensor %s: rank %d with %s shape", qn.c_str(), rank,
                shape ? "a" : "a NULL");
  uint64_t numel = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "tensor %s: shape[%d] = %lld is negative",
                  qn.c_str(), i, (long long)shape[i]);
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(shape[i]), &numel))
      return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                  "tensor %s: shape %s overflows 64 bits", qn.c_str(),
                  formatShape(shape, rank).c_str());
  }
  uint64_t want;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(itemsize), &want))
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "tensor %s: shape %s overflows 64 bits",
                qn.c_str(), formatShape(shape, rank).c_str());
  if (nbytes != want)
    return fail(err, NNCC_ERROR_SHAPE_MISMATCH,
                "tensor %s: %llu bytes given but dtype %s and shape %s need %llu",
                qn.c_str(), (unsigned long long)nbytes, nncc_dtype_name(dtype),
                formatShape(shape, rank).c_str(), (unsigned long long)want);
  if (nbytes && !data)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT, "tensor %s: data is NULL", qn.c_str());
  WriterEntry e{name, dtype, std::vector<int64_t>(shape, shape + rank), data, nbytes};
  writer->names.insert(e.name);
  writer->entries.push_back(std::move(e));
  return ok(err);
}

nncc_status nncc_safetensors_writer_set_metadata(nncc_safetensors_writer *writer,
                                                 const char *key, const char *value,
                                                 nncc_error *err) {
  if (!writer || !key || !value)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "nncc_safetensors_writer_set_metadata: NULL argument");
  if (!isValidUtf8(key, std::strlen(key)) || !isValidUtf8(value, std::strlen(value)))
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "metadata %s: key and value must be valid UTF-8",
                quote(key, std::strlen(key)).c_str());
  for (auto &kv : writer->metadata)
    if (kv.first == key) {
      kv.second = value;
      return ok(err);
    }
  writer->metadata.emplace_back(key, value);
  return ok(err);
}

nncc_status nncc_safetensors_writer_serialize(const nncc_safetensors_writer *writer,
                                              void **out, size_t *out_size,
                                              nncc_error *err) {
  if (!writer || !out || !out_size)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "nncc_safetensors_writer_serialize: NULL argument");
  *out = nullptr;
  *out_size = 0;
  std::string header;
  uint64_t dataBytes;
  if (nncc_status s = buildHeader(*writer, header, dataBytes, err))
    return s;
  uint64_t total = 8 + header.size() + dataBytes;
  if (total < dataBytes || total > SIZE_MAX)
    return fail(err, NNCC_ERROR_OUT_OF_MEMORY, "serialized size overflows");
  auto *buf = static_cast<uint8_t *>(std::malloc(total));
  if (!buf)
    return fail(err, NNCC_ERROR_OUT_OF_MEMORY, "cannot allocate %llu bytes",
                (unsigned long long)total);
  putLength(buf, header.size());
  std::memcpy(buf + 8, header.data(), header.size());
  uint8_t *p = buf + 8 + header.size();
  for (const WriterEntry &e : writer->entries) {
    if (e.nbytes)
      std::memcpy(p, e.data, e.nbytes);
    p += e.nbytes;
  }
  *out = buf;
  *out_size = static_cast<size_t>(total);
  return ok(err);
}

nncc_status nncc_safetensors_writer_write(const nncc_safetensors_writer *writer,
                                          const char *path, nncc_error *err) {
  if (!writer || !path)
    return fail(err, NNCC_ERROR_INVALID_ARGUMENT,
                "nncc_safetensors_writer_write: %s is NULL", writer ? "path" : "writer");
  std::string header;
  uint64_t dataBytes;
  if (nncc_status s = buildHeader(*writer, header, dataBytes, err))
    return s;
  std::string tmp = std::string(path) + ".tmp";
  std::string qtmp = quote(tmp);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    int e = errno;
    return fail(err, e == ENOENT ? NNCC_ERROR_NOT_FOUND : NNCC_ERROR_IO,
                "cannot create %s: %s", qtmp.c_str(), std::strerror(e));
  }
  uint8_t len[8];
  putLength(len, header.size());
  bool good = writeAll(fd, len, 8) && writeAll(fd, header.data(), header.size());
  for (size_t i = 0; good && i < writer->entries.size(); ++i)
    good = writeAll(fd, writer->entries[i].data, writer->entries[i].nbytes);
  int e = good ? 0 : errno;
  if (::close(fd) != 0 && good) {
    good = false;
    e = errno;
  }
  if (!good) {
    ::unlink(tmp.c_str());
    return fail(err, NNCC_ERROR_IO, "cannot write %s: %s", qtmp.c_str(), std::strerror(e));
  }
  if (std::rename(tmp.c_str(), path) != 0) {
    e = errno;
    ::unlink(tmp.c_str());
    return fail(err, NNCC_ERROR_IO, "cannot rename %s to %s: %s", qtmp.c_str(),
                quote(path, std::strlen(path)).c_str(), std::strerror(e));
  }
  return ok(err);
}

} // extern "C"
