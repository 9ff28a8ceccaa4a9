// What one training step dispatches: every ATen operator the step calls (forward,
// backward and the optimizer, on every thread), counted through RecordFunction. On
// a card each leaf operator is about one kernel launch, so the census says where
// the host's issue time and the launches go, and which copies and casts (with
// their shapes) a fused or reordered step could save; ncu's profile says what the
// kernels cost but not which operator launched them.
// bench_model --op-census prints it for GN2 at the suite's batch.
#pragma once
#include <ATen/record_function.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace salt::bench {

class OpCensus {
 public:
  OpCensus() {
    state().active = true;
    handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                                        .needsInputs(true)
                                        .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  }
  ~OpCensus() {
    at::removeCallback(handle_);
    std::lock_guard<std::mutex> lock(state().mutex);
    state().active = false;
    state().calls.clear();
    state().copies.clear();
  }
  OpCensus(const OpCensus&) = delete;
  OpCensus& operator=(const OpCensus&) = delete;

  // The operators the step called first (not from inside another), by count, and
  // the copies and casts (at any depth) by bytes, each with the operator that made it.
  void report(std::size_t top = 25) const {
    std::lock_guard<std::mutex> lock(state().mutex);
    long long outer = 0, all = 0;
    for (const auto& [name, c] : state().calls) {
      outer += c.outer;
      all += c.outer + c.nested;
    }
    std::printf("  op census (one step; %lld operator calls, %lld of them called by the step itself):\n", all, outer);
    std::vector<std::pair<std::string, Count>> calls(state().calls.begin(), state().calls.end());
    std::sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a.second.outer > b.second.outer; });
    for (std::size_t i = 0; i < std::min(top, calls.size()) && calls[i].second.outer > 0; ++i)
      std::printf("    %5lld  %-40s (+%lld nested)\n", calls[i].second.outer, calls[i].first.c_str(),
                  calls[i].second.nested);
    std::vector<std::pair<std::string, Copy>> copies(state().copies.begin(), state().copies.end());
    std::sort(copies.begin(), copies.end(), [](const auto& a, const auto& b) { return a.second.bytes > b.second.bytes; });
    std::printf("  copies and casts by bytes (count, MB, where: operator > copy, first input's shape and type):\n");
    for (std::size_t i = 0; i < std::min(top, copies.size()); ++i)
      std::printf("    %4lld %9.1f  %s\n", copies[i].second.count, copies[i].second.bytes / 1e6, copies[i].first.c_str());
  }

 private:
  struct Count {
    long long outer = 0, nested = 0;
  };
  struct Copy {
    long long count = 0;
    double bytes = 0;
  };
  struct State {
    std::mutex mutex;
    bool active = false;
    std::map<std::string, Count> calls;
    std::map<std::string, Copy> copies;
  };
  static State& state() {
    static State s;
    return s;
  }
  // Per thread: the stack of operators open on it (the step's own call at the bottom).
  static std::vector<std::string>& open() {
    thread_local std::vector<std::string> stack;
    return stack;
  }

  static bool is_copy(const std::string& name) {
    for (const char* c : {"aten::copy_", "aten::_to_copy", "aten::clone", "aten::cat", "aten::index_copy_",
                          "aten::contiguous", "aten::index_select", "aten::gather"})
      if (name == c) return true;
    return false;
  }

  static std::pair<std::string, double> first_tensor(const at::RecordFunction& fn) {
    for (const auto& v : fn.inputs()) {
      if (!v.isTensor()) continue;
      const auto& t = v.toTensor();
      if (!t.defined()) continue;
      std::ostringstream s;
      s << t.sizes() << " " << t.scalar_type() << (t.is_cuda() ? "" : " (host)");
      return {s.str(), static_cast<double>(t.numel()) * static_cast<double>(t.element_size())};
    }
    return {"-", 0.0};
  }

  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    const std::string name = fn.name();
    auto& stack = open();
    {
      std::lock_guard<std::mutex> lock(state().mutex);
      if (state().active) {
        auto& c = state().calls[name];
        (stack.empty() ? c.outer : c.nested) += 1;
        if (is_copy(name)) {
          const auto [shape, bytes] = first_tensor(fn);
          auto& copy = state().copies[(stack.empty() ? std::string("step") : stack.front()) + " > " + name + " " + shape];
          copy.count += 1;
          copy.bytes += bytes;
        }
      }
    }
    stack.push_back(name);
    return nullptr;
  }
  static void on_end(const at::RecordFunction&, at::ObserverContext*) {
    auto& stack = open();
    if (!stack.empty()) stack.pop_back();
  }

  at::CallbackHandle handle_;
};

}  // namespace salt::bench
