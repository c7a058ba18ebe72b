//===- Escape.h - Outside text made safe for generated C++ and CUDA -*- C++ -*-===//
//
// Every byte that reaches a generated source from outside the compiler (a
// source file's name above all) goes through one of these, so no name can
// end a comment, close a string or splice lines in the generated code.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_TARGET_COMMON_ESCAPE_H
#define NNCC_TARGET_COMMON_ESCAPE_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace nncc::target {

/// A C identifier: letters, digits and '_' kept, every other byte '_'; a
/// leading digit (or nothing) gets the prefix "m_".
std::string cIdentifier(llvm::StringRef s);

/// A C/C++ string literal, quotes included: '"', '\' and '?' (no trigraphs)
/// escaped, every byte outside printable ASCII as a three-digit octal escape.
std::string cString(llvm::StringRef s);

/// Printable ASCII only: each byte outside 0x20..0x7e, and '\', written as
/// the four characters `\xNN`. The result is safe inside a `//` comment (no
/// newline, no line splice) and reads the same in a message.
std::string printableAscii(llvm::StringRef s);

/// A `//` comment of `s`: bytes outside printable ASCII as `\xNN`, and a
/// backslash that would end the line (a line splice) as `\x5c`, so the
/// comment ends where its line does.
std::string cComment(llvm::StringRef s);

} // namespace nncc::target

#endif // NNCC_TARGET_COMMON_ESCAPE_H
