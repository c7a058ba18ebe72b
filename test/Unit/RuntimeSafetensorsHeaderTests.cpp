//===- RuntimeSafetensorsHeaderTests.cpp - the header reader's limits -----===//
//
// Large headers, the tensor-count and depth bounds, NUL bytes, and the
// order in which a header with several faults reports them (the reader
// reads the header in one SAX pass; it must say what a walk of the whole
// DOM in name order would say).
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

using namespace nncc_test;

namespace {

void expectRejected(const std::string &bytes, nncc_status status, const std::string &sub) {
  Opened o;
  openMemory(bytes, o);
  EXPECT_EQ(o.file, nullptr);
  EXPECT_STATUS_MSG(o.status, o.err, status, sub);
}

std::string u8Entry(uint64_t begin, uint64_t end) {
  return "{\"dtype\":\"U8\",\"shape\":[" + std::to_string(end - begin) +
         "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
}

const char *const kGood = "{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}";

} // namespace

// 100,000 tensors: nlohmann's callback parser, which the reader used to
// run, took minutes for this (it rescans the header object at the end of
// every entry); the one-pass reader takes a fraction of a second. No time
// limit here: the test states the size, the commit the measurement.
TEST(SafetensorsHeader, OpensAHundredThousandTensors) {
  const int n = 100000;
  std::string header = "{";
  std::string data;
  for (int i = 0; i < n; ++i) {
    if (i)
      header += ',';
    header += "\"layers." + std::to_string(i) + ".weight\":" + u8Entry(i, i + 1);
    data += static_cast<char>(i % 251);
  }
  header += "}";
  Opened o;
  openMemory(stFile(header, data), o);
  ASSERT_EQ(o.status, NNCC_OK) << o.err.message;
  ASSERT_EQ(nncc_safetensors_count(o.file), static_cast<size_t>(n));
  for (int i : {0, 1, 777, 54321, n - 1}) {
    std::string name = "layers." + std::to_string(i) + ".weight";
    nncc_tensor_view v;
    ASSERT_EQ(nncc_safetensors_find(o.file, name.c_str(), &v, &o.err), NNCC_OK) << name;
    EXPECT_EQ(v.nbytes, 1u);
    EXPECT_EQ(*static_cast<const unsigned char *>(v.data), i % 251) << name;
  }
  // Indexed in ascending name order.
  nncc_tensor_view a, b;
  for (size_t i = 1; i < static_cast<size_t>(n); i += 997) {
    ASSERT_EQ(nncc_safetensors_tensor_at(o.file, i - 1, &a, nullptr), NNCC_OK);
    ASSERT_EQ(nncc_safetensors_tensor_at(o.file, i, &b, nullptr), NNCC_OK);
    EXPECT_LT(std::strcmp(a.name, b.name), 0) << a.name << " " << b.name;
  }
}

// At most 1,000,000 tensors; the message gives the count. The entries are
// numbers, not entries, since the count is checked before them.
TEST(SafetensorsHeader, RefusesMoreThanAMillionTensors) {
  auto header = [](int n) {
    std::string h = "{";
    for (int i = 0; i < n; ++i)
      h += (i ? ",\"" : "\"") + std::to_string(i) + "\":0";
    return h + "}";
  };
  expectRejected(stFile(header(1000001)), NNCC_ERROR_CORRUPT_FILE,
                 "header lists 1000001 tensors, more than the 1000000 this reader accepts");
  // A million is within the bound: the first bad entry is what fails.
  expectRejected(stFile(header(1000000)), NNCC_ERROR_CORRUPT_FILE,
                 "tensor '0': entry is a JSON number");
  // __metadata__ is not a tensor.
  std::string h = header(1000000);
  h.insert(1, "\"__metadata__\":{},");
  expectRejected(stFile(h), NNCC_ERROR_CORRUPT_FILE, "tensor '0': entry is a JSON number");
}

// Safetensors pads headers with spaces; nlohmann took a NUL for the end of
// the input and accepted anything before it.
TEST(SafetensorsHeader, RefusesNulBytes) {
  expectRejected(stFile(std::string("{}\0\0\0\0\0\0", 8)), NNCC_ERROR_CORRUPT_FILE,
                 "header is not valid JSON: NUL byte at file offset 10");
  std::string h = std::string("{\"w\":") + kGood + "}";
  expectRejected(stFile(h + std::string(3, '\0')), NNCC_ERROR_CORRUPT_FILE,
                 "NUL byte at file offset " + std::to_string(8 + h.size()));
  expectRejected(stFile(std::string("{ \0}", 4)), NNCC_ERROR_CORRUPT_FILE,
                 "NUL byte at file offset 10");
  Opened o;
  openMemory(stFile(h + "   "), o);
  EXPECT_EQ(o.status, NNCC_OK) << o.err.message;
}

