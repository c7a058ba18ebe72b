//===- RuntimeSafetensorsTests.cpp - reader validation, writer, round trips ===//

#include "RuntimeTestUtil.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <vector>

using namespace nncc_test;

namespace {

// Opens `bytes`, expects failure with `status` and a message containing `sub`.
void expectRejected(const std::string &bytes, nncc_status status, const std::string &sub) {
  Opened o;
  openMemory(bytes, o);
  EXPECT_EQ(o.file, nullptr);
  EXPECT_STATUS_MSG(o.status, o.err, status, sub);
}

std::string f32Entry(const std::string &shape, const std::string &offsets) {
  return "{\"dtype\":\"F32\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}

std::string tempPath(const char *stem) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/nncc_rt_" + stem + "_" +
         std::to_string(getpid()) + ".safetensors";
}

} // namespace

// --- length field -------------------------------------------------------

TEST(SafetensorsReader, RejectsFilesShorterThanTheLengthField) {
  expectRejected("", NNCC_ERROR_CORRUPT_FILE, "file is 0 bytes, shorter than the 8-byte");
  expectRejected("\x01\x02\x03\x04\x05", NNCC_ERROR_CORRUPT_FILE, "file is 5 bytes");
}

TEST(SafetensorsReader, RejectsAbsurdHeaderLengths) {
  expectRejected(stFileWithLength(200ull * 1000 * 1000, "{}"), NNCC_ERROR_CORRUPT_FILE,
                 "header length 200000000 exceeds the 100 MB limit");
  expectRejected(stFileWithLength(~0ull, "{}"), NNCC_ERROR_CORRUPT_FILE,
                 "exceeds the 100 MB limit");
  expectRejected(stFileWithLength(50, "{}"), NNCC_ERROR_CORRUPT_FILE,
                 "header length 50 exceeds the file size (10 bytes, 2 after the length field)");
  expectRejected(stFileWithLength(0, "{}"), NNCC_ERROR_CORRUPT_FILE, "header length is 0");
}

// --- JSON ---------------------------------------------------------------

TEST(SafetensorsReader, RejectsNonUtf8Headers) {
  expectRejected(stFile("{\"a\xff\":1}"), NNCC_ERROR_CORRUPT_FILE,
                 "header is not valid UTF-8 (byte 0xff at file offset 11)");
  // Overlong encoding of '/' and a UTF-16 surrogate.
  expectRejected(stFile("{\"\xc0\xaf\":1}"), NNCC_ERROR_CORRUPT_FILE, "not valid UTF-8");
  expectRejected(stFile("{\"\xed\xa0\x80\":1}"), NNCC_ERROR_CORRUPT_FILE, "not valid UTF-8");
}

TEST(SafetensorsReader, RejectsGarbageJson) {
  expectRejected(stFile("{\"a\": [1, 2}"), NNCC_ERROR_CORRUPT_FILE, "header is not valid JSON");
  expectRejected(stFile("not json at all"), NNCC_ERROR_CORRUPT_FILE, "not valid JSON");
  expectRejected(stFile("{} trailing"), NNCC_ERROR_CORRUPT_FILE, "not valid JSON");
  expectRejected(stFile(std::string("{\"a\"\0:1}", 8)), NNCC_ERROR_CORRUPT_FILE,
                 "not valid JSON");
}

TEST(SafetensorsReader, RejectsNonObjectHeaders) {
  expectRejected(stFile("[1, 2]"), NNCC_ERROR_CORRUPT_FILE,
                 "header is a JSON array, expected an object");
  expectRejected(stFile("42"), NNCC_ERROR_CORRUPT_FILE, "header is a JSON number");
  expectRejected(stFile("{\"w\": 3}"), NNCC_ERROR_CORRUPT_FILE,
                 "tensor 'w': entry is a JSON number, expected an object");
}

TEST(SafetensorsReader, RejectsMissingFields) {
  expectRejected(stFile("{\"w\": {\"shape\": [], \"data_offsets\": [0, 4]}}", "abcd"),
                 NNCC_ERROR_CORRUPT_FILE, "tensor 'w': missing \"dtype\"");
  expectRejected(stFile("{\"w\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", "abcd"),
                 NNCC_ERROR_CORRUPT_FILE, "tensor 'w': missing \"shape\"");
  expectRejected(stFile("{\"w\": {\"dtype\": \"F32\", \"shape\": []}}", "abcd"),
                 NNCC_ERROR_CORRUPT_FILE, "tensor 'w': missing \"data_offsets\"");
}

