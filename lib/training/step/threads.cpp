#include "training/step/threads.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/errors.h"

#include "core/env_switch.h"
#include "core/memory_limit.h"
#include "parallel/launch_env.h"
#include "training/step/device.h"

namespace salt::training {

std::optional<int> threads_from_env(const char* value, int cores) {
  const auto threads = env_whole_number("OMP_NUM_THREADS", value, 1, kMaxThreadsPerCore * cores,
                                        std::to_string(kMaxThreadsPerCore) + " threads for each of the " +
                                            std::to_string(cores) + " cores this process may use");
  if (!threads) return std::nullopt;
  return static_cast<int>(*threads);
}

namespace {

// The address-space limit (ulimit -v) in bytes, if there is one.
std::optional<std::size_t> address_space_bytes() {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<std::size_t>(limit.rlim_cur);
}

std::string address_space_limit() {
  const auto bytes = address_space_bytes();
  if (bytes) return "; the address-space limit (ulimit -v) is " + std::to_string(*bytes >> 20) + " MiB";
  const auto limit = memory_limit_text();
  return limit.empty() ? "" : ";" + limit;
}

// Under an address-space limit (ulimit -v, a job wrapper's) a thread that cannot
// map its stack made LibTorch's pool wait for it for ever, deaf to SIGTERM:
// pthreadpool_create does not check pthread_create. So the threads the pool will
// start are started here first, all alive at once, and a refusal is one line.
void require_threads_can_start(int count) {
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  std::vector<std::thread> probes;
  std::string refused;
  for (int i = 0; i < count && refused.empty(); ++i) {
    try {
      probes.emplace_back([&] {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return release; });
      });
    } catch (const std::system_error& e) {
      refused = "cannot start CPU thread " + std::to_string(i + 1) + " of " + std::to_string(count) + " (" +
                e.what() + ")" + address_space_limit() +
                ": raise the limit (a batch system's memory request) or lower OMP_NUM_THREADS";
    }
  }
  {
    std::lock_guard lock(m);
    release = true;
  }
  cv.notify_all();
  for (auto& t : probes) t.join();
  if (!refused.empty()) throw InputError(refused);
}

// OpenBLAS takes a 128 MiB work buffer for each thread doing a GEMM and, when
// malloc refuses one, retries for ever (seen under ulimit -v: a fit spinning in
// blas_memory_alloc, deaf to SIGTERM). So the buffers are mapped once here to
// see that they fit, then one GEMM makes OpenBLAS take its buffer now, at
// start-up, where it keeps it for the run.
constexpr std::size_t kBlasBuffer = (std::size_t{128} << 20) + 4096;

void require_blas_buffers_fit(int threads) {
  const auto limit = memory_limit_text();  // ulimit -v, or the cgroup's through RLIMIT_DATA
  if (limit.empty()) return;
  const std::size_t bytes = kBlasBuffer * static_cast<std::size_t>(threads);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    throw InputError("out of memory: the BLAS work buffers (128 MiB for each of " + std::to_string(threads) +
                     " CPU thread(s)) do not fit" + limit +
                     ": raise the limit (a batch system's memory request) or lower OMP_NUM_THREADS");
  }
  munmap(p, bytes);
  const auto a = torch::ones({256, 256});
  (void)torch::mm(a, a);
}

}  // namespace

ThreadChoice configure_torch_threads(const TrainerConfig& trainer, const StepOption<int>& threads) {
  ThreadChoice choice;
  const int local_ranks = parallel::read_dist_env(parallel::process_environment()).local_world_size;
  const bool on_gpu = select_device(trainer).is_cuda();
  if (!on_gpu) keep_within_cgroup_memory(local_ranks);  // before the threads map their stacks
  if (threads.source == OptionSource::kEnvironment) {
    choice = {threads.value, "OMP_NUM_THREADS"};
  } else {
    auto in = this_machine();
    in.local_ranks = local_ranks;
    in.on_gpu = on_gpu;
    choice = choose_threads(in);
  }
  // LibTorch's pool is sized by the cores until set_num_threads resizes it.
  require_threads_can_start(std::max<int>(choice.threads, static_cast<int>(std::thread::hardware_concurrency())));
  torch::set_num_threads(choice.threads);
  require_blas_buffers_fit(choice.threads);
  return {torch::get_num_threads(), choice.why};
}

}  // namespace salt::training
