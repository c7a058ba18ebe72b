//===- Error.cpp - status codes, messages, half-precision conversions ----===//

#include "RuntimeInternal.h"

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <string>

using namespace nncc::rt;

nncc_status nncc::rt::failv(nncc_error *err, nncc_status status,
                            const char *format, va_list args) {
  if (err) {
    err->status = status;
    std::vsnprintf(err->message, sizeof err->message, format, args);
  }
  return status;
}

nncc_status nncc::rt::fail(nncc_error *err, nncc_status status,
                           const char *format, ...) {
  va_list args;
  va_start(args, format);
  failv(err, status, format, args);
  va_end(args);
  return status;
}

nncc_status nncc::rt::ok(nncc_error *err) {
  if (err) {
    err->status = NNCC_OK;
    err->message[0] = '\0';
  }
  return NNCC_OK;
}

std::string nncc::rt::formatShape(const int64_t *shape, size_t rank) {
  std::string out = "[";
  for (size_t i = 0; i < rank; ++i) {
    if (i)
      out += ", ";
    if (i == 16 && rank > 20) {
      out += "... (" + std::to_string(rank) + " dims)";
      break;
    }
    out += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
  }
  return out + "]";
}

std::string nncc::rt::formatCallerShape(const int64_t *shape, size_t rank, size_t due) {
  if (rank <= due)
    return formatShape(shape, rank);
  std::string out = formatShape(shape, std::min<size_t>(due, 16));
  out.insert(out.size() - 1,
             std::string(due ? ", " : "") + "... (" + std::to_string(rank) + " dims)");
  return out;
}

namespace {
/// Length of the valid UTF-8 sequence at s[i] (1 to 4), or 0 when the byte
/// there does not start one (overlongs, surrogates, > U+10FFFF, truncated).
size_t utf8SequenceAt(const unsigned char *s, size_t i, size_t size) {
  unsigned char c = s[i];
  if (c < 0x80)
    return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xe0) == 0xc0) {
    n = 1;
    cp = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 2;
    cp = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 3;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (size - i <= n)
    return 0;
  for (size_t k = 1; k <= n; ++k) {
    if ((s[i + k] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i + k] & 0x3f);
  }
  if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
      cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n + 1;
}

constexpr size_t kQuotedBytes = 200; // longer texts are cut
} // namespace

std::string nncc::rt::quote(const char *text, size_t length) {
  if (!text)
    return "(null)";
  const auto *s = reinterpret_cast<const unsigned char *>(text);
  std::string out = "'";
  size_t i = 0;
  while (i < length) {
    unsigned char c = s[i];
    size_t n = utf8SequenceAt(s, i, length);
    // C0 and C1 controls (U+0080..U+009F, 0xc2 0x80..0x9f), DEL and bytes
    // outside valid UTF-8 are shown as \xNN: a terminal never sees them.
    // (n != 0 with c == 0xc2 means s[i + 1] exists.)
    bool escape = n == 0 || c < 0x20 || c == 0x7f || (c == 0xc2 && s[i + 1] < 0xa0);
    if (escape)
      n = 1;
    if (i + n > kQuotedBytes) // never cut a character in two
      break;
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (escape) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.append(text + i, n);
    }
    i += n;
  }
  out += "'";
  if (i < length)
    out += "... (" + std::to_string(length) + " bytes)";
  return out;
}

size_t nncc::rt::firstInvalidUtf8(const char *data, size_t size) {
  const auto *s = reinterpret_cast<const unsigned char *>(data);
  size_t i = 0;
  while (i < size) {
    size_t n = utf8SequenceAt(s, i, size);
    if (n == 0)
      return i;
    i += n;
  }
  return size;
}