// --- dtype ------------------------------------------------------------------

TEST(SafetensorsReader, RejectsUnknownDtypes) {
  expectRejected(stFile("{\"w\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                        "abcd"),
                 NNCC_ERROR_CORRUPT_FILE,
                 "tensor 'w': unknown dtype 'F33' (supported: F64 F32 F16 BF16 I64 I32 "
                 "I16 I8 U8 BOOL)");
  expectRejected(stFile("{\"w\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                        "abcd"),
                 NNCC_ERROR_CORRUPT_FILE, "unknown dtype 'f32'");
  // Valid in the format, not supported here.
  expectRejected(stFile("{\"w\":{\"dtype\":\"U32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                        "abcd"),
                 NNCC_ERROR_UNSUPPORTED, "unknown dtype 'U32'");
  expectRejected(stFile("{\"w\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd"),
                 NNCC_ERROR_CORRUPT_FILE, "tensor 'w': dtype is a JSON number, expected a string");
}

// --- shape --------------------------------------------------------------------

TEST(SafetensorsReader, RejectsBadShapeEntries) {
  expectRejected(stFile("{\"w\":" + f32Entry("[2, -3]", "[0, 24]") + "}", std::string(24, 'x')),
                 NNCC_ERROR_CORRUPT_FILE, "tensor 'w': shape[1] = -3 is negative");
  expectRejected(stFile("{\"w\":" + f32Entry("[2.5]", "[0, 8]") + "}", std::string(8, 'x')),
                 NNCC_ERROR_CORRUPT_FILE, "tensor 'w': shape[0] = 2.5 is not an integer");
  expectRejected(stFile("{\"w\":" + f32Entry("[2.0]", "[0, 8]") + "}", std::string(8, 'x')),
                 NNCC_ERROR_CORRUPT_FILE, "shape[0] = 2 is not an integer");
  expectRejected(stFile("{\"w\":" + f32Entry("[\"2\"]", "[0, 8]") + "}", std::string(8, 'x')),
                 NNCC_ERROR_CORRUPT_FILE,
                 "tensor 'w': shape[0] is a JSON string, expected a non-negative integer");
  expectRejected(stFile("{\"w\":" + f32Entry("3", "[0, 8]") + "}", std::string(8, 'x')),
                 NNCC_ERROR_CORRUPT_FILE, "tensor 'w': shape is a JSON number, expected an array");
  // Beyond uint64: nlohmann reads it as a float.
  expectRejected(stFile("{\"w\":" + f32Entry("[18446744073709551616]", "[0, 8]") + "}",
                        std::string(8, 'x')),
                 NNCC_ERROR_CORRUPT_FILE, "is not an integer (or does not fit in 64 bits)");
  expectRejected(stFile("{\"w\":" + f32Entry("[9223372036854775808]", "[0, 8]") + "}",
                        std::string(8, 'x')),
                 NNCC_ERROR_CORRUPT_FILE, "shape[0] = 9223372036854775808 does not fit in int64");
}

TEST(SafetensorsReader, RejectsShapeProductOverflow) {
  // 2^32 * 2^32 elements overflows the element count.
  expectRejected(stFile("{\"w\":" + f32Entry("[4294967296, 4294967296]", "[0, 0]") + "}"),
                 NNCC_ERROR_CORRUPT_FILE,
                 "tensor 'w': shape [4294967296, 4294967296] with dtype F32 overflows 64-bit");
  // 2^62 elements fit, 2^62 * 4 bytes do not.
  expectRejected(stFile("{\"w\":" + f32Entry("[4611686018427387904]", "[0, 0]") + "}"),
                 NNCC_ERROR_CORRUPT_FILE, "overflows 64-bit byte counts");
  // A zero dim after huge ones is still an overflow of the running product.
  expectRejected(
      stFile("{\"w\":" + f32Entry("[4294967296, 4294967296, 0]", "[0, 0]") + "}"),
      NNCC_ERROR_CORRUPT_FILE, "overflows");
}

// --- data_offsets -------------------------------------------------------------

TEST(SafetensorsReader, RejectsBadDataOffsets) {
  std::string d16(16, 'x');
  expectRejected(stFile("{\"w\":" + f32Entry("[4]", "[0]") + "}", d16), NNCC_ERROR_CORRUPT_FILE,
                 "tensor 'w': data_offsets must be an array of 2 non-negative integers, got "
                 "an array of 1");
  expectRejected(stFile("{\"w\":" + f32Entry("[4]", "[0, 8, 16]") + "}", d16),
                 NNCC_ERROR_CORRUPT_FILE, "got an array of 3");
  expectRejected(stFile("{\"w\":" + f32Entry("[4]", "{}") + "}", d16), NNCC_ERROR_CORRUPT_FILE,
                 "got a JSON object");
  expectRejected(stFile("{\"w\":" + f32Entry("[4]", "[-16, 0]") + "}", d16),
                 NNCC_ERROR_CORRUPT_FILE,
                 "tensor 'w': data_offsets[0] = -16 is not a non-negative 64-bit integer");
  expectRejected(stFile("{\"w\":" + f32Entry("[4]", "[0, 16.0]") + "}", d16),
                 NNCC_ERROR_CORRUPT_FILE, "data_offsets[1] = 16 is not a non-negative 64-bit");
  expectRejected(stFile("{\"w\":" + f32Entry("[4]", "[0, \"16\"]") + "}", d16),
                 NNCC_ERROR_CORRUPT_FILE, "data_offsets[1] = a JSON string is not");
  expectRejected(stFile("{\"w\":" + f32Entry("[0]", "[8, 0]") + "}", d16), NNCC_ERROR_CORRUPT_FILE,
                 "tensor 'w': data_offsets [8, 0] end before begin");
  expectRejected(stFile("{\"w\":" + f32Entry("[4]", "[8, 24]") + "}", d16),
                 NNCC_ERROR_CORRUPT_FILE,
                 "tensor 'w': data_offsets [8, 24] end beyond the data buffer (16 bytes)");
  expectRejected(stFile("{\"w\":" + f32Entry("[4]", "[0, 12]") + "}", d16),
                 NNCC_ERROR_CORRUPT_FILE,
                 "tensor 'w': data_offsets [0, 12] span 12 bytes but dtype F32 and shape [4] "
                 "need 16 bytes");
}

TEST(SafetensorsReader, RejectsOverlappingRanges) {
  std::string header = "{\"a\":" + f32Entry("[4]", "[0, 16]") + ",\"b\":" +
                       f32Entry("[4]", "[8, 24]") + "}";
  expectRejected(stFile(header, std::string(24, 'x')), NNCC_ERROR_CORRUPT_FILE,
                 "tensors 'a' [0, 16) and 'b' [8, 24) overlap in the data buffer");
  // A range nested inside a long one, with a short one between them in order.
  header = "{\"long\":" + f32Entry("[8]", "[0, 32]") + ",\"x\":" + f32Entry("[1]", "[4, 8]") +
           "}";
  expectRejected(stFile(header, std::string(32, 'x')), NNCC_ERROR_CORRUPT_FILE,
                 "tensors 'long' [0, 32) and 'x' [4, 8) overlap");
  // Empty tensors never overlap anything.
  header = "{\"a\":" + f32Entry("[4]", "[0, 16]") + ",\"e\":" + f32Entry("[0]", "[8, 8]") + "}";
  Opened o;
  openMemory(stFile(header, std::string(16, 'x')), o);
  EXPECT_EQ(o.status, NNCC_OK) << o.err.message;
}

TEST(SafetensorsReader, RejectsDuplicateNames) {
  std::string header = "{\"w\":" + f32Entry("[1]", "[0, 4]") + ",\"w\":" +
                       f32Entry("[1]", "[4, 8]") + "}";
  expectRejected(stFile(header, std::string(8, 'x')), NNCC_ERROR_CORRUPT_FILE,
                 "duplicate tensor name 'w' in header");
  header = "{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  expectRejected(stFile(header, std::string(4, 'x')), NNCC_ERROR_CORRUPT_FILE,
                 "duplicate key 'dtype' in header");
}

TEST(SafetensorsReader, RejectsBadMetadata) {
  expectRejected(stFile("{\"__metadata__\": [1]}"), NNCC_ERROR_CORRUPT_FILE,
                 "__metadata__ is a JSON array, expected an object of strings");
  expectRejected(stFile("{\"__metadata__\": {\"epoch\": 3}}"), NNCC_ERROR_CORRUPT_FILE,
                 "__metadata__ 'epoch' is a JSON number, expected a string");
}

// --- valid files ----------------------------------------------------------------

TEST(SafetensorsReader, ReadsAValidFileAndChecksRequests) {
  float a[6] = {1, 2, 3, 4, 5, 6};
  int64_t b[2] = {-7, 1ll << 40};
  std::string data(reinterpret_cast<char *>(a), sizeof a);
  data += std::string(reinterpret_cast<char *>(b), sizeof b);
  std::string header =
      "{\"__metadata__\":{\"format\":\"pt\"},"
      "\"rnn.weight_ih_l0\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
      "\"step\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[24,40]}}";
  Opened o;
  openMemory(stFile(header, data), o);
  ASSERT_EQ(o.status, NNCC_OK) << o.err.message;
  EXPECT_EQ(o.err.message[0], '\0');
  ASSERT_EQ(nncc_safetensors_count(o.file), 2u);
  ASSERT_EQ(nncc_safetensors_metadata_count(o.file), 1u);
  EXPECT_STREQ(nncc_safetensors_metadata_get(o.file, "format"), "pt");
  EXPECT_EQ(nncc_safetensors_metadata_get(o.file, "nope"), nullptr);

  nncc_tensor_view v;
  nncc_error err;
  ASSERT_EQ(nncc_safetensors_tensor_at(o.file, 0, &v, &err), NNCC_OK);
  EXPECT_STREQ(v.name, "rnn.weight_ih_l0"); // ascending name order
  EXPECT_EQ(v.dtype, NNCC_DTYPE_F32);
  EXPECT_EQ(v.rank, 2);
  EXPECT_EQ(v.shape[0], 2);
  EXPECT_EQ(v.shape[1], 3);
  EXPECT_EQ(v.numel, 6u);
  EXPECT_EQ(v.nbytes, 24u);
  EXPECT_EQ(v.file_offset, 8 + header.size());
  EXPECT_EQ(std::memcmp(v.data, a, sizeof a), 0);
  EXPECT_STATUS_MSG(nncc_safetensors_tensor_at(o.file, 2, &v, &err), err,
                    NNCC_ERROR_INVALID_ARGUMENT, "tensor index 2 out of range");

  int64_t shape23[2] = {2, 3}, shape33[2] = {3, 3}, anyBy3[2] = {-1, 3};
  ASSERT_EQ(nncc_safetensors_get(o.file, "rnn.weight_ih_l0", NNCC_DTYPE_F32, 2, shape23, &v,
                                 &err),
            NNCC_OK);
  ASSERT_EQ(nncc_safetensors_get(o.file, "rnn.weight_ih_l0", NNCC_DTYPE_F32, 2, anyBy3, &v,
                                 &err),
            NNCC_OK);
  EXPECT_STATUS_MSG(
      nncc_safetensors_get(o.file, "rnn.weight_ih_l0", NNCC_DTYPE_F32, 2, shape33, &v, &err),
      err, NNCC_ERROR_SHAPE_MISMATCH,
      "tensor 'rnn.weight_ih_l0' in <memory>: expected shape [3, 3], got [2, 3]");
  EXPECT_STATUS_MSG(
      nncc_safetensors_get(o.file, "rnn.weight_ih_l0", NNCC_DTYPE_F32, 1, shape23, &v, &err),
      err, NNCC_ERROR_SHAPE_MISMATCH, "expected shape [2], got [2, 3]");
  EXPECT_STATUS_MSG(
      nncc_safetensors_get(o.file, "rnn.weight_ih_l0", NNCC_DTYPE_F16, 2, shape23, &v, &err),
      err, NNCC_ERROR_DTYPE_MISMATCH,
      "tensor 'rnn.weight_ih_l0' in <memory>: expected dtype F16, got F32");
  EXPECT_STATUS_MSG(nncc_safetensors_find(o.file, "rnn.weight_hh_l0", &v, &err), err,
                    NNCC_ERROR_NOT_FOUND,
                    "tensor 'rnn.weight_hh_l0' not found in <memory> (2 tensors); did you "
                    "mean 'rnn.weight_ih_l0'?");
  EXPECT_STATUS_MSG(nncc_safetensors_find(o.file, "completely.different.name", &v, &err), err,
                    NNCC_ERROR_NOT_FOUND, "(2 tensors)");
  EXPECT_EQ(std::string(err.message).find("did you mean"), std::string::npos);

  int64_t out64[2] = {0, 0};
  int64_t shape2[1] = {2};
  ASSERT_EQ(nncc_safetensors_read_into(o.file, "step", NNCC_DTYPE_I64, 1, shape2, out64,
                                       sizeof out64, &err),
            NNCC_OK);
  EXPECT_EQ(out64[0], -7);
  EXPECT_EQ(out64[1], 1ll << 40);
  EXPECT_STATUS_MSG(nncc_safetensors_read_into(o.file, "step", NNCC_DTYPE_I64, 1, shape2, out64,
                                               8, &err),
                    err, NNCC_ERROR_INVALID_ARGUMENT,
                    "tensor 'step' in <memory> has 16 bytes but the destination holds 8");
}

TEST(SafetensorsReader, AcceptsUnpaddedHeadersAndGaps) {
  // Header of odd length (unaligned data) and a gap between tensors.
  std::string header = "{\"a\":" + f32Entry("[1]", "[0, 4]") + ",\"b\":" +
                       f32Entry("[1]", "[8, 12]") + "}";
  header += " ";
  if (header.size() % 2 == 0)
    header += " ";
  float one = 1.f, two = 2.f;
  std::string data(reinterpret_cast<char *>(&one), 4);
  data += "gap!";
  data += std::string(reinterpret_cast<char *>(&two), 4);
  Opened o;
  openMemory(stFile(header, data), o);
  ASSERT_EQ(o.status, NNCC_OK) << o.err.message;
  float got = 0;
  int64_t s1[1] = {1};
  ASSERT_EQ(nncc_safetensors_read_into(o.file, "b", NNCC_DTYPE_F32, 1, s1, &got, 4, nullptr),
            NNCC_OK);
  EXPECT_EQ(got, 2.f);
}

TEST(SafetensorsReader, ReportsFileErrors) {
  nncc_safetensors *f = reinterpret_cast<nncc_safetensors *>(0x1);
  nncc_error err;
  EXPECT_STATUS_MSG(nncc_safetensors_open("/nonexistent/dir/w.safetensors", &f, &err), err,
                    NNCC_ERROR_NOT_FOUND,
                    "cannot open '/nonexistent/dir/w.safetensors': No such file or directory");
  EXPECT_EQ(f, nullptr);
  EXPECT_STATUS_MSG(nncc_safetensors_open("/", &f, &err), err, NNCC_ERROR_IO,
                    "'/' is not a regular file");
  EXPECT_STATUS_MSG(nncc_safetensors_open(nullptr, &f, &err), err, NNCC_ERROR_INVALID_ARGUMENT,
                    "path is NULL");
  // Errors name the file.
  std::string path = tempPath("short");
  {
    std::ofstream(path, std::ios::binary) << "abc";
  }
  EXPECT_STATUS_MSG(nncc_safetensors_open(path.c_str(), &f, &err), err,
                    NNCC_ERROR_CORRUPT_FILE, "'" + path + "': file is 3 bytes");
  std::remove(path.c_str());
}

// --- writer ----------------------------------------------------------------

namespace {
struct Writer {
  nncc_safetensors_writer *w = nullptr;
  Writer() { EXPECT_EQ(nncc_safetensors_writer_create(&w, nullptr), NNCC_OK); }
  ~Writer() { nncc_safetensors_writer_destroy(w); }
};
} // namespace

TEST(SafetensorsWriter, RoundTripsEveryDtype) {
  Writer w;
  nncc_error err;
  std::vector<double> f64 = {1.5, -2.25, 1e300};
  std::vector<float> f32 = {0.1f, -0.2f, 3.0f, 4.5f, -1e30f, 7.f};
  std::vector<uint16_t> f16 = {nncc_f32_to_f16(1.0f), nncc_f32_to_f16(-0.5f)};
  std::vector<uint16_t> bf16 = {nncc_f32_to_bf16(3.0f), nncc_f32_to_bf16(-1.0f)};
  std::vector<int64_t> i64 = {INT64_MIN, INT64_MAX};
  std::vector<int32_t> i32 = {-1, 2, 3};
  std::vector<int16_t> i16 = {-300, 300};
  std::vector<int8_t> i8 = {-128, 127};
  std::vector<uint8_t> u8 = {0, 255, 7};
  std::vector<uint8_t> b = {1, 0, 1, 1};
  float scalar = 42.f;
  int64_t s3[1] = {3}, s23[2] = {2, 3}, s2[1] = {2}, s4[1] = {4}, s0x5[2] = {0, 5};
  ASSERT_EQ(nncc_safetensors_writer_add(w.w, "f64", NNCC_DTYPE_F64, 1, s3, f64.data(), 24, &err), NNCC_OK) << err.message;
  ASSERT_EQ(nncc_safetensors_writer_add(w.w, "enc.layers.0.w", NNCC_DTYPE_F32, 2, s23, f32.data(), 24, &err), NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_add(w.w, "f16", NNCC_DTYPE_F16, 1, s2, f16.data(), 4, &err), NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_add(w.w, "bf16", NNCC_DTYPE_BF16, 1, s2, bf16.data(), 4, &err), NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_add(w.w, "i64", NNCC_DTYPE_I64, 1, s2, i64.data(), 16, &err), NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_add(w.w, "i32", NNCC_DTYPE_I32, 1, s3, i32.data(), 12, &err), NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_add(w.w, "i16", NNCC_DTYPE_I16, 1, s2, i16.data(), 4, &err), NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_add(w.w, "i8", NNCC_DTYPE_I8, 1, s2, i8.data(), 2, &err), NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_add(w.w, "u8", NNCC_DTYPE_U8, 1, s3, u8.data(), 3, &err), NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_add(w.w, "mask", NNCC_DTYPE_BOOL, 1, s4, b.data(), 4, &err), NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_add(w.w, "scalar", NNCC_DTYPE_F32, 0, nullptr, &scalar, 4, &err), NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_add(w.w, "empty", NNCC_DTYPE_F32, 2, s0x5, nullptr, 0, &err), NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_set_metadata(w.w, "format", "pt", &err), NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_set_metadata(w.w, "note", "ünïcödé \"quoted\"", &err), NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_set_metadata(w.w, "format", "nncc", &err), NNCC_OK);

  void *image = nullptr;
  size_t size = 0;
  ASSERT_EQ(nncc_safetensors_writer_serialize(w.w, &image, &size, &err), NNCC_OK);
  std::string bytes(static_cast<char *>(image), size);
  nncc_free(image);

  // Header: length multiple of 8, padded with spaces, valid JSON object.
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
  std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.find_last_not_of(' '), header.rfind('}'));

  // Same bytes through a file.
  std::string path = tempPath("roundtrip");
  ASSERT_EQ(nncc_safetensors_writer_write(w.w, path.c_str(), &err), NNCC_OK) << err.message;
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), bytes);
  EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0);

  nncc_safetensors *f = nullptr;
  ASSERT_EQ(nncc_safetensors_open(path.c_str(), &f, &err), NNCC_OK) << err.message;
  std::remove(path.c_str());
  EXPECT_EQ(nncc_safetensors_count(f), 12u);
  EXPECT_STREQ(nncc_safetensors_metadata_get(f, "format"), "nncc");
  EXPECT_STREQ(nncc_safetensors_metadata_get(f, "note"), "ünïcödé \"quoted\"");
  nncc_tensor_view v;
  auto check = [&](const char *name, nncc_dtype dt, const void *data, size_t nbytes) {
    ASSERT_EQ(nncc_safetensors_find(f, name, &v, &err), NNCC_OK) << err.message;
    EXPECT_EQ(v.dtype, dt) << name;
    ASSERT_EQ(v.nbytes, nbytes) << name;
    if (nbytes) {
      EXPECT_EQ(std::memcmp(v.data, data, nbytes), 0) << name;
    }
  };
  check("f64", NNCC_DTYPE_F64, f64.data(), 24);
  check("enc.layers.0.w", NNCC_DTYPE_F32, f32.data(), 24);
  check("f16", NNCC_DTYPE_F16, f16.data(), 4);
  check("bf16", NNCC_DTYPE_BF16, bf16.data(), 4);
  check("i64", NNCC_DTYPE_I64, i64.data(), 16);
  check("i32", NNCC_DTYPE_I32, i32.data(), 12);
  check("i16", NNCC_DTYPE_I16, i16.data(), 4);
  check("i8", NNCC_DTYPE_I8, i8.data(), 2);
  check("u8", NNCC_DTYPE_U8, u8.data(), 3);
  check("mask", NNCC_DTYPE_BOOL, b.data(), 4);
  check("scalar", NNCC_DTYPE_F32, &scalar, 4);
  EXPECT_EQ(v.rank, 0);
  check("empty", NNCC_DTYPE_F32, nullptr, 0);
  EXPECT_EQ(v.rank, 2);
  EXPECT_EQ(v.shape[0], 0);
  EXPECT_EQ(v.shape[1], 5);
  // Data offsets are contiguous in insertion order (what HF's reader demands).
  ASSERT_EQ(nncc_safetensors_find(f, "f64", &v, &err), NNCC_OK);
  EXPECT_EQ(v.file_offset, 8 + n);
  // 64-bit data in the first slot of an 8-aligned header is 8-aligned.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data) % 8, 0u);
  nncc_safetensors_close(f);
}

