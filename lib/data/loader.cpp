#include "data/loader.h"

#include <algorithm>

#include <fmt/format.h>
#include <torch/cuda.h>

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "core/errors.h"
#include "core/memory_limit.h"

namespace salt::data {

struct Loader::Impl {
  std::shared_ptr<const H5Reader> reader;
  BatchSampler sampler;
  LoaderOptions opts;
  bool pin = false;

  struct Result {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };

  // Everything below is guarded by `m`.
  mutable std::mutex m;
  std::condition_variable work_cv;   // workers: a batch can be claimed / exit
  std::condition_variable ready_cv;  // consumer: a result arrived
  std::vector<std::thread> threads;
  bool exit_threads = false;
  uint64_t generation = 0;  // bumped whenever the current epoch is abandoned or replaced
  bool active = false;
  int64_t epoch = 0;
  std::vector<Slice> slices;
  size_t next_claim = 0;
  size_t next_deliver = 0;
  std::map<size_t, Result> results;

  Impl(std::shared_ptr<const H5Reader> r, SamplerOptions s, LoaderOptions o)
      : reader(std::move(r)), sampler(s), opts(o) {}

  size_t capacity() const { return static_cast<size_t>(opts.num_workers) * static_cast<size_t>(opts.prefetch_factor); }

  void worker() {
    std::unique_lock<std::mutex> lk(m);
    for (;;) {
      work_cv.wait(lk, [&] {
        return exit_threads ||
               (active && next_claim < slices.size() && next_claim < next_deliver + capacity());
      });
      if (exit_threads) return;
      const size_t k = next_claim++;
      const Slice slice = slices[k];
      const uint64_t gen = generation;
      const int64_t this_epoch = epoch;
      lk.unlock();
      Result r;
      try {
        r.batch = reader->read(slice.start, slice.size, pin, this_epoch);
      } catch (...) {
        r.error = std::current_exception();
      }
      lk.lock();
      if (gen == generation) {
        results.emplace(k, std::move(r));
        ready_cv.notify_all();
      } else {
        // A stale batch of an abandoned epoch: free it outside the lock.
        lk.unlock();
        r = Result{};
        lk.lock();
      }
    }
  }

  void spawn_locked() {
    if (opts.num_workers == 0 || !threads.empty()) return;
    exit_threads = false;
    try {
      for (int i = 0; i < opts.num_workers; ++i) threads.emplace_back([this] { worker(); });
    } catch (const std::exception& e) {  // the process's thread or memory limit
      const auto started = threads.size();
      exit_threads = true;
      work_cv.notify_all();
      m.unlock();  // the workers take `m` to see exit_threads
      for (auto& t : threads) t.join();
      m.lock();
      threads.clear();
      exit_threads = false;
      const auto limit = memory_limit_text();  // a thread's stack is memory too
      throw InputError(fmt::format("cannot start data.num_workers = {} loader threads (started {}: {}){}", opts.num_workers,
                                   started, e.what(), limit.empty() ? "; lower it" : limit + ": lower it or raise the limit"));
    }
  }

  // Tells the workers to exit and joins them; must be called without holding `m`.
  void join_threads() {
    std::vector<std::thread> to_join;
    {
      std::lock_guard<std::mutex> lk(m);
      exit_threads = true;
      to_join.swap(threads);
    }
    work_cv.notify_all();
    for (auto& t : to_join) t.join();
    std::lock_guard<std::mutex> lk(m);
    exit_threads = false;
  }

  // Ends the current epoch; returns the batches to drop so they are freed unlocked.
  std::map<size_t, Result> abandon_locked() {
    ++generation;
    active = false;
    slices.clear();
    next_claim = next_deliver = 0;
    std::map<size_t, Result> dropped;
    dropped.swap(results);
    return dropped;
  }

