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

#include "RuntimeInternal.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <unordered_set>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace nncc::rt;
using json = nlohmann::json;

namespace {

constexpr uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000; // as HF safetensors
// The smallest entry, "a":{"dtype":"U8","shape":[],"data_offsets":[0,0]},
// takes 50 bytes, so a 100 MB header could list 2,000,000; no checkpoint
// comes near a million, and refusing more bounds the memory a header costs.
constexpr uint64_t kMaxTensors = 1000 * 1000;
// A header is three levels deep (entries, their shapes and offsets); deeper
// JSON is never a valid header and costs memory per level.
constexpr size_t kMaxDepth = 64;

struct TensorEntry {
  std::string name;
  nncc_dtype dtype = NNCC_DTYPE_INVALID;
  std::vector<int64_t> shape;
  uint64_t numel = 0;
  uint64_t begin = 0, end = 0; // relative to the data buffer
  uint64_t order = 0;          // header reading: its key's place among all keys
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

// Parses the entry of tensor t.name in `source` (messages start "'file':
// tensor 'name'", formatted only on failure).
nncc_status parseEntry(const std::string &source, const json &info, uint64_t dataSize,
                       TensorEntry &t, nncc_error *err) {
  auto prefix = [&] { return source + ": tensor " + quote(t.name); };
  if (!info.is_object())
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: entry is a JSON %s, expected an object with dtype, shape, "
                "data_offsets",
                prefix().c_str(), jsonKind(info));
  auto dt = info.find("dtype");
  auto sh = info.find("shape");
  auto off = info.find("data_offsets");
  if (dt == info.end() || sh == info.end() || off == info.end())
    return fail(err, NNCC_ERROR_CORRUPT_FILE, "%s: missing \"%s\"", prefix().c_str(),
                dt == info.end() ? "dtype" : sh == info.end() ? "shape" : "data_offsets");

  // dtype
  if (!dt->is_string())
    return fail(err, NNCC_ERROR_CORRUPT_FILE, "%s: dtype is a JSON %s, expected a string",
                prefix().c_str(), jsonKind(*dt));
  const std::string &dname = dt->get_ref<const std::string &>();
  t.dtype = nncc_dtype_from_name(dname.c_str());
  if (t.dtype == NNCC_DTYPE_INVALID || dname.size() != std::strlen(dname.c_str()))
    return fail(err,
                isSpecDtypeWeDoNotSupport(dname) ? NNCC_ERROR_UNSUPPORTED
                                                 : NNCC_ERROR_CORRUPT_FILE,
                "%s: unknown dtype %s (supported: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL)",
                prefix().c_str(), quote(dname).c_str());

