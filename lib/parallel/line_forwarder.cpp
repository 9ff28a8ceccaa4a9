#include "parallel/line_forwarder.h"

namespace salt::parallel {

void LineForwarder::feed(const char* data, std::size_t size) {
  partial_.append(data, size);
  std::size_t start = 0;
  for (auto nl = partial_.find('\n'); nl != std::string::npos; nl = partial_.find('\n', start)) {
    emit(partial_.substr(start, nl - start));
    start = nl + 1;
  }
  partial_.erase(0, start);
  std::fflush(out_);
}

void LineForwarder::finish() {
  if (!partial_.empty()) emit(partial_);
  partial_.clear();
  std::fflush(out_);
}

void LineForwarder::emit(const std::string& line) {
  std::string text = prefix_ + line + "\n";
  std::fwrite(text.data(), 1, text.size(), out_);
  if (line.find_first_not_of(" \t\r") == std::string::npos) return;
  last_line_ = line;
  if (line.rfind("salt: error:", 0) == 0 || line.rfind("salt: internal error:", 0) == 0 || line.rfind("salt: stopped", 0) == 0)
    error_line_ = line;
}

}  // namespace salt::parallel