// An escaped NUL (\u0000) in a tensor name or metadata key: the C API's
// NUL-terminated names would read "a\u0000b" as "a" (found by the fuzzer).
TEST(SafetensorsHeader, RefusesEscapedNulInNames) {
  expectRejected(stFile(std::string("{\"a\\u0000b\":") + kGood + "}"),
                 NNCC_ERROR_CORRUPT_FILE, "the tensor name 'a\\x00b' contains a NUL character");
  expectRejected(stFile(std::string("{\"a\":") + kGood + ",\"a\\u0000\":" + kGood + "}"),
                 NNCC_ERROR_CORRUPT_FILE, "contains a NUL character");
  expectRejected(stFile("{\"__metadata__\":{\"k\\u0000x\":\"v\"}}"), NNCC_ERROR_CORRUPT_FILE,
                 "the metadata key 'k\\x00x' contains a NUL character");
}

// A header is three levels deep; 64 are accepted (in a field the reader
// ignores), deeper nesting is refused before it costs memory per level.
TEST(SafetensorsHeader, BoundsTheNesting) {
  auto nested = [](int levels) {
    return "{\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0],\"extra\":" +
           std::string(levels, '[') + std::string(levels, ']') + "}}";
  };
  Opened o;
  openMemory(stFile(nested(62)), o); // 64 levels with the header and the entry
  EXPECT_EQ(o.status, NNCC_OK) << o.err.message;
  expectRejected(stFile(nested(63)), NNCC_ERROR_CORRUPT_FILE,
                 "header nests JSON arrays and objects deeper than 64 levels");
  expectRejected(stFile(std::string(100000, '[') + std::string(100000, ']')),
                 NNCC_ERROR_CORRUPT_FILE, "deeper than 64 levels");
}

// Several faults: a syntax error anywhere first, then duplicates (the first
// in the file), then a header that is not an object, then the first bad
// entry in name order (__metadata__ sorts before lower-case names).
TEST(SafetensorsHeader, ReportsFaultsInTheOrderOfADomWalk) {
  expectRejected(stFile("{\"b\":1,\"a\":2}"), NNCC_ERROR_CORRUPT_FILE,
                 "tensor 'a': entry is a JSON number");
  expectRejected(stFile(std::string("{\"a\":3,\"__metadata__\":{\"k\":1}}")),
                 NNCC_ERROR_CORRUPT_FILE, "__metadata__ 'k' is a JSON number, expected a string");
  expectRejected(stFile("{\"__metadata__\":{\"z\":1,\"y\":[]}}"), NNCC_ERROR_CORRUPT_FILE,
                 "__metadata__ 'y' is a JSON array, expected a string");
  expectRejected(stFile("{\"__metadata__\":[1]}"), NNCC_ERROR_CORRUPT_FILE,
                 "__metadata__ is a JSON array, expected an object of strings");
  expectRejected(stFile("{\"a\":1,\"b\":2"), NNCC_ERROR_CORRUPT_FILE, "not valid JSON");
  expectRejected(stFile(std::string("{\"a\":1,\"b\":") + kGood + ",\"b\":" + kGood + "}"),
                 NNCC_ERROR_CORRUPT_FILE, "duplicate tensor name 'b' in header");
  // A duplicate below the top level, also inside what the reader skips.
  expectRejected(
      stFile("{\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0],\"x\":{\"q\":1,"
             "\"q\":2}}}"),
      NNCC_ERROR_CORRUPT_FILE, "duplicate key 'q' in header");
  expectRejected(stFile("[{\"q\":1,\"q\":2}]"), NNCC_ERROR_CORRUPT_FILE,
                 "duplicate key 'q' in header");
  expectRejected(stFile("[1, 2]"), NNCC_ERROR_CORRUPT_FILE, "header is a JSON array");
  // Of two duplicates the earlier one is named, whatever its level.
  std::string dupX = "{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}";
  expectRejected(stFile("{\"a\":" + dupX + ",\"z\":" + kGood + ",\"z\":" + kGood + "}"),
                 NNCC_ERROR_CORRUPT_FILE, "duplicate key 'dtype'");
  expectRejected(stFile(std::string("{\"z\":") + kGood + ",\"z\":" + kGood + ",\"a\":" + dupX +
                        "}"),
                 NNCC_ERROR_CORRUPT_FILE, "duplicate tensor name 'z'");
  // The empty name too (the DOM reader took "" for "no duplicate yet").
  expectRejected(stFile(std::string("{\"\":") + kGood + ",\"\":" + kGood + "}"),
                 NNCC_ERROR_CORRUPT_FILE, "duplicate tensor name '' in header");
  expectRejected(stFile("{\"__metadata__\":{},\"__metadata__\":{}}"), NNCC_ERROR_CORRUPT_FILE,
                 "duplicate tensor name '__metadata__'");
  expectRejected(stFile("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}"),
                 NNCC_ERROR_CORRUPT_FILE, "duplicate key 'k'");
}