extern "C" {

const char *nncc_status_name(nncc_status status) {
  switch (status) {
  case NNCC_OK: return "NNCC_OK";
  case NNCC_ERROR_INVALID_ARGUMENT: return "NNCC_ERROR_INVALID_ARGUMENT";
  case NNCC_ERROR_SHAPE_MISMATCH: return "NNCC_ERROR_SHAPE_MISMATCH";
  case NNCC_ERROR_DTYPE_MISMATCH: return "NNCC_ERROR_DTYPE_MISMATCH";
  case NNCC_ERROR_NOT_FOUND: return "NNCC_ERROR_NOT_FOUND";
  case NNCC_ERROR_CORRUPT_FILE: return "NNCC_ERROR_CORRUPT_FILE";
  case NNCC_ERROR_IO: return "NNCC_ERROR_IO";
  case NNCC_ERROR_OUT_OF_MEMORY: return "NNCC_ERROR_OUT_OF_MEMORY";
  case NNCC_ERROR_UNSUPPORTED: return "NNCC_ERROR_UNSUPPORTED";
  case NNCC_ERROR_CUDA_UNAVAILABLE: return "NNCC_ERROR_CUDA_UNAVAILABLE";
  case NNCC_ERROR_CUDA: return "NNCC_ERROR_CUDA";
  case NNCC_ERROR_INTERNAL: return "NNCC_ERROR_INTERNAL";
  }
  return "NNCC_ERROR_UNKNOWN";
}

const char *nncc_status_string(nncc_status status) {
  switch (status) {
  case NNCC_OK: return "ok";
  case NNCC_ERROR_INVALID_ARGUMENT: return "invalid argument";
  case NNCC_ERROR_SHAPE_MISMATCH: return "shape mismatch";
  case NNCC_ERROR_DTYPE_MISMATCH: return "dtype mismatch";
  case NNCC_ERROR_NOT_FOUND: return "not found";
  case NNCC_ERROR_CORRUPT_FILE: return "corrupt file";
  case NNCC_ERROR_IO: return "I/O error";
  case NNCC_ERROR_OUT_OF_MEMORY: return "out of memory";
  case NNCC_ERROR_UNSUPPORTED: return "unsupported";
  case NNCC_ERROR_CUDA_UNAVAILABLE: return "CUDA unavailable";
  case NNCC_ERROR_CUDA: return "CUDA error";
  case NNCC_ERROR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

void nncc_error_clear(nncc_error *err) { ok(err); }

nncc_status nncc_error_set(nncc_error *err, nncc_status status,
                           const char *format, ...) {
  va_list args;
  va_start(args, format);
  failv(err, status, format ? format : "", args);
  va_end(args);
  return status;
}

nncc_status nncc_error_prefix(nncc_error *err, const char *format, ...) {
  if (!err)
    return NNCC_OK;
  char prefix[NNCC_ERROR_MESSAGE_CAPACITY];
  va_list args;
  va_start(args, format);
  std::vsnprintf(prefix, sizeof prefix, format ? format : "", args);
  va_end(args);
  std::string joined = prefix;
  joined.append(err->message, strnlen(err->message, sizeof err->message));
  size_t n = std::min(joined.size(), sizeof err->message - 1);
  std::memcpy(err->message, joined.data(), n);
  err->message[n] = '\0';
  return err->status;
}

void nncc_free(void *p) { std::free(p); }

size_t nncc_quote(const char *text, size_t length, char *out, size_t capacity) {
  std::string q = quote(text, length);
  if (out && capacity) {
    size_t n = std::min(q.size(), capacity - 1);
    std::memcpy(out, q.data(), n);
    out[n] = '\0';
  }
  return q.size();
}

const char *nncc_dtype_name(nncc_dtype dtype) {
  switch (dtype) {
  case NNCC_DTYPE_F64: return "F64";
  case NNCC_DTYPE_F32: return "F32";
  case NNCC_DTYPE_F16: return "F16";
  case NNCC_DTYPE_BF16: return "BF16";
  case NNCC_DTYPE_I64: return "I64";
  case NNCC_DTYPE_I32: return "I32";
  case NNCC_DTYPE_I16: return "I16";
  case NNCC_DTYPE_I8: return "I8";
  case NNCC_DTYPE_U8: return "U8";
  case NNCC_DTYPE_BOOL: return "BOOL";
  case NNCC_DTYPE_INVALID: break;
  }
  return "INVALID";
}

size_t nncc_dtype_size(nncc_dtype dtype) {
  switch (dtype) {
  case NNCC_DTYPE_F64:
  case NNCC_DTYPE_I64: return 8;
  case NNCC_DTYPE_F32:
  case NNCC_DTYPE_I32: return 4;
  case NNCC_DTYPE_F16:
  case NNCC_DTYPE_BF16:
  case NNCC_DTYPE_I16: return 2;
  case NNCC_DTYPE_I8:
  case NNCC_DTYPE_U8:
  case NNCC_DTYPE_BOOL: return 1;
  case NNCC_DTYPE_INVALID: break;
  }
  return 0;
}

nncc_dtype nncc_dtype_from_name(const char *name) {
  if (!name)
    return NNCC_DTYPE_INVALID;
  for (int d = NNCC_DTYPE_F64; d <= NNCC_DTYPE_BOOL; ++d)
    if (std::strcmp(name, nncc_dtype_name(static_cast<nncc_dtype>(d))) == 0)
      return static_cast<nncc_dtype>(d);
  return NNCC_DTYPE_INVALID;
}

float nncc_f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else { // subnormal: mant * 2^-24, exact in float
    float f = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return sign ? -f : f;
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t nncc_f32_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t absBits = bits & 0x7fffffffu;
  if (absBits >= 0x7f800000u) { // inf or nan
    uint16_t mant = absBits > 0x7f800000u ? static_cast<uint16_t>(0x200u | ((absBits >> 13) & 0x3ffu)) : 0;
    return static_cast<uint16_t>(sign | 0x7c00u | mant);
  }
  if (absBits >= 0x477ff000u) // rounds to >= 65520: overflow to inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (absBits < 0x38800000u) { // below the smallest normal half (2^-14)
    if (absBits < 0x33000000u) // below half the smallest subnormal: zero
      return sign;
    uint32_t exp = absBits >> 23;
    uint32_t mant = (absBits & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exp; // 14..24
    uint32_t value = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (value & 1u)))
      ++value;
    return static_cast<uint16_t>(sign | value);
  }
  uint32_t value = absBits - 0x38000000u; // rebias exponent 127 -> 15
  uint32_t rem = value & 0x1fffu;
  value >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (value & 1u)))
    ++value;
  return static_cast<uint16_t>(sign | value);
}

float nncc_bf16_to_f32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t nncc_f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // nan: keep it quiet and nan
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

} // extern "C"
