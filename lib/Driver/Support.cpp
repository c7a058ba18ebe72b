//===- Support.cpp - Errors and strings shared by nncc subcommands --------===//

#include "nncc/Driver/Support.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace nncc;

int driver::fail(const llvm::Twine &msg) {
  llvm::errs() << "nncc: error: " << msg << "\n";
  return 1;
}

std::string driver::shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string driver::signatureString(const TensorSignature &t) {
  return t.dtype + " [" + llvm::join(t.dims, ", ") + "]";
}

std::string driver::tensorNames(nncc_safetensors *file) {
  std::string have;
  for (size_t k = 0; k < nncc_safetensors_count(file); ++k) {
    nncc_tensor_view o;
    if (nncc_safetensors_tensor_at(file, k, &o, nullptr) == NNCC_OK)
      have += (have.empty() ? "" : ", ") + std::string(o.name);
  }
  return have.empty() ? "nothing" : have;
}

int driver::failMissingInput(const TensorSignature &input, llvm::StringRef path,
                             nncc_safetensors *file) {
  return fail("input '" + input.name + "' (" + signatureString(input) +
              ") is missing from '" + path + "' (it has: " + tensorNames(file) +
              ")");
}
