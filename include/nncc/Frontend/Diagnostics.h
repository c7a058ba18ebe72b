//===- Diagnostics.h - Located error reporting for the nncc front end -----===//
//
// Every user error of the front end goes through mlir::emitError with a
// FileLineColLoc; the driver installs a SourceMgrDiagnosticHandler so the
// output is `file:line:col: error: message` + source line + caret.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_FRONTEND_DIAGNOSTICS_H
#define NNCC_FRONTEND_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <string>

namespace nncc {
namespace frontend {

/// A position in the source file (1-based line and column).
struct SrcLoc {
  unsigned line = 0;
  unsigned col = 0;
};

/// Turns SrcLocs into MLIR locations and reports errors.
class DiagEngine {
public:
  DiagEngine(mlir::MLIRContext &ctx, llvm::StringRef filename)
      : ctx(ctx), filename(filename.str()) {}

  mlir::Location loc(SrcLoc l) const {
    return mlir::FileLineColLoc::get(&ctx, filename, l.line, l.col);
  }
  /// Emits an error at `l`; returns the in-flight diagnostic for notes.
  mlir::InFlightDiagnostic error(SrcLoc l, const llvm::Twine &msg) {
    return mlir::emitError(loc(l), msg);
  }
  mlir::MLIRContext &getContext() const { return ctx; }
  llvm::StringRef getFilename() const { return filename; }

private:
  mlir::MLIRContext &ctx;
  std::string filename;
};

} // namespace frontend
} // namespace nncc

#endif
