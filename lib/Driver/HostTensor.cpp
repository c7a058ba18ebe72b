//===- HostTensor.cpp - Tensors in host memory, dtype conversion ----------===//

#include "nncc/Driver/HostTensor.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstring>

using namespace nncc;

void driver::HostTensor::widenToF64() {
  if (dtype != NNCC_DTYPE_F32)
    return;
  uint64_t n = numel();
  std::vector<double> wide(n);
  for (uint64_t k = 0; k < n; ++k)
    wide[k] = elementAsDouble(NNCC_DTYPE_F32, data(), k);
  dtype = NNCC_DTYPE_F64;
  resize(n * 8);
  if (n)
    memcpy(data(), wide.data(), n * 8);
}

void driver::HostTensor::narrowToBf16() {
  if (dtype != NNCC_DTYPE_F32)
    return;
  uint64_t n = numel();
  std::vector<uint16_t> narrow(n);
  for (uint64_t k = 0; k < n; ++k)
    narrow[k] = nncc_f32_to_bf16(static_cast<float>(elementAsDouble(NNCC_DTYPE_F32, data(), k)));
  dtype = NNCC_DTYPE_BF16;
  resize(n * 2);
  if (n)
    memcpy(data(), narrow.data(), n * 2);
}

bool driver::isFloatDType(nncc_dtype d) {
  return d == NNCC_DTYPE_F32 || d == NNCC_DTYPE_F64 || d == NNCC_DTYPE_F16 ||
         d == NNCC_DTYPE_BF16;
}

double driver::elementAsDouble(nncc_dtype d, const void *data, uint64_t i) {
  const char *p = static_cast<const char *>(data) + i * nncc_dtype_size(d);
  switch (d) {
  case NNCC_DTYPE_F64: { double v; memcpy(&v, p, 8); return v; }
  case NNCC_DTYPE_F32: { float v; memcpy(&v, p, 4); return v; }
  case NNCC_DTYPE_F16: { uint16_t v; memcpy(&v, p, 2); return nncc_f16_to_f32(v); }
  case NNCC_DTYPE_BF16: { uint16_t v; memcpy(&v, p, 2); return nncc_bf16_to_f32(v); }
  case NNCC_DTYPE_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
  case NNCC_DTYPE_I32: { int32_t v; memcpy(&v, p, 4); return v; }
  case NNCC_DTYPE_I16: { int16_t v; memcpy(&v, p, 2); return v; }
  case NNCC_DTYPE_I8: return (int8_t)*p;
  case NNCC_DTYPE_U8: case NNCC_DTYPE_BOOL: return (uint8_t)*p;
  default: return NAN;
  }
}

std::string driver::convertLossless(nncc_dtype sd, const void *src, nncc_dtype dd,
                                    void *dst, uint64_t n) {
  auto isInt = [](nncc_dtype d) {
    return d == NNCC_DTYPE_I64 || d == NNCC_DTYPE_I32 || d == NNCC_DTYPE_I16 ||
           d == NNCC_DTYPE_I8 || d == NNCC_DTYPE_U8 || d == NNCC_DTYPE_BOOL;
  };
  auto readInt = [&](uint64_t i) -> int64_t {
    const char *p = static_cast<const char *>(src) + i * nncc_dtype_size(sd);
    switch (sd) {
    case NNCC_DTYPE_I64: { int64_t v; memcpy(&v, p, 8); return v; }
    case NNCC_DTYPE_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case NNCC_DTYPE_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case NNCC_DTYPE_I8: return (int8_t)*p;
    default: return (uint8_t)*p;
    }
  };
  auto readFloat = [&](uint64_t i) -> double {
    return isFloatDType(sd) ? elementAsDouble(sd, src, i) : (double)readInt(i);
  };
  char *out = static_cast<char *>(dst);
  for (uint64_t i = 0; i < n; ++i) {
    if (isInt(dd)) {
      int64_t v;
      if (isInt(sd)) {
        v = readInt(i);
      } else {
        double f = readFloat(i);
        if (!(f == std::floor(f)) || std::fabs(f) > 9.0e15)
          return "value " + llvm::formatv("{0}", f).str() + " at index " +
                 std::to_string(i) + " is not an integer";
        v = (int64_t)f;
      }
      switch (dd) {
      case NNCC_DTYPE_I64: memcpy(out + 8 * i, &v, 8); break;
      case NNCC_DTYPE_I32: {
        if (v < INT32_MIN || v > INT32_MAX)
          return "value " + std::to_string(v) + " at index " + std::to_string(i) +
                 " does not fit I32";
        int32_t w = (int32_t)v;
        memcpy(out + 4 * i, &w, 4);
        break;
      }
      case NNCC_DTYPE_BOOL:
        if (v != 0 && v != 1)
          return "value " + std::to_string(v) + " at index " + std::to_string(i) +
                 " is not 0 or 1";
        out[i] = (char)v;
        break;
      default:
        return "unsupported target type";
      }
    } else {
      double f = isInt(sd) ? (double)readInt(i) : readFloat(i);
      if (isInt(sd) && (int64_t)f != readInt(i))
        return "value at index " + std::to_string(i) + " is not exact in floating point";
      if (dd == NNCC_DTYPE_F64) {
        memcpy(out + 8 * i, &f, 8);
      } else if (dd == NNCC_DTYPE_F32) {
        float g = (float)f;
        if ((double)g != f && !(f != f))
          return "value " + llvm::formatv("{0}", f).str() + " at index " + std::to_string(i) +
                 " is not exact in F32";
        memcpy(out + 4 * i, &g, 4);
      } else {
        return "unsupported target type";
      }
    }
  }
  return "";
}

bool driver::losslessPair(nncc_dtype from, nncc_dtype to) {
  switch (to) {
  case NNCC_DTYPE_F64:
    return from == NNCC_DTYPE_F32 || from == NNCC_DTYPE_F16 || from == NNCC_DTYPE_BF16 ||
           from == NNCC_DTYPE_I32 || from == NNCC_DTYPE_I16 || from == NNCC_DTYPE_I8 ||
           from == NNCC_DTYPE_U8;
  case NNCC_DTYPE_F32:
    return from == NNCC_DTYPE_F16 || from == NNCC_DTYPE_BF16 || from == NNCC_DTYPE_I16 ||
           from == NNCC_DTYPE_I8 || from == NNCC_DTYPE_U8;
  case NNCC_DTYPE_I64:
    return from == NNCC_DTYPE_I32 || from == NNCC_DTYPE_I16 || from == NNCC_DTYPE_I8 ||
           from == NNCC_DTYPE_U8 || from == NNCC_DTYPE_BOOL;
  case NNCC_DTYPE_I32:
    // I64 only when every value is in range (checked per value).
    return from == NNCC_DTYPE_I64 || from == NNCC_DTYPE_I16 || from == NNCC_DTYPE_I8 ||
           from == NNCC_DTYPE_U8 || from == NNCC_DTYPE_BOOL;
  case NNCC_DTYPE_BOOL:
    return from == NNCC_DTYPE_U8; // 0/1 checked per value
  default:
    return false;
  }
}