  // shape
  if (!sh->is_array())
    return fail(err, NNCC_ERROR_CORRUPT_FILE, "%s: shape is a JSON %s, expected an array",
                prefix().c_str(), jsonKind(*sh));
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
                    "%s: shape[%zu] = %s does not fit in int64", prefix().c_str(), i,
                    describeNumber(d).c_str());
      t.shape.push_back(static_cast<int64_t>(v));
      if (__builtin_mul_overflow(numel, v, &numel))
        overflow = true;
      continue;
    }
    if (d.is_number_integer()) // signed and not unsigned: negative
      return fail(err, NNCC_ERROR_CORRUPT_FILE, "%s: shape[%zu] = %s is negative",
                  prefix().c_str(), i, describeNumber(d).c_str());
    if (d.is_number_float())
      return fail(err, NNCC_ERROR_CORRUPT_FILE,
                  "%s: shape[%zu] = %s is not an integer (or does not fit in 64 bits)",
                  prefix().c_str(), i, describeNumber(d).c_str());
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: shape[%zu] is a JSON %s, expected a non-negative integer",
                prefix().c_str(), i, jsonKind(d));
  }
  uint64_t itemsize = nncc_dtype_size(t.dtype);
  uint64_t nbytes = 0;
  if (overflow || __builtin_mul_overflow(numel, itemsize, &nbytes))
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: shape %s with dtype %s overflows 64-bit byte counts", prefix().c_str(),
                formatShape(t.shape).c_str(), dname.c_str());
  t.numel = numel;

  // data_offsets
  if (!off->is_array() || off->size() != 2)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: data_offsets must be an array of 2 non-negative integers, got %s",
                prefix().c_str(),
                off->is_array() ? ("an array of " + std::to_string(off->size())).c_str()
                                : (std::string("a JSON ") + jsonKind(*off)).c_str());
  for (size_t i = 0; i < 2; ++i) {
    const json &v = (*off)[i];
    if (!v.is_number_unsigned())
      return fail(err, NNCC_ERROR_CORRUPT_FILE,
                  "%s: data_offsets[%zu] = %s is not a non-negative 64-bit integer",
                  prefix().c_str(), i, describeNumber(v).c_str());
  }
  t.begin = (*off)[0].get<uint64_t>();
  t.end = (*off)[1].get<uint64_t>();
  if (t.end < t.begin)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: data_offsets [%llu, %llu] end before begin", prefix().c_str(),
                (unsigned long long)t.begin, (unsigned long long)t.end);
  if (t.end > dataSize)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: data_offsets [%llu, %llu] end beyond the data buffer (%llu bytes)",
                prefix().c_str(), (unsigned long long)t.begin, (unsigned long long)t.end,
                (unsigned long long)dataSize);
  if (t.end - t.begin != nbytes)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: data_offsets [%llu, %llu] span %llu bytes but dtype %s and shape %s "
                "need %llu bytes",
                prefix().c_str(), (unsigned long long)t.begin, (unsigned long long)t.end,
                (unsigned long long)(t.end - t.begin), dname.c_str(),
                formatShape(t.shape).c_str(), (unsigned long long)nbytes);
  return NNCC_OK;
}

// Reads the header in one pass of nlohmann's SAX parser and keeps only what
// the file describes: each tensor entry is checked (parseEntry, on a small
// DOM of its dtype, shape and data_offsets) when it closes and stored as a
// TensorEntry, metadata goes straight to its list, and everything else is
// skipped. Linear in the header, and a few hundred bytes per tensor. (A DOM
// of the whole header costs about 1 KB per tensor, and nlohmann's callback
// parser, which the reader used before, rescans the enclosing object at
// every object_end: minutes for 50,000 tensors.)
//
// Errors keep the order of a DOM walk: a syntax error anywhere first, then
// too many tensors, the first duplicate key, a header that is not an
// object, and then the first bad entry in name order.
class HeaderReader : public nlohmann::json_sax<json> {
public:
  HeaderReader(const std::string &source, uint64_t dataSize)
      : source(source), dataSize(dataSize) {}

  std::vector<TensorEntry> tensors;
  std::vector<std::pair<std::string, std::string>> metadata;
  size_t errorPosition = 0; // syntax error: the byte after the failing token
  std::string errorWhat;
  bool tooDeep = false;
  uint64_t tensorCount = 0; // top-level keys other than __metadata__
  bool hasDuplicate = false;
  std::string duplicate; // the first duplicate key (may be ""), at `duplicateDepth`
  size_t duplicateDepth = 0;
  const char *rootKind = nullptr; // set when the header is not an object

  /// The first failing entry in name order (__metadata__ among them).
  bool hasBadEntry() const { return bad; }
  /// Sorts the tensors by name and notes the first duplicate name.
  void sortTensors();
  nncc_status badEntry(nncc_error *err) const {
    if (err)
      *err = badError;
    return badError.status;
  }

