// Records every ATen operator a piece of code dispatches (RecordFunction), with
// its inputs' shapes and scalar arguments: two runs that must replay as one CUDA
// graph must record the same lines.
#pragma once
#include <ATen/record_function.h>

#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace salt::testing {

// Every operator dispatched while it lives, as one line: name, then each input's
// shape and type, or its value for scalars and lists (a count that leaks from the
// batch into an argument shows there too).
class OpTrace {
 public:
  OpTrace() {
    handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&on_start).needsInputs(true).scopes(
        {at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  }
  ~OpTrace() { at::removeCallback(handle_); }
  std::vector<std::string> take() {
    std::lock_guard<std::mutex> lock(mutex());
    return std::move(lines());
  }

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::vector<std::string>& lines() {
    static std::vector<std::string> l;
    return l;
  }
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    std::ostringstream line;
    line << fn.name();
    for (const auto& v : fn.inputs()) {
      if (v.isTensor() && v.toTensor().defined())
        line << " " << v.toTensor().sizes() << v.toTensor().scalar_type();
      else if (v.isTensor())
        line << " undefined";
      else if (v.isScalar() || v.isIntList() || v.isDoubleList() || v.isBool() || v.isString())
        line << " " << v;
      else
        line << " " << v.tagKind();
    }
    std::lock_guard<std::mutex> lock(mutex());
    lines().push_back(line.str());
    return nullptr;
  }
  at::CallbackHandle handle_;
};

}  // namespace salt::testing