// What the reader keeps of an entry is what parseEntry reports on.
TEST(SafetensorsHeader, DescribesEntriesItDoesNotKeep) {
  expectRejected(stFile("{\"w\":[1,2]}"), NNCC_ERROR_CORRUPT_FILE,
                 "tensor 'w': entry is a JSON array, expected an object");
  expectRejected(stFile("{\"w\":{\"dtype\":[\"U8\"],\"shape\":[0],\"data_offsets\":[0,0]}}"),
                 NNCC_ERROR_CORRUPT_FILE, "tensor 'w': dtype is a JSON array");
  expectRejected(stFile("{\"w\":{\"dtype\":\"U8\",\"shape\":[1,{\"a\":1}],\"data_offsets\":[0,"
                        "1]}}",
                        "x"),
                 NNCC_ERROR_CORRUPT_FILE, "tensor 'w': shape[1] is a JSON object");
  expectRejected(stFile("{\"w\":{\"dtype\":\"U8\",\"shape\":{},\"data_offsets\":[0,0]}}"),
                 NNCC_ERROR_CORRUPT_FILE, "tensor 'w': shape is a JSON object");
  expectRejected(stFile("{\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[[0],0]}}"),
                 NNCC_ERROR_CORRUPT_FILE, "data_offsets[0] = a JSON array");
  expectRejected(stFile("{\"w\":{\"shape\":[0],\"extra\":{\"dtype\":\"U8\"},"
                        "\"data_offsets\":[0,0]}}"),
                 NNCC_ERROR_CORRUPT_FILE, "tensor 'w': missing \"dtype\"");
  // Unknown fields are ignored, whatever they hold.
  Opened o;
  openMemory(stFile("{\"__metadata__\":{\"b\":\"2\",\"a\":\"1\"},\"w\":{\"note\":{\"x\":[1,"
                    "{\"y\":null}]},\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
                    "ab"),
                o);
  ASSERT_EQ(o.status, NNCC_OK) << o.err.message;
  nncc_tensor_view v;
  ASSERT_EQ(nncc_safetensors_find(o.file, "w", &v, &o.err), NNCC_OK);
  EXPECT_EQ(v.rank, 1);
  EXPECT_EQ(v.shape[0], 2);
  // Metadata in ascending key order.
  const char *key = nullptr, *value = nullptr;
  ASSERT_EQ(nncc_safetensors_metadata_at(o.file, 0, &key, &value, nullptr), NNCC_OK);
  EXPECT_STREQ(key, "a");
  EXPECT_STREQ(value, "1");
  ASSERT_EQ(nncc_safetensors_metadata_at(o.file, 1, &key, &value, nullptr), NNCC_OK);
  EXPECT_STREQ(key, "b");
}

// Names from a file reach messages escaped: a C1 control (U+009B, the
// one-byte CSI) is valid UTF-8 but must not reach a terminal.
TEST(SafetensorsHeader, EscapesNamesInMessages) {
  std::string name = "w\xc2\x9b" "2J\\u001b[31m"; // JSON escapes the ESC
  std::string h = "{\"" + name + "\":" + kGood + ",\"" + name + "\":" + kGood + "}";
  Opened o;
  openMemory(stFile(h), o);
  EXPECT_STATUS_MSG(o.status, o.err, NNCC_ERROR_CORRUPT_FILE,
                    "duplicate tensor name 'w\\xc2\\x9b2J\\x1b[31m'");
  EXPECT_EQ(std::strchr(o.err.message, '\x1b'), nullptr);
  EXPECT_EQ(std::strstr(o.err.message, "\xc2\x9b"), nullptr);
}

// nncc_safetensors_get with a rank that is not the tensor's reads no more
// of the caller's expected shape than the tensor has dims: the array ends
// at an unreadable page.
TEST(SafetensorsHeader, GetReadsNoMoreDimsThanTheTensorHas) {
  Opened o;
  openMemory(stFile("{\"w\":{\"dtype\":\"U8\",\"shape\":[2,3],\"data_offsets\":[0,6]}}",
                    "abcdef"),
             o);
  ASSERT_EQ(o.status, NNCC_OK) << o.err.message;
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void *base = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(base, MAP_FAILED);
  ASSERT_EQ(mprotect(static_cast<char *>(base) + page, page, PROT_NONE), 0);
  int64_t *shape = reinterpret_cast<int64_t *>(static_cast<char *>(base) + page) - 2;
  shape[0] = 2;
  shape[1] = 4;
  nncc_tensor_view v;
  EXPECT_STATUS_MSG(nncc_safetensors_get(o.file, "w", NNCC_DTYPE_U8, 1000000, shape, &v, &o.err),
                    o.err, NNCC_ERROR_SHAPE_MISMATCH,
                    "expected shape [2, 4, ... (1000000 dims)], got [2, 3]");
  EXPECT_STATUS_MSG(nncc_safetensors_get(o.file, "w", NNCC_DTYPE_U8, 2, shape, &v, &o.err),
                    o.err, NNCC_ERROR_SHAPE_MISMATCH, "expected shape [2, 4], got [2, 3]");
  munmap(base, 2 * page);
}