  bool null() override { return scalar(json(nullptr)); }
  bool boolean(bool v) override { return scalar(json(v)); }
  bool number_integer(number_integer_t v) override { return scalar(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(json(v)); }
  bool number_float(number_float_t v, const string_t &) override { return scalar(json(v)); }
  bool string(string_t &v) override { return scalar(json(std::move(v))); }
  bool binary(binary_t &) override { return true; } // not in JSON text
  bool start_object(std::size_t) override { return open(/*object=*/true); }
  bool start_array(std::size_t) override { return open(/*object=*/false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t &k) override;
  bool parse_error(std::size_t pos, const std::string &,
                   const nlohmann::detail::exception &ex) override {
    errorPosition = pos;
    errorWhat = ex.what();
    return false;
  }

private:
  enum class Kind {
    Tensors,  // the header object: tensor names and __metadata__
    Metadata, // the __metadata__ object
    Entry,    // a tensor's entry object (into `entry`)
    Array,    // an entry's shape or data_offsets (into `*node`)
    Skip,     // anything else, only checked for duplicate keys
  };
  struct Frame {
    Kind kind;
    bool entryValue = false; // the value of a tensor name: check it when it closes
    json *node = nullptr;    // Array
    std::unordered_set<std::string> keys; // objects: duplicates
  };

  const std::string &source;
  uint64_t dataSize;
  std::vector<Frame> stack;
  std::string name;      // the tensor name (or __metadata__) being read
  std::string metaKey;   // the metadata key whose value comes next
  json entry;            // the entry being read
  json *slot = nullptr;  // Entry: where the value of the last key goes (NULL: skipped)
  bool slotIsArray = false; // ... and it is shape or data_offsets
  bool counting = false; // over kMaxTensors: only count the rest
  uint64_t keys = 0;     // key events so far
  uint64_t nameOrder = 0; // the key event of `name`
  bool seenMetadata = false;
  uint64_t duplicateOrder = 0;
  bool bad = false;
  std::string badName;
  nncc_error badError{};
  std::string badMetaKey; // the first bad metadata value in key order
  const char *badMetaKind = nullptr;

  // Duplicate keys below the top level are noted as they come; duplicate
  // tensor names are found by sorting (a hash set of a million names costs
  // more than the rest of the reading), and the earlier key wins.
  void noteDuplicate(const std::string &k, size_t depth, uint64_t order) {
    if (!hasDuplicate || order < duplicateOrder) {
      hasDuplicate = true;
      duplicate = k;
      duplicateDepth = depth;
      duplicateOrder = order;
    }
  }
  void noteBad(const std::string &entryName, const nncc_error &e) {
    if (bad && badName <= entryName)
      return;
    bad = true;
    badName = entryName;
    badError = e;
  }
  void metaValueBad(const char *kind) {
    if (!badMetaKind || metaKey < badMetaKey) {
      badMetaKey = metaKey;
      badMetaKind = kind;
    }
  }
  void finishEntry(const json &info);
  void finishMetadata();
  void push(Kind kind, bool entryValue = false, json *node = nullptr) {
    stack.push_back(Frame{kind, entryValue, node, {}});
  }
  bool scalar(json &&v);
  bool open(bool object);
  bool close();
};

void HeaderReader::finishEntry(const json &info) {
  if (counting)
    return;
  if (name == "__metadata__") { // an object goes through Metadata instead
    nncc_error e{};
    fail(&e, NNCC_ERROR_CORRUPT_FILE,
         "%s: __metadata__ is a JSON %s, expected an object of strings", source.c_str(),
         info.type_name());
    noteBad(name, e);
    return;
  }
  TensorEntry t;
  t.name = name;
  t.order = nameOrder;
  nncc_error e{};
  if (parseEntry(source, info, dataSize, t, &e) != NNCC_OK)
    noteBad(name, e);
  tensors.push_back(std::move(t)); // bad ones too: their names may repeat
}

void HeaderReader::sortTensors() {
  std::sort(tensors.begin(), tensors.end(), [](const TensorEntry &a, const TensorEntry &b) {
    int c = a.name.compare(b.name);
    return c != 0 ? c < 0 : a.order < b.order;
  });
  for (size_t i = 1; i < tensors.size(); ++i)
    if (tensors[i].name == tensors[i - 1].name)
      noteDuplicate(tensors[i].name, 1, tensors[i].order);
}

void HeaderReader::finishMetadata() {
  if (!badMetaKind)
    return;
  nncc_error e{};
  fail(&e, NNCC_ERROR_CORRUPT_FILE, "%s: __metadata__ %s is a JSON %s, expected a string",
       source.c_str(), quote(badMetaKey).c_str(), badMetaKind);
  noteBad("__metadata__", e);
}

bool HeaderReader::key(string_t &k) {
  Frame &top = stack.back();
  const uint64_t order = keys++;
  // An escaped \u0000 in a name: the C API's NUL-terminated names could not
  // tell it from its prefix (two tensors reading as one name).
  if ((top.kind == Kind::Tensors || top.kind == Kind::Metadata) &&
      k.find('\0') != std::string::npos) {
    nncc_error e{};
    fail(&e, NNCC_ERROR_CORRUPT_FILE, "%s: the %s %s contains a NUL character (\\u0000)",
         source.c_str(), top.kind == Kind::Tensors ? "tensor name" : "metadata key",
         quote(k).c_str());
    noteBad(top.kind == Kind::Tensors ? k : std::string("__metadata__"), e);
  }
  switch (top.kind) {
  case Kind::Tensors:
    if (k == "__metadata__") {
      if (seenMetadata && !counting)
        noteDuplicate(k, 1, order);
      seenMetadata = true;
    } else {
      ++tensorCount;
    }
    counting = counting || tensorCount > kMaxTensors;
    name = std::move(k);
    nameOrder = order;
    return true;
  case Kind::Metadata:
    if (!top.keys.insert(k).second)
      noteDuplicate(k, stack.size(), order);
    metaKey = std::move(k);
    return true;
  case Kind::Entry: {
    slotIsArray = k == "shape" || k == "data_offsets";
    bool known = slotIsArray || k == "dtype";
    if (known ? entry.contains(k) : !top.keys.insert(k).second)
      noteDuplicate(k, stack.size(), order);
    slot = known ? &entry[k] : nullptr;
    return true;
  }
  case Kind::Skip:
    if (!counting && !top.keys.insert(k).second)
      noteDuplicate(k, stack.size(), order);
    return true;
  case Kind::Array:
    break; // arrays have no keys
  }
  return true;
}

bool HeaderReader::scalar(json &&v) {
  if (stack.empty()) { // the whole header
    rootKind = v.type_name();
    return true;
  }
  Frame &top = stack.back();
  switch (top.kind) {
  case Kind::Tensors:
    finishEntry(v);
    return true;
  case Kind::Metadata:
    if (v.is_string())
      metadata.emplace_back(metaKey, std::move(v.get_ref<std::string &>()));
    else
      metaValueBad(v.type_name());
    return true;
  case Kind::Entry:
    if (slot)
      *slot = std::move(v);
    return true;
  case Kind::Array:
    top.node->push_back(std::move(v));
    return true;
  case Kind::Skip:
    return true;
  }
  return true;
}

bool HeaderReader::open(bool object) {
  if (stack.size() >= kMaxDepth) {
    tooDeep = true;
    return false;
  }
  const char *kind = object ? "object" : "array";
  if (stack.empty()) {
    if (object) {
      push(Kind::Tensors);
    } else {
      rootKind = kind;
      push(Kind::Skip);
    }
    return true;
  }
  Frame &top = stack.back();
  switch (top.kind) {
  case Kind::Tensors:
    if (counting) {
      push(Kind::Skip);
    } else if (object && name == "__metadata__") {
      push(Kind::Metadata);
    } else if (object) {
      entry = json::object();
      push(Kind::Entry, /*entryValue=*/true);
    } else {
      push(Kind::Skip, /*entryValue=*/true); // "entry is a JSON array"
    }
    return true;
  case Kind::Metadata:
    metaValueBad(kind);
    push(Kind::Skip);
    return true;
  case Kind::Entry: {
    // shape and data_offsets arrays are read; other containers are kept
    // as empty ones of their kind, which is all parseEntry reports of them.
    json *into = slot;
    slot = nullptr;
    if (!into) {
      push(Kind::Skip);
    } else if (!object) {
      *into = json::array();
      push(slotIsArray ? Kind::Array : Kind::Skip, false, into);
    } else {
      *into = json::object();
      push(Kind::Skip);
    }
    return true;
  }
  case Kind::Array:
    top.node->push_back(object ? json::object() : json::array());
    push(Kind::Skip);
    return true;
  case Kind::Skip:
    push(Kind::Skip);
    return true;
  }
  return true;
}

bool HeaderReader::close() {
  Frame top = std::move(stack.back());
  stack.pop_back();
  if (top.kind == Kind::Metadata) {
    finishMetadata();
  } else if (top.entryValue) {
    finishEntry(top.kind == Kind::Entry ? entry : json::array());
    entry = json();
  }
  return true;
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
  // Safetensors pads headers with spaces; JSON allows no raw NUL anywhere
  // (Python's json and the Rust reader refuse it, nlohmann stops at it).
  if (const void *nul = std::memchr(text, 0, n))
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: header is not valid JSON: NUL byte at file offset %llu (headers are "
                "padded with spaces)",
                src, (unsigned long long)(8 + (static_cast<const char *>(nul) - text)));
  f.dataStart = 8 + n;
  uint64_t dataSize = f.size - f.dataStart;

  HeaderReader reader(f.source, dataSize);
  bool parsed = json::sax_parse(text, text + n, &reader);
  if (reader.tooDeep)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: header nests JSON arrays and objects deeper than %zu levels (a "
                "safetensors header needs 3)",
                src, kMaxDepth);
  if (!parsed)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: header is not valid JSON (near file offset %llu): %s", src,
                (unsigned long long)(8 + (reader.errorPosition ? reader.errorPosition - 1 : 0)),
                reader.errorWhat.empty() ? "parse error" : reader.errorWhat.c_str());
  if (reader.tensorCount > kMaxTensors)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: header lists %llu tensors, more than the %llu this reader accepts", src,
                (unsigned long long)reader.tensorCount, (unsigned long long)kMaxTensors);
  reader.sortTensors();
  if (reader.hasDuplicate)
    return fail(err, NNCC_ERROR_CORRUPT_FILE, "%s: duplicate %s %s in header", src,
                reader.duplicateDepth == 1 ? "tensor name" : "key",
                quote(reader.duplicate).c_str());
  if (reader.rootKind)
    return fail(err, NNCC_ERROR_CORRUPT_FILE,
                "%s: header is a JSON %s, expected an object", src, reader.rootKind);
  if (reader.hasBadEntry())
    return reader.badEntry(err);
  f.tensors = std::move(reader.tensors); // sorted by name
  f.metadata = std::move(reader.metadata);
  std::sort(f.metadata.begin(), f.metadata.end());

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
  int fd = -1;
  uint64_t size = 0;
  if (nncc_status s = openRegularFile(path, fd, size, err))
    return s;
  auto *f = new nncc_safetensors();
  f->source = source;
  f->size = size;
  if (f->size > 0) {
    void *map = mmap(nullptr, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      delete f;
      return fail(err, e == ENOMEM ? NNCC_ERROR_OUT_OF_MEMORY : NNCC_ERROR_IO,
                  "cannot map %s (%llu bytes): %s", source.c_str(),
                  (unsigned long long)size, std::strerror(e));
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
                file->source.c_str(),
                formatCallerShape(expected_shape, rank, t->shape.size()).c_str(),
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
  uint8_t len[8];
  putLength(len, header.size());
  auto fill = [&](int fd) {
    bool good = writeAll(fd, len, 8) && writeAll(fd, header.data(), header.size());
    for (size_t i = 0; good && i < writer->entries.size(); ++i)
      good = writeAll(fd, writer->entries[i].data, writer->entries[i].nbytes);
    return good ? 0 : errno ? errno : EIO;
  };
  if (nncc_status s = writeFileAtomically(path, fill, err))
    return s;
  return ok(err);
}

} // extern "C"