  void finish_epoch() {
    std::map<size_t, Result> dropped;
    {
      std::lock_guard<std::mutex> lk(m);
      dropped = abandon_locked();
    }
    if (!opts.persistent_workers) join_threads();
  }
};

Loader::Loader(std::shared_ptr<const H5Reader> reader, SamplerOptions sampler, LoaderOptions options) {
  if (!reader) throw InputError("Loader needs a reader");
  if (options.num_workers < 0) throw InputError(fmt::format("data.num_workers must be >= 0, got {}", options.num_workers));
  if (options.num_workers > kMaxLoaderWorkers)
    throw InputError(fmt::format("data.num_workers must be at most {}, got {}", kMaxLoaderWorkers, options.num_workers));
  if (options.prefetch_factor < 1)
    throw InputError(fmt::format("data.prefetch_factor must be >= 1, got {}", options.prefetch_factor));
  sampler.num_rows = reader->num_rows();
  impl_ = std::make_unique<Impl>(std::move(reader), sampler, options);
  impl_->pin = options.pin_memory && torch::cuda::is_available();
}

Loader::~Loader() {
  if (!impl_) return;
  {
    std::lock_guard<std::mutex> lk(impl_->m);
    impl_->abandon_locked();
  }
  impl_->join_threads();
}

void Loader::start_epoch(int64_t epoch) { begin(epoch, impl_->sampler.epoch(epoch)); }

void Loader::start_epoch(int64_t epoch, const std::vector<int64_t>& order, int64_t restart_done) {
  auto slices = impl_->sampler.epoch_in(order, epoch);
  const auto n = static_cast<int64_t>(slices.size());
  if (restart_done > 0 && restart_done < n) std::rotate(slices.begin(), slices.begin() + (n - restart_done), slices.end());
  begin(epoch, std::move(slices));
}

void Loader::begin(int64_t epoch, std::vector<Slice> slices) {
  std::map<size_t, Impl::Result> dropped;
  {
    std::lock_guard<std::mutex> lk(impl_->m);
    dropped = impl_->abandon_locked();
    impl_->slices = std::move(slices);
    impl_->epoch = epoch;
    impl_->active = true;
    impl_->spawn_locked();
  }
  impl_->work_cv.notify_all();
}

std::optional<Batch> Loader::next() {
  Impl& d = *impl_;
  if (d.opts.num_workers == 0) {
    Slice slice;
    int64_t epoch = 0;
    {
      std::lock_guard<std::mutex> lk(d.m);
      if (!d.active) return std::nullopt;
      if (d.next_deliver >= d.slices.size()) {
        d.abandon_locked();
        return std::nullopt;
      }
      slice = d.slices[d.next_deliver++];
      epoch = d.epoch;
    }
    try {
      return d.reader->read(slice.start, slice.size, d.pin, epoch);
    } catch (...) {
      stop();
      throw;
    }
  }

  Impl::Result r;
  {
    std::unique_lock<std::mutex> lk(d.m);
    if (!d.active) return std::nullopt;
    if (d.next_deliver >= d.slices.size()) {
      lk.unlock();
      d.finish_epoch();
      return std::nullopt;
    }
    const size_t k = d.next_deliver;
    const uint64_t gen = d.generation;
    d.ready_cv.wait(lk, [&] { return d.results.count(k) > 0 || d.generation != gen; });
    if (d.generation != gen) return std::nullopt;  // stopped from another thread
    auto node = d.results.extract(k);
    r = std::move(node.mapped());
    ++d.next_deliver;
  }
  d.work_cv.notify_all();  // a prefetch slot is free
  if (r.error) {
    d.finish_epoch();
    std::rethrow_exception(r.error);
  }
  return std::move(r.batch);
}

void Loader::stop() {
  impl_->finish_epoch();
  impl_->ready_cv.notify_all();
}

int64_t Loader::batches_per_epoch() const { return impl_->sampler.batches_per_epoch(); }
const H5Reader& Loader::reader() const { return *impl_->reader; }
const BatchSampler& Loader::sampler() const { return impl_->sampler; }
const LoaderOptions& Loader::options() const { return impl_->opts; }
bool Loader::pins_memory() const { return impl_->pin; }

int Loader::live_threads() const {
  std::lock_guard<std::mutex> lk(impl_->m);
  return static_cast<int>(impl_->threads.size());
}

}  // namespace salt::data