TEST(SafetensorsWriter, RejectsBadTensors) {
  Writer w;
  nncc_error err;
  float x[4] = {};
  int64_t s4[1] = {4}, sneg[1] = {-4}, s2[1] = {2};
  ASSERT_EQ(nncc_safetensors_writer_add(w.w, "x", NNCC_DTYPE_F32, 1, s4, x, 16, &err), NNCC_OK);
  EXPECT_STATUS_MSG(nncc_safetensors_writer_add(w.w, "x", NNCC_DTYPE_F32, 1, s4, x, 16, &err),
                    err, NNCC_ERROR_INVALID_ARGUMENT, "duplicate tensor name 'x'");
  EXPECT_STATUS_MSG(nncc_safetensors_writer_add(w.w, "", NNCC_DTYPE_F32, 1, s4, x, 16, &err),
                    err, NNCC_ERROR_INVALID_ARGUMENT, "tensor name is empty");
  EXPECT_STATUS_MSG(
      nncc_safetensors_writer_add(w.w, "__metadata__", NNCC_DTYPE_F32, 1, s4, x, 16, &err), err,
      NNCC_ERROR_INVALID_ARGUMENT, "reserved");
  EXPECT_STATUS_MSG(nncc_safetensors_writer_add(w.w, "bad\xff", NNCC_DTYPE_F32, 1, s4, x, 16, &err),
                    err, NNCC_ERROR_INVALID_ARGUMENT, "tensor name 'bad\\xff' is not valid UTF-8");
  EXPECT_STATUS_MSG(nncc_safetensors_writer_add(w.w, "y", NNCC_DTYPE_F32, 1, sneg, x, 16, &err),
                    err, NNCC_ERROR_INVALID_ARGUMENT, "tensor 'y': shape[0] = -4 is negative");
  EXPECT_STATUS_MSG(nncc_safetensors_writer_add(w.w, "y", NNCC_DTYPE_F32, 1, s2, x, 16, &err),
                    err, NNCC_ERROR_SHAPE_MISMATCH,
                    "tensor 'y': 16 bytes given but dtype F32 and shape [2] need 8");
  EXPECT_STATUS_MSG(
      nncc_safetensors_writer_add(w.w, "y", NNCC_DTYPE_INVALID, 1, s2, x, 16, &err), err,
      NNCC_ERROR_INVALID_ARGUMENT, "invalid dtype");
  EXPECT_STATUS_MSG(nncc_safetensors_writer_add(w.w, "y", NNCC_DTYPE_F32, 1, s2, nullptr, 8, &err),
                    err, NNCC_ERROR_INVALID_ARGUMENT, "data is NULL");
  EXPECT_STATUS_MSG(nncc_safetensors_writer_write(w.w, "/nonexistent/dir/out.safetensors", &err),
                    err, NNCC_ERROR_NOT_FOUND,
                    "cannot write '/nonexistent/dir/out.safetensors': cannot open its "
                    "directory '/nonexistent/dir'");
}

TEST(SafetensorsWriter, EmptyWriterProducesAValidFile) {
  Writer w;
  void *image = nullptr;
  size_t size = 0;
  ASSERT_EQ(nncc_safetensors_writer_serialize(w.w, &image, &size, nullptr), NNCC_OK);
  EXPECT_EQ(size, 16u); // "{}" padded to 8
  nncc_safetensors *f = nullptr;
  EXPECT_EQ(nncc_safetensors_open_memory(image, size, &f, nullptr), NNCC_OK);
  EXPECT_EQ(nncc_safetensors_count(f), 0u);
  nncc_safetensors_close(f);
  nncc_free(image);
}
