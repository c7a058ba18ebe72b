//===- Escape.cpp - Outside text made safe for generated C++ and CUDA -----===//

#include "Escape.h"

#include "llvm/ADT/StringExtras.h"

namespace nncc::target {

std::string cIdentifier(llvm::StringRef s) {
  std::string out;
  for (char c : s)
    out += (llvm::isAlnum(c) || c == '_') ? c : '_';
  if (out.empty() || llvm::isDigit(out[0]))
    out = "m_" + out;
  return out;
}

std::string cString(llvm::StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\' || c == '?') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte > 0x7e) {
      out += '\\';
      out += static_cast<char>('0' + (byte >> 6));
      out += static_cast<char>('0' + ((byte >> 3) & 7));
      out += static_cast<char>('0' + (byte & 7));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

namespace {
/// `s` with each byte outside 0x20..0x7e (and '\\' when `backslashes`) as
/// `\xNN`.
std::string hexEscaped(llvm::StringRef s, bool backslashes) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte > 0x7e || (backslashes && c == '\\')) {
      out += "\\x";
      out += llvm::hexdigit(byte >> 4, /*LowerCase=*/true);
      out += llvm::hexdigit(byte & 15, /*LowerCase=*/true);
    } else {
      out += c;
    }
  }
  return out;
}
} // namespace

std::string printableAscii(llvm::StringRef s) { return hexEscaped(s, /*backslashes=*/true); }

std::string cComment(llvm::StringRef s) {
  std::string text = hexEscaped(s, /*backslashes=*/false);
  size_t last = text.find_last_not_of(' ');
  if (last != std::string::npos && text[last] == '\\')
    text.replace(last, 1, "\\x5c");
  return "// " + text;
}

} // namespace nncc::target
