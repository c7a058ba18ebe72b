//===- RuntimeSafetensorsFuzzTests.cpp - mutation fuzzing of the reader ---===//
//
// Thousands of mutated images (byte flips, truncations, length-field edits,
// token substitutions in the header) must each be rejected with a status and
// a message, or accepted with views that stay inside the image. Run this
// binary under -fsanitize=address,undefined to catch out-of-bounds reads
// (see docs/runtime.md).
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <cstring>
#include <random>
#include <set>
#include <vector>

using namespace nncc_test;

namespace {

const std::set<nncc_status> kReaderStatuses = {NNCC_ERROR_CORRUPT_FILE, NNCC_ERROR_UNSUPPORTED,
                                               NNCC_ERROR_OUT_OF_MEMORY};

std::string seedImage() {
  nncc_safetensors_writer *w = nullptr;
  EXPECT_EQ(nncc_safetensors_writer_create(&w, nullptr), NNCC_OK);
  static float f32[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  static int64_t i64[3] = {1, -2, 3};
  static uint16_t f16[4] = {0x3c00, 0xbc00, 0x7c00, 0x0001};
  static uint8_t mask[5] = {1, 0, 1, 0, 1};
  int64_t s34[2] = {3, 4}, s3[1] = {3}, s22[2] = {2, 2}, s5[1] = {5}, s0[1] = {0};
  nncc_safetensors_writer_add(w, "encoder.layers.0.linear1.weight", NNCC_DTYPE_F32, 2, s34, f32,
                              sizeof f32, nullptr);
  nncc_safetensors_writer_add(w, "step", NNCC_DTYPE_I64, 1, s3, i64, sizeof i64, nullptr);
  nncc_safetensors_writer_add(w, "half", NNCC_DTYPE_F16, 2, s22, f16, sizeof f16, nullptr);
  nncc_safetensors_writer_add(w, "mask", NNCC_DTYPE_BOOL, 1, s5, mask, sizeof mask, nullptr);
  nncc_safetensors_writer_add(w, "none", NNCC_DTYPE_I8, 1, s0, nullptr, 0, nullptr);
  nncc_safetensors_writer_set_metadata(w, "format", "pt", nullptr);
  void *image = nullptr;
  size_t size = 0;
  EXPECT_EQ(nncc_safetensors_writer_serialize(w, &image, &size, nullptr), NNCC_OK);
  std::string out(static_cast<char *>(image), size);
  nncc_free(image);
  nncc_safetensors_writer_destroy(w);
  return out;
}

const char *const kTokens[] = {
    "-1", "0", "1", "4294967296", "18446744073709551615", "18446744073709551616",
    "9223372036854775807", "1e309", "2.5", "-0", "null", "true", "\"F32\"", "\"BF16\"",
    "\"U32\"", "[]", "{}", "[0,0]", "[1,2,3]", "\"__metadata__\"", "\"\\u0000\"",
    "\"\xff\"", "[[[[[[[[", "}}}}", ",", ":", "\"data_offsets\"", "\"shape\"", "\"dtype\"",
};

void setLength(std::string &img, uint64_t n) {
  for (int i = 0; i < 8; ++i)
    img[i] = static_cast<char>((n >> (8 * i)) & 0xff);
}

uint64_t getLength(const std::string &img) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(img[i]);
  return n;
}

std::string mutate(const std::string &seed, std::mt19937_64 &rng) {
  std::string img = seed;
  uint64_t headerLen = getLength(seed);
  int rounds = 1 + static_cast<int>(rng() % 4);
  for (int r = 0; r < rounds; ++r) {
    switch (rng() % 9) {
    case 0: { // flip a bit anywhere
      if (img.empty())
        break;
      size_t at = rng() % img.size();
      img[at] = static_cast<char>(img[at] ^ (1u << (rng() % 8)));
      break;
    }
    case 1: { // random byte inside the header
      if (img.size() <= 8)
        break;
      size_t span = std::min<size_t>(img.size() - 8, headerLen ? headerLen : 1);
      img[8 + rng() % span] = static_cast<char>(rng() & 0xff);
      break;
    }
    case 2: // truncate
      img.resize(rng() % (img.size() + 1));
      break;
    case 3: { // length field: small delta, random, or huge
      if (img.size() < 8)
        break;
      uint64_t choices[] = {headerLen + (rng() % 17) - 8, rng(), rng() % (img.size() + 64),
                            100000001ull, 0};
      setLength(img, choices[rng() % 5]);
      break;
    }
    case 4: { // replace a digit run or a short span of the header with a token
      if (img.size() <= 9)
        break;
      size_t span = std::min<size_t>(img.size() - 8, headerLen ? headerLen : 1);
      size_t at = 8 + rng() % span;
      size_t len = 1 + rng() % 6;
      while (at + len > img.size())
        --len;
      std::string token = kTokens[rng() % (sizeof kTokens / sizeof *kTokens)];
      img.replace(at, len, token);
      int64_t delta = static_cast<int64_t>(token.size()) - static_cast<int64_t>(len);
      if (rng() % 2) // keep the length field consistent half of the time
        setLength(img, static_cast<uint64_t>(static_cast<int64_t>(getLength(img)) + delta));
      break;
    }
    case 5: { // delete a span
      if (img.empty())
        break;
      size_t at = rng() % img.size();
      img.erase(at, 1 + rng() % std::min<size_t>(16, img.size() - at));
      break;
    }
    case 6: { // duplicate a span (e.g. a whole entry)
      if (img.size() <= 8)
        break;
      size_t at = 8 + rng() % (img.size() - 8);
      size_t len = 1 + rng() % std::min<size_t>(64, img.size() - at);
      img.insert(at, img.substr(at, len));
      break;
    }
    case 7: // append garbage
      for (int k = 0, n = static_cast<int>(rng() % 32); k < n; ++k)
        img.push_back(static_cast<char>(rng() & 0xff));
      break;
    default: { // change one digit inside the header
      std::vector<size_t> digits;
      for (size_t i = 8; i < img.size() && i < 8 + headerLen; ++i)
        if (img[i] >= '0' && img[i] <= '9')
          digits.push_back(i);
      if (!digits.empty())
        img[digits[rng() % digits.size()]] = static_cast<char>('0' + rng() % 10);
      break;
    }
    }
  }
  return img;
}


std::string reasonKey(const char *message) {
  std::string m = message, key;
  size_t colon = m.find(": ");
  bool inQuote = false;
  for (char c : m.substr(colon == std::string::npos ? 0 : colon + 2)) {
    if (c == '\'')
      inQuote = !inQuote;
    else if (!inQuote && !(c >= '0' && c <= '9'))
      key += c;
    if (key.size() > 60)
      break;
  }
  return key;
}

/// Opens `img`; on failure checks the error, on success checks and touches
/// every view. Returns true when accepted.
bool exercise(const std::string &img, std::map<std::string, int> &reasons, uint64_t &checksum) {
  nncc_safetensors *f = nullptr;
  nncc_error err;
  std::memset(&err, 0x55, sizeof err);
  nncc_status s = nncc_safetensors_open_memory(img.data(), img.size(), &f, &err);
  EXPECT_EQ(s, err.status);
  EXPECT_NE(std::memchr(err.message, '\0', sizeof err.message), nullptr);
  if (s != NNCC_OK) {
    EXPECT_EQ(f, nullptr);
    EXPECT_TRUE(kReaderStatuses.count(s)) << nncc_status_name(s) << ": " << err.message;
    EXPECT_NE(err.message[0], '\0');
    ++reasons[reasonKey(err.message)];
    return false;
  }
  EXPECT_NE(f, nullptr);
  uint64_t n = getLength(img);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (size_t i = 0; i < nncc_safetensors_count(f); ++i) {
    nncc_tensor_view v;
    EXPECT_EQ(nncc_safetensors_tensor_at(f, i, &v, nullptr), NNCC_OK);
    EXPECT_EQ(v.nbytes, v.numel * nncc_dtype_size(v.dtype));
    EXPECT_GE(v.file_offset, 8 + n);
    EXPECT_LE(v.file_offset + v.nbytes, img.size());
    if (v.nbytes)
      ranges.emplace_back(v.file_offset, v.file_offset + v.nbytes);
    const auto *p = static_cast<const unsigned char *>(v.data);
    for (uint64_t k = 0; k < v.nbytes; ++k) // touch every byte (ASan)
      checksum += p[k];
    nncc_tensor_view again;
    EXPECT_EQ(nncc_safetensors_find(f, v.name, &again, nullptr), NNCC_OK);
    EXPECT_EQ(again.data, v.data);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    EXPECT_LE(ranges[i - 1].second, ranges[i].first) << "accepted overlapping tensors";
  for (size_t i = 0; i < nncc_safetensors_metadata_count(f); ++i) {
    const char *k = nullptr, *val = nullptr;
    EXPECT_EQ(nncc_safetensors_metadata_at(f, i, &k, &val, nullptr), NNCC_OK);
    checksum += std::strlen(k) + std::strlen(val);
  }
  nncc_safetensors_close(f);
  return true;
}

void printReasons(int accepted, int iterations, const std::map<std::string, int> &reasons) {
  if (!std::getenv("NNCC_FUZZ_VERBOSE"))
    return;
  std::cout << "accepted " << accepted << " of " << iterations << "\n";
  for (const auto &r : reasons)
    std::cout << r.second << "\t" << r.first << "\n";
}

int fuzzIterations() {
  const char *env = std::getenv("NNCC_FUZZ_ITERATIONS");
  return env ? std::atoi(env) : 20000;
}

/// A header from a small grammar of plausible and broken pieces.
std::string generatedImage(std::mt19937_64 &rng) {
  static const char *const dtypes[] = {"\"F32\"", "\"F64\"", "\"F16\"", "\"BF16\"", "\"I64\"",
                                       "\"I8\"",  "\"U8\"",  "\"BOOL\"", "\"U32\"", "\"F8_E4M3\"",
                                       "\"f32\"", "32",      "null"};
  static const char *const dims[] = {"0", "1", "2", "3", "4", "-1", "2.0", "1e3", "\"2\"",
                                     "4294967296", "9223372036854775807",
                                     "18446744073709551615", "18446744073709551616", "[]"};
  static const char *const names[] = {"\"a\"", "\"b\"", "\"c\"", "\"a\"", "\"__metadata__\"",
                                      "\"\\u00e9\"", "\"\""};
  auto pick = [&](auto &arr) { return std::string(arr[rng() % (sizeof arr / sizeof *arr)]); };
  uint64_t dataSize = rng() % 64;
  std::string h = "{";
  int entries = static_cast<int>(rng() % 5);
  const bool consistent = rng() % 3 == 0; // valid entries, random placement
  for (int e = 0; e < entries; ++e) {
    if (e)
      h += ",";
    if (consistent) {
      uint64_t k = rng() % 5, b = 4 * (rng() % 8);
      h += "\"t" + std::to_string(e) + "\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(k) +
           "],\"data_offsets\":[" + std::to_string(b) + "," + std::to_string(b + 4 * k) + "]}";
      continue;
    }
    h += pick(names) + ":";
    if (rng() % 10 == 0) {
      h += rng() % 2 ? "{\"k\":\"v\"}" : "{\"k\":1}";
      continue;
    }
    h += "{\"dtype\":" + pick(dtypes) + ",\"shape\":[";
    int rank = static_cast<int>(rng() % 3);
    for (int d = 0; d < rank; ++d)
      h += (d ? "," : "") + (rng() % 3 ? std::to_string(rng() % 5) : pick(dims));
    h += "],\"data_offsets\":[";
    uint64_t b = rng() % 2 ? 4 * (rng() % 6) : rng() % (dataSize + 8), len = 4 * (rng() % 4);
    h += std::to_string(b) + "," + std::to_string(rng() % 8 ? b + len : rng() % 80);
    if (rng() % 20 == 0)
      h += ",0";
    h += "]}";
  }
  h += "}";
  h.append(rng() % 8, ' ');
  std::string img(8, '\0');
  setLength(img, h.size());
  img += h;
  for (uint64_t i = 0; i < dataSize; ++i)
    img.push_back(static_cast<char>(rng() & 0xff));
  return img;
}

} // namespace

TEST(SafetensorsFuzz, MutatedImagesNeverCrash) {
  const std::string seed = seedImage();
  {
    Opened o;
    openMemory(seed, o);
    ASSERT_EQ(o.status, NNCC_OK) << o.err.message;
  }
  const int iterations = fuzzIterations();
  std::mt19937_64 rng(0x5eed5a1e);
  int accepted = 0;
  uint64_t checksum = 0;
  std::map<std::string, int> reasons;
  for (int it = 0; it < iterations && !HasFailure(); ++it)
    accepted += exercise(mutate(seed, rng), reasons, checksum);
  // Some mutations (of tensor bytes, of metadata text) keep the file valid.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, iterations);
  printReasons(accepted, iterations, reasons);
  (void)checksum;
}

TEST(SafetensorsFuzz, GeneratedHeadersNeverCrash) {
  const int iterations = fuzzIterations();
  std::mt19937_64 rng(0xc0ffee);
  int accepted = 0;
  uint64_t checksum = 0;
  std::map<std::string, int> reasons;
  for (int it = 0; it < iterations && !HasFailure(); ++it)
    accepted += exercise(generatedImage(rng), reasons, checksum);
  EXPECT_GT(accepted, 0);
  // The grammar reaches every validation rule.
  for (const char *rule : {"overlap", "duplicate tensor name", "is negative", "not an integer",
                           "overflows", "unknown dtype", "end beyond", "end before begin",
                           "span", "expected a string", "does not fit in int"}) {
    bool seen = false;
    for (const auto &r : reasons)
      seen |= r.first.find(rule) != std::string::npos;
    EXPECT_TRUE(seen) << "no generated header hit: " << rule;
  }
  printReasons(accepted, iterations, reasons);
  (void)checksum;
}

TEST(SafetensorsFuzz, EveryTruncationIsRejectedCleanly) {
  const std::string seed = seedImage();
  for (size_t len = 0; len < seed.size(); ++len) {
    Opened o;
    openMemory(seed.substr(0, len), o);
    ASSERT_NE(o.status, NNCC_OK) << "prefix of " << len << " bytes accepted";
    ASSERT_EQ(o.status, NNCC_ERROR_CORRUPT_FILE) << o.err.message;
  }
}
