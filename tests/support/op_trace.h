// Records every ATen operator a piece of code dispatches (RecordFunction), with
// its inputs' shapes and scalar arguments: two runs that must replay as one CUDA
// graph must record the same lines.
#pragma once
#include <ATen/record_function.h>

#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
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
    return std::exchange(lines(), {});
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
  static std::string shape_of(const at::Tensor& t) {
    if (!t.defined()) return "undefined";
    std::ostringstream s;
    s << t.sizes() << t.scalar_type();
    return s.str();
  }
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    std::ostringstream line;
    line << fn.name();
    for (const auto& v : fn.inputs()) {
      if (v.isTensor())
        line << " " << shape_of(v.toTensor());
      else if (v.isTensorList())
        for (const auto& t : v.toTensorList()) line << " " << shape_of(t);
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
