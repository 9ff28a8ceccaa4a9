// The message of the exception `fn` throws, checked to be one line (the project's
// rule for bad input); a test failure when nothing of type E is thrown.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/errors.h"

namespace salt::testing {

template <class E = InputError>
std::string one_line_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "multi-line error: " << msg;
    return msg;
  }
  ADD_FAILURE() << "no exception of the expected type";
  return "";
}

}  // namespace salt::testing
