// bench_hungarian: the assignment solver of MaskFormer's HungarianMatcher
// (core/linear_assignment.h) on random matrices, next to scipy's
// linear_sum_assignment (salt's solver) on the same matrices in the same run
// (bench/python/lsa_reference.py with /usr/bin/python3). It runs once per jet in
// training, so its time per matrix is what matters. Both totals of the optimal
// costs are printed: they must agree (exit 1 otherwise).
//
// Usage: bench_hungarian [--rows R] [--cols C] [--count N] [--python PATH]
//   defaults: 40 x 5, 100000 matrices.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/install_paths.h"
#include "core/linear_assignment.h"

namespace fs = std::filesystem;

namespace {

std::string reference_script() {
  const std::string path = salt::build_source_dir().string() + "/bench/python/lsa_reference.py";
  return std::ifstream(path).good() ? path : "bench/python/lsa_reference.py";
}

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = 40, cols = 5, count = 100000;
  std::string python = "/usr/bin/python3";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--rows" || a == "--cols" || a == "--count" || a == "--python") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--rows") rows = std::stoll(v);
      if (a == "--cols") cols = std::stoll(v);
      if (a == "--count") count = std::stoll(v);
      if (a == "--python") python = v;
    } else {
      std::fprintf(stderr, "usage: bench_hungarian [--rows R] [--cols C] [--count N] [--python PATH]\n");
      return a == "-h" || a == "--help" ? 0 : 2;
    }
  }
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> dist(0.0, 1.0);
  std::vector<double> all(static_cast<size_t>(count * rows * cols));
  for (auto& x : all) x = dist(rng);

  const auto t0 = std::chrono::steady_clock::now();
  double total = 0;
  std::vector<double> m(static_cast<size_t>(rows * cols));
  for (int64_t k = 0; k < count; ++k) {
    std::copy_n(all.begin() + k * rows * cols, rows * cols, m.begin());
    total += salt::linear_sum_assignment(m, rows, cols).cost;
  }
  const double ours = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / count * 1e6;
  std::printf("bench_hungarian: %lld random %lld x %lld matrices (uniform costs)\n", static_cast<long long>(count),
              static_cast<long long>(rows), static_cast<long long>(cols));
  std::printf("  salt-cpp linear_sum_assignment   %8.3f us/matrix   total cost %.6f\n", ours, total);

  const fs::path file = fs::temp_directory_path() / ("bench_hungarian." + std::to_string(::getpid()) + ".bin");
  std::ofstream(file, std::ios::binary)
      .write(reinterpret_cast<const char*>(all.data()), static_cast<std::streamsize>(all.size() * sizeof(double)));
  const std::string cmd = python + " " + reference_script() + " " + file.string() + " " + std::to_string(count) + " " +
                          std::to_string(rows) + " " + std::to_string(cols) + " 2>&1";
  double theirs = 0, their_total = 0;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  const bool ok = pipe && std::fscanf(pipe, "%lf %lf", &theirs, &their_total) == 2;
  if (pipe) ::pclose(pipe);
  fs::remove(file);
  if (!ok) {
    std::printf("  scipy baseline unavailable (needs %s with numpy and scipy: apt-get install python3-scipy)\n",
                python.c_str());
    return 0;
  }
  std::printf("  scipy linear_sum_assignment      %8.3f us/matrix   total cost %.6f   (baseline)\n", theirs, their_total);
  std::printf("  ratio scipy/salt-cpp             %8.2fx\n", theirs / ours);
  if (std::abs(total - their_total) > 1e-6 * std::max(1.0, std::abs(total))) {
    std::printf("  MISMATCH: the optimal costs differ\n");
    return 1;
  }
  return 0;
}
