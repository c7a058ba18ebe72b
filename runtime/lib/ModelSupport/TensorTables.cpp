//===- TensorTables.cpp - lookups and messages over the ABI tables --------===//
//
// Shapes and names of the ABI's tensor tables as messages show them, and
// the lookups and byte sizes the entry points share (ModelState.h).
//
//===----------------------------------------------------------------------===//
#include "ModelState.h"

#include <cinttypes>

using namespace nncc::ms;

namespace nncc {
namespace ms {

std::string shapeString(const int64_t *shape, int64_t rank) {
  std::string s = "[";
  for (int64_t i = 0; i < rank; ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string callerShape(const int64_t *shape, int32_t rank, int32_t expected) {
  int32_t shown = std::min(rank, std::max(expected, 0));
  if (shown > 0 && !shape)
    return "[?]";
  std::string s = shapeString(shape, shown);
  if (rank > shown)
    s.insert(s.size() - 1, std::string(shown ? ", " : "") + "... (" + std::to_string(rank) +
                               " dims)");
  return s;
}

std::string q(const char *text) {
  if (!text)
    return "(null)";
  size_t len = std::strlen(text);
  std::string out(nncc_quote(text, len, nullptr, 0), '\0');
  nncc_quote(text, len, &out[0], out.size() + 1);
  return out;
}
std::string q(const std::string &text) {
  std::string out(nncc_quote(text.data(), text.size(), nullptr, 0), '\0');
  nncc_quote(text.data(), text.size(), &out[0], out.size() + 1);
  return out;
}

std::string dimsString(const nncc_model_abi *abi, const nncc_tensor_info &t) {
  std::string s = "[";
  for (int32_t i = 0; i < t.rank; ++i) {
    if (i)
      s += ", ";
    int64_t d = t.dims[i];
    if (d >= 0)
      s += std::to_string(d);
    else if (-d - 1 < abi->num_dims)
      s += abi->dim_names[-d - 1];
    else
      s += "?";
  }
  return s + "]";
}

std::string nameList(const nncc_tensor_info *infos, int32_t n) {
  std::string s;
  for (int32_t i = 0; i < n; ++i) {
    if (i)
      s += ", ";
    s += "'";
    s += infos[i].name;
    s += "'";
  }
  return n ? s : std::string("(none)");
}

int32_t findByName(const nncc_tensor_info *infos, int32_t n, const char *name) {
  for (int32_t i = 0; i < n; ++i)
    if (std::strcmp(infos[i].name, name) == 0)
      return i;
  return -1;
}

bool byteSize(const int64_t *shape, int64_t rank, uint64_t elemSize, uint64_t &out) {
  uint64_t n = elemSize;
  for (int64_t i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      return false;
    uint64_t d = static_cast<uint64_t>(shape[i]);
    if (d != 0 && n > UINT64_MAX / d)
      return false;
    n *= d;
  }
  out = n;
  return true;
}

bool concreteShape(const nncc_model_abi *abi, const int64_t *dimsEnc, int32_t rank,
                   const std::vector<int64_t> &dims, std::vector<int64_t> &out) {
  out.resize(static_cast<size_t>(rank));
  for (int32_t i = 0; i < rank; ++i) {
    int64_t d = dimsEnc[i];
    if (d >= 0) {
      out[i] = d;
      continue;
    }
    int64_t sym = -d - 1;
    if (sym >= abi->num_dims || dims[sym] < 0)
      return false;
    out[i] = dims[sym];
  }
  return true;
}

nncc_status checkModel(nncc_model *model, const char *what, nncc_error *err) {
  if (!model)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, "%s: model is NULL", what);
  return NNCC_OK;
}

} // namespace ms
} // namespace nncc
