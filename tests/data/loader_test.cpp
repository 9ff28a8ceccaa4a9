// Loader: sampler order for any number of workers, prefetch, shutdown, errors.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "core/errors.h"
#include "data/loader.h"
#include "h5_test_files.h"
#include "support/test_support.h"

namespace salt::data {
namespace {

namespace fs = std::filesystem;
using testfiles::FieldSpec;

constexpr int64_t kRows = 1003;
constexpr int64_t kSlots = 8;

double value(int64_t r, int64_t s, const std::string& name) {
  if (name == "valid") return s < 1 + r % kSlots;
  if (name == "label") return r % 4;
  return static_cast<double>(r) + 0.125 * static_cast<double>(s) + (name == "b" ? 0.5 : 0.0);
}

fs::path write_file(const fs::path& path, int64_t bad_row = -1) {
  h5::File f = h5::File::create(path);
  auto fn = [bad_row](int64_t r, int64_t s, const std::string& n) {
    if (r == bad_row && s == 0 && n == "a") return std::nan("");
    return value(r, s, n);
  };
  testfiles::write_dataset(f, "jets", {{"a", h5::kF4}, {"label", h5::kI4}}, kRows, 0, fn, h5::Compression::Lzf, {64});
  testfiles::write_dataset(f, "tracks", {{"valid", h5::kBool}, {"a", h5::kF4}, {"b", h5::kF8}}, kRows, kSlots, fn,
                           h5::Compression::Lzf, {50, kSlots});
  return path;
}

std::shared_ptr<H5Reader> reader_for(const fs::path& path) {
  ReaderOptions o;
  o.set_variables({{"jets", {"a"}}, {"tracks", {"a", "b"}}}).set_labels({{"jets", {"label"}}});
  return std::make_shared<H5Reader>(path, o);
}

struct Seen {
  std::vector<Slice> slices;
  std::vector<double> checksums;
};

Seen run_epoch(Loader& loader, int64_t epoch) {
  Seen seen;
  loader.start_epoch(epoch);
  while (auto b = loader.next()) {
    seen.slices.push_back({b->start, b->size});
    // the content belongs to the slice
    EXPECT_EQ(b->inputs.at("jets")[0][0].item<float>(), static_cast<float>(b->start));
    EXPECT_EQ(b->labels.at("jets").at("label")[0].item<int64_t>(), b->start % 4);
    seen.checksums.push_back(b->inputs.at("tracks").sum().item<double>());
  }
  return seen;
}

TEST(Loader, SameSequenceForAnyNumberOfWorkers) {
  salt::testing::TempDir dir;
  auto reader = reader_for(write_file(dir / "f.h5"));
  std::vector<std::vector<Seen>> by_workers;
  for (int workers : {0, 1, 2, 4}) {
    Loader loader(reader, SamplerOptions::training(0, 50, 11),
                  LoaderOptions().set_num_workers(workers).set_prefetch_factor(workers == 4 ? 1 : 2));
    EXPECT_EQ(loader.batches_per_epoch(), 20);
    std::vector<Seen> epochs;
    for (int64_t e = 0; e < 3; ++e) epochs.push_back(run_epoch(loader, e));
    // in sampler order
    for (int64_t e = 0; e < 3; ++e) EXPECT_EQ(epochs[static_cast<size_t>(e)].slices, loader.sampler().epoch(e));
    by_workers.push_back(std::move(epochs));
  }
  for (size_t w = 1; w < by_workers.size(); ++w)
    for (size_t e = 0; e < 3; ++e) {
      EXPECT_EQ(by_workers[w][e].slices, by_workers[0][e].slices) << "workers index " << w;
      EXPECT_EQ(by_workers[w][e].checksums, by_workers[0][e].checksums) << "workers index " << w;
    }
}

TEST(Loader, EvaluationKeepsTail) {
  salt::testing::TempDir dir;
  auto reader = reader_for(write_file(dir / "f.h5"));
  Loader loader(reader, SamplerOptions::evaluation(0, 100), LoaderOptions().set_num_workers(2));
  Seen s = run_epoch(loader, 0);
  ASSERT_EQ(s.slices.size(), 11u);
  EXPECT_EQ(s.slices.back(), (Slice{1000, 3}));
  EXPECT_FALSE(loader.next().has_value());  // exhausted stays exhausted
}

TEST(Loader, ShutdownMidEpochAndRestart) {
  salt::testing::TempDir dir;
  auto reader = reader_for(write_file(dir / "f.h5"));
  auto t0 = std::chrono::steady_clock::now();
  for (int rep = 0; rep < 5; ++rep) {
    Loader loader(reader, SamplerOptions::training(0, 20, 1), LoaderOptions().set_num_workers(3).set_prefetch_factor(4));
    loader.start_epoch(0);
    ASSERT_TRUE(loader.next().has_value());
    if (rep % 2) {
      loader.start_epoch(1);  // abandon epoch 0 half-way
      Seen s;
      while (auto b = loader.next()) s.slices.push_back({b->start, b->size});
      EXPECT_EQ(s.slices, loader.sampler().epoch(1));
    }
    // destructor with batches in flight
  }
  Loader never_started(reader, SamplerOptions::training(0, 20, 1), LoaderOptions().set_num_workers(2));
  EXPECT_FALSE(never_started.next().has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

TEST(Loader, WorkerErrorIsRethrownInOrder) {
  salt::testing::TempDir dir;
  fs::path path = write_file(dir / "nan.h5", 530);
  auto reader = reader_for(path);
  for (int workers : {0, 2}) {
    Loader loader(reader, SamplerOptions::evaluation(0, 100), LoaderOptions().set_num_workers(workers));
    loader.start_epoch(0);
    for (int k = 0; k < 5; ++k) ASSERT_TRUE(loader.next().has_value()) << "batch " << k;
    try {
      loader.next();
      FAIL() << "no error";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), "Non-finite inputs for 'jets' in " + path.string());
    }
    EXPECT_FALSE(loader.next().has_value());  // the epoch ended
    loader.start_epoch(0);                    // and the loader is still usable
    EXPECT_TRUE(loader.next().has_value());
  }
}

TEST(Loader, PersistentWorkers) {
  salt::testing::TempDir dir;
  auto reader = reader_for(write_file(dir / "f.h5"));
  Loader keep(reader, SamplerOptions::evaluation(0, 200), LoaderOptions().set_num_workers(2));
  Loader drop(reader, SamplerOptions::evaluation(0, 200),
              LoaderOptions().set_num_workers(2).set_persistent_workers(false));
  for (Loader* l : {&keep, &drop}) {
    EXPECT_EQ(l->live_threads(), 0);
    Seen s = run_epoch(*l, 0);
    EXPECT_EQ(s.slices.size(), 6u);
  }
  EXPECT_EQ(keep.live_threads(), 2);
  EXPECT_EQ(drop.live_threads(), 0);
  EXPECT_EQ(run_epoch(drop, 1).slices.size(), 6u);
}

TEST(Loader, PinMemoryIsANoOpWithoutCuda) {
  salt::testing::TempDir dir;
  auto reader = reader_for(write_file(dir / "f.h5"));
  Loader loader(reader, SamplerOptions::evaluation(0, 500), LoaderOptions().set_num_workers(1).set_pin_memory(true));
  EXPECT_EQ(loader.pins_memory(), torch::cuda::is_available());
  loader.start_epoch(0);
  auto b = loader.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->inputs["tracks"].is_pinned(), torch::cuda::is_available());
}

TEST(Loader, RejectsBadOptions) {
  salt::testing::TempDir dir;
  auto reader = reader_for(write_file(dir / "f.h5"));
  EXPECT_THROW(Loader(reader, SamplerOptions::evaluation(0, 5), LoaderOptions().set_num_workers(-1)), InputError);
  EXPECT_THROW(Loader(reader, SamplerOptions::evaluation(0, 5), LoaderOptions().set_prefetch_factor(0)), InputError);
}

}  // namespace
}  // namespace salt::data
