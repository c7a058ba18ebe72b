//===- FrontendFuzzer.cpp - libFuzzer target for the .nn front end --------===//
//
// Each input is a whole .nn source file: lexed, parsed and checked (the
// declarations, constants, layer arguments, the train clause: parseBuffer +
// analyzeModel, what `nncc compile` runs before MLIR generation). Rules
// beyond "no crash, no ASan/UBSan report": a rejected file reports at least
// one error, every error is located (line >= 1, col >= 1, within the file),
// and an accepted file reports none and dumps as an AST. A violated rule
// aborts. The source is not NUL-terminated (a read past the end is an ASan
// report). Built and run by utils/sanitize.sh (docs/runtime.md, "Sanitizers
// and fuzzing").
//
//===----------------------------------------------------------------------===//

#include "nncc/Frontend/Diagnostics.h"
#include "nncc/Frontend/Parser.h"
#include "nncc/Frontend/Sema.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace nncc::frontend;

namespace {

[[noreturn]] void finding(const std::string &what) {
  std::fprintf(stderr, "frontend fuzzer: %s\n", what.c_str());
  std::abort();
}


} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef src(reinterpret_cast<const char *>(data), size);
  unsigned lines = 1;
  for (char c : src)
    lines += c == '\n';

  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  unsigned errors = 0;
  std::string firstError;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() != mlir::DiagnosticSeverity::Error)
      return mlir::success();
    std::string msg = d.str();
    if (!errors++)
      firstError = msg;
    auto loc = mlir::dyn_cast<mlir::FileLineColLoc>(d.getLocation());
    if (!loc)
      finding("error without file:line:col: " + msg);
    if (loc.getFilename().getValue() != "fuzz.nn" || loc.getLine() < 1 || loc.getColumn() < 1 ||
        loc.getLine() > lines)
      finding("error at " + loc.getFilename().getValue().str() + ":" + std::to_string(loc.getLine()) + ":" +
              std::to_string(loc.getColumn()) + " (the file has " + std::to_string(lines) +
              " lines): " + msg);
    if (msg.empty())
      finding("empty error message");
    return mlir::success();
  });

  DiagEngine diag(ctx, "fuzz.nn");
  std::unique_ptr<FileAST> file = parseBuffer(src, diag);
  std::unique_ptr<ModelInfo> model;
  if (file)
    model = analyzeModel(*file, diag);

  if (file && model) {
    if (errors)
      finding("accepted with " + std::to_string(errors) + " error(s): " + firstError);
    std::string dump;
    llvm::raw_string_ostream os(dump);
    dumpAST(*file, os);
    os.flush();
    if (dump.empty())
      finding("accepted file dumps as an empty AST");
  } else if (!errors) {
    finding(std::string("rejected without an error by the ") + (file ? "checks" : "parser"));
  }
  return 0;
}
