// Errors a user can fix. main() prints them as one line, "salt: error: <what>",
// and exits with exit_code(); nothing else in salt-cpp prints stack traces.
#pragma once
#include <stdexcept>
#include <string>

namespace salt {

class UserError : public std::runtime_error {
 public:
  UserError(const std::string& what, int exit_code) : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

// Bad flags or a bad configuration: exit code 2, like argparse and jsonargparse.
class UsageError : public UserError {
 public:
  explicit UsageError(const std::string& what) : UserError(what, 2) {}
};

// Bad input data or environment (files, variables, repositories): exit code 1.
class InputError : public UserError {
 public:
  explicit InputError(const std::string& what) : UserError(what, 1) {}
};

}  // namespace salt
