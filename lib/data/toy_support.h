// Helpers shared by the toy data writers (toy_data.cpp: the GN2 caricature;
// toy_schema.cpp: any config's inputs and labels). Internal to lib/data.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/atomic_file.h"
#include "core/errors.h"

namespace salt::data::toy {

namespace fs = std::filesystem;

// --- deterministic randomness ----------------------------------------------------------------

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Draws are our own formulas on top of mt19937_64 (whose output the standard fixes),
// so a seed gives the same files everywhere.
struct Rng {
  std::mt19937_64 engine;
  explicit Rng(uint64_t seed) : engine(seed) {}
  double uniform() { return static_cast<double>(engine() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  bool bernoulli(double p) { return uniform() < p; }
  double exponential(double mean) { return -mean * std::log1p(-uniform()); }
  double normal(double mu = 0.0, double sigma = 1.0) {
    // Box-Muller, one value per call (simple and stateless).
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return mu + sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  int poisson(double mean) {  // Knuth; our means are small
    const double limit = std::exp(-mean);
    int k = 0;
    double p = uniform();
    while (p > limit) {
      ++k;
      p *= uniform();
    }
    return k;
  }
};

struct Moments {  // Chan et al.'s parallel mean/variance
  double n = 0, mean = 0, m2 = 0;
  void merge(double nb, double mb, double m2b) {
    if (nb == 0) return;
    double total = n + nb, delta = mb - mean;
    mean += delta * nb / total;
    m2 += m2b + delta * delta * n * nb / total;
    n = total;
  }
  double std() const { return n > 0 ? std::sqrt(m2 / n) : 0.0; }
};

struct BlockMoments {  // shifted sums within one block, merged into Moments at the end
  double shift = 0, s1 = 0, s2 = 0, n = 0;
  void add(double x) {
    if (n == 0) shift = x;
    double d = x - shift;
    s1 += d;
    s2 += d * d;
    n += 1;
  }
  void flush_into(Moments& m) {
    if (n == 0) return;
    m.merge(n, shift + s1 / n, s2 - s1 * s1 / n);
    *this = BlockMoments{};
  }
};

// Temp files of one output set, removed on destruction unless committed; commit()
// renames them all into place, so a failure or a stop leaves none of the outputs.
class PendingFiles {
 public:
  PendingFiles() = default;
  PendingFiles(const PendingFiles&) = delete;
  PendingFiles& operator=(const PendingFiles&) = delete;
  ~PendingFiles() {
    for (const auto& f : files_) {
      std::error_code ec;
      if (!committed_) fs::remove(f.first, ec);
    }
  }
  // A new temp name next to `final_path`, removed again unless committed.
  fs::path add(const fs::path& final_path) {
    files_.emplace_back(temp_name_for(final_path), final_path);
    return files_.back().first;
  }
  void commit() {
    for (const auto& [tmp, final_path] : files_) {
      std::error_code ec;
      fs::rename(tmp, final_path, ec);
      if (ec) throw InputError(fmt::format("cannot write {}: {}", final_path.string(), ec.message()));
    }
    committed_ = true;
  }

 private:
  std::vector<std::pair<fs::path, fs::path>> files_;  // temp, final
  bool committed_ = false;
};

inline std::string yaml_number(double x) {
  std::string s = fmt::format("{}", x);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // 1 -> 1.0 like PyYAML
  return s;
}

inline std::string class_weights_yaml(const std::map<int64_t, int64_t>& counts) {
  // UPP: weights = total / count per label (sorted by label value), divided by the
  // smallest, rounded to 2 decimals.
  double total = 0;
  for (const auto& [label, c] : counts) total += static_cast<double>(c);
  std::vector<double> w;
  for (const auto& [label, c] : counts) w.push_back(total / static_cast<double>(c));
  double lo = w.empty() ? 1.0 : *std::min_element(w.begin(), w.end());
  std::string out;
  for (double x : w) out += fmt::format("  - {}\n", yaml_number(std::round(x / lo * 100.0) / 100.0));
  return out;
}

}  // namespace salt::data::toy
