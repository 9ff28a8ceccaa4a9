// Turns one worker's output stream into whole lines prefixed with its rank
// ("[rank 1] info: ..."), written to the launcher's stdout or stderr as they come,
// and remembers the line that best explains a failure (its last "salt: error").
#pragma once
#include <cstdio>
#include <string>

namespace salt::parallel {

class LineForwarder {
 public:
  LineForwarder(std::string prefix, std::FILE* out) : prefix_(std::move(prefix)), out_(out) {}
  void feed(const char* data, std::size_t size);
  void finish();  // the last line, if it had no newline

  // The last "salt: ..." error (or stop) line; empty if there was none.
  const std::string& error_line() const { return error_line_; }
  const std::string& last_line() const { return last_line_; }  // the last non-empty line

 private:
  void emit(const std::string& line);
  std::string prefix_;
  std::FILE* out_;
  std::string partial_, last_line_, error_line_;
};

}  // namespace salt::parallel
