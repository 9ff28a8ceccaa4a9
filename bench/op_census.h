// What one training step dispatches: every ATen operator the step calls (forward,
// backward and the optimizer, on every thread), counted through RecordFunction. On
// a card each leaf operator is about one kernel launch, so the census says where
// the host's issue time and the launches go, and which copies and casts (with
// their shapes) a fused or reordered step could save; ncu's profile says what the
// kernels cost but not which operator launched them.
// With each operator's own time (its wall time less the operators it called; on a
// card the host's time to issue it) by operator and input type: on the CPU, where
// the step's time goes (casts, emulated bf16 products, elementwise passes).
// bench_model --gpu-suite --quick prints it for GN2 at the suite's batch, bench_model
// --op-census on the CPU at the bench's.
#pragma once
#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
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
    state().self_time.clear();
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
    report_time(top);
  }

  // Each operator's own time (less the operators inside it), summed by name and the
  // first input's type, the largest first; `steps` divides them into per-step figures.
  void report_time(std::size_t top, double steps = 1) const {
    std::vector<std::pair<std::string, Time>> times(state().self_time.begin(), state().self_time.end());
    double total = 0;
    for (const auto& [name, t] : times) total += t.seconds;
    std::sort(times.begin(), times.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    std::printf("  own time by operator and input type (%.1f ms of operators per step):\n", 1e3 * total / steps);
    for (std::size_t i = 0; i < std::min(top, times.size()); ++i)
      std::printf("    %8.2f ms %5.1f%% %6.0f calls  %s\n", 1e3 * times[i].second.seconds / steps,
                  100 * times[i].second.seconds / total, times[i].second.count / steps, times[i].first.c_str());
  }

 private:
  struct Count {
    long long outer = 0, nested = 0;
  };
  struct Copy {
    long long count = 0;
    double bytes = 0;
  };
  struct Time {
    double seconds = 0;
    double count = 0;
  };
  struct State {
    std::mutex mutex;
    bool active = false;
    std::map<std::string, Count> calls;
    std::map<std::string, Copy> copies;
    std::map<std::string, Time> self_time;
  };
  // One open operator: its name with its first input's type, when it began, and the
  // time of the operators it called (taken off its own).
  struct Open {
    std::string name, key;
    std::chrono::steady_clock::time_point start;
    double children = 0;
  };
  static State& state() {
    static State s;
    return s;
  }
  // Per thread: the stack of operators open on it (the step's own call at the bottom).
  static std::vector<Open>& open() {
    thread_local std::vector<Open> stack;
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

  static std::string input_type(const at::RecordFunction& fn) {
    for (const auto& v : fn.inputs())
      if (v.isTensor() && v.toTensor().defined()) return std::string(c10::toString(v.toTensor().scalar_type()));
    return "-";
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
          auto& copy = state().copies[(stack.empty() ? std::string("step") : stack.front().name) + " > " + name + " " + shape];
          copy.count += 1;
          copy.bytes += bytes;
        }
      }
    }
    stack.push_back({name, name + " " + input_type(fn), std::chrono::steady_clock::now()});
    return nullptr;
  }
  static void on_end(const at::RecordFunction&, at::ObserverContext*) {
    auto& stack = open();
    if (stack.empty()) return;
    const Open done = stack.back();
    stack.pop_back();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - done.start).count();
    if (!stack.empty()) stack.back().children += seconds;
    std::lock_guard<std::mutex> lock(state().mutex);
    if (!state().active) return;
    auto& t = state().self_time[done.key];
    t.seconds += seconds - done.children;
    t.count += 1;
  }

  at::CallbackHandle handle_;
};

}  // namespace salt::bench
