// A fit's callbacks, a part of FitRun: the list trainer.callbacks made and, under
// trainer.profiler, the profiler that times each hook as Lightning's does
// ([Callback]<class>.<hook>) and each of the loop's actions.
#pragma once
#include <memory>
#include <string>
#include <utility>

#include "training/callback.h"
#include "training/outputs/profiler.h"

namespace salt::training {

// A callback's class without its namespaces (ProgressBar), for the profiler.
std::string callback_class_name(const callbacks::Callback& c);

class FitCallbacks {
 public:
  FitCallbacks() = default;
  FitCallbacks(callbacks::CallbackList list, std::unique_ptr<SimpleProfiler> profiler)
      : profiler_(std::move(profiler)), list_(std::move(list)) {}

  // Calls a hook on every callback, timed per callback under a profiler.
  template <class Hook, class... Args>
  void hook(const char* name, Hook h, Args&&... args) {
    if (!profiler_) return list_.call(h, args...);
    for (const auto& c : list_.all()) {
      SimpleProfiler::Scope scope(profiler_.get(), "[Callback]" + callback_class_name(*c) + "." + name);
      ((*c).*h)(args...);
    }
  }

  // Times one of the loop's actions while the scope lives (nothing without a profiler).
  SimpleProfiler::Scope profile(const char* action) { return SimpleProfiler::Scope(profiler_.get(), action); }

  const std::vector<std::unique_ptr<callbacks::Callback>>& all() const { return list_.all(); }
  SimpleProfiler* profiler() const { return profiler_.get(); }

 private:
  std::unique_ptr<SimpleProfiler> profiler_;  // destroyed after the callbacks, which may still time a hook
  callbacks::CallbackList list_;
};

}  // namespace salt::training
