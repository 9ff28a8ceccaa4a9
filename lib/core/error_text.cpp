#include "core/error_text.h"

namespace salt {
namespace {

constexpr const char* kEllipsis = "\u2026";

bool continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// `text`'s first `head` and last `tail` bytes around an ellipsis, each cut moved so
// that no UTF-8 character is split.
std::string shortened(const std::string& text, std::size_t head, std::size_t tail) {
  while (head > 0 && continuation_byte(text[head])) --head;
  std::size_t from = text.size() - tail;
  while (from < text.size() && continuation_byte(text[from])) ++from;
  return text.substr(0, head) + kEllipsis + text.substr(from);
}

std::string escaped(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += ' ';
    else if (c < 0x20 || c == 0x7f) out += '?';
    else out += static_cast<char>(c);
  }
  return out;
}

std::string capped_words(const std::string& text) {
  std::string out;
  for (std::size_t start = 0; start <= text.size();) {
    auto end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const auto word = text.substr(start, end - start);
    out += word.size() > kMaxErrorWord ? shortened(word, kMaxErrorWord / 2, kMaxErrorWord / 2) : word;
    if (end < text.size()) out += ' ';
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string error_line(const std::string& text) {
  auto line = capped_words(escaped(text));
  // Both ends kept: the start names what is at fault, the end says what to do.
  if (line.size() > kMaxErrorLine) line = shortened(line, kMaxErrorLine / 2, kMaxErrorLine / 2);
  return line;
}

}  // namespace salt
