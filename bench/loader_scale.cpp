// bench_loader_scale: the loader reading from disk (page cache dropped), on one
// file and on a virtual dataset over many, next to the disk's own read rate
// measured in the same run. See --help. Figures: docs/performance.md.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/memory.h"
#include "data/h5_reader.h"
#include "data/loader.h"
#include "data/toy_data.h"
#include "data/virtual_file.h"
#include "core/remove_tree.h"

namespace fs = std::filesystem;
using namespace salt::data;
using Clock = std::chrono::steady_clock;

namespace {

const char* kHelp = R"(bench_loader_scale: salt-cpp's loader on data read from disk, not the page cache.

Writes toy training data (UPP format, LZF; GN2's 2 jet + 19 track variables and its
labels) twice: one file of N jets, and F files of N/F jets joined by a virtual
dataset (what a wildcard in data.train_file builds). Then, in the same run:
  disk    the page cache of the single file dropped (posix_fadvise DONTNEED), the
          file read sequentially in 4 MiB blocks: the disk's rate, in jets/s of
          this file (the baseline: no loader can read faster from this disk)
  loader  for each layout (single, vds) and worker count: the page cache of every
          file dropped, then one shuffled training epoch (weak shuffling, the
          batches in random order) in a fresh process; jets/s, loader/disk, and
          the process's peak resident memory growth next to the bound
          batch bytes x (prefetch_factor x workers + 2) (batches in flight).
Make N large enough that the files exceed the RAM to measure the disk and not the
page cache with certainty (the cache is dropped before every measurement anyway).

Options:
  --jets N        jets in all (default 400000; ~170 MB per layout)
  --files F       files of the virtual dataset (default 50)
  --batch B       batch size (default 1000, GN2's)
  --workers LIST  comma-separated worker counts (default 0,1,2)
  --read N        stop each measured epoch after N jets (default: the whole epoch); the
                  batches still come from the whole file in shuffled order, so a sample
                  of a file larger than the RAM is read from disk at the epoch's rate
  --dir PATH      where to write the data (default: a fresh directory under $TMPDIR)
  --reuse         use the data already in --dir (written by an earlier --keep run)
  --keep          keep the data
  -h, --help      this text
)";

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void drop_cache(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

ReaderOptions gn2_options() {
  ReaderOptions o;
  o.set_variables({{"jets", toy_jet_variables()}, {"tracks", toy_track_variables()}})
      .set_labels({{"jets", {"flavour_label"}}, {"tracks", {"ftagTruthOriginLabel", "ftagTruthVertexIndex"}}});
  return o;
}

// One epoch in this process (a child of the main run): prints "<jets/s> <peak growth MiB> <bound MiB>".
int measure(const fs::path& file, int workers, int64_t batch, int64_t read_limit) {
  const double before = salt::current_rss_mb();
  auto reader = std::make_shared<H5Reader>(file, gn2_options());
  for (const auto& f : reader->files()) drop_cache(f);
  const int prefetch = 2;
  Loader loader(reader, SamplerOptions::training(0, batch, 42),
                LoaderOptions().set_num_workers(workers).set_prefetch_factor(prefetch));
  const auto t0 = Clock::now();
  int64_t seen = 0;
  double batch_mb = 0;
  loader.start_epoch(0);
  while (auto b = loader.next()) {
    seen += b->size;
    if (batch_mb == 0)
      for (const auto& [name, t] : b->inputs) batch_mb += static_cast<double>(t.numel() * t.element_size()) / (1 << 20);
    if (read_limit > 0 && seen >= read_limit) break;
  }
  const double rate = static_cast<double>(seen) / seconds_since(t0);
  std::printf("%.0f %.1f %.1f\n", rate, salt::peak_rss_mb() - before, batch_mb * (prefetch * workers + 2));
  return 0;
}

struct Measured {
  double rate = 0, growth = 0, bound = 0;
};

Measured measure_in_child(const fs::path& file, int workers, int64_t batch, int64_t read_limit) {
  std::string cmd = "/proc/self/exe --measure " + file.string() + " " + std::to_string(workers) + " " +
                    std::to_string(batch) + " " + std::to_string(read_limit);
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  cmd.replace(0, std::string("/proc/self/exe").size(), self);
  Measured m;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p || std::fscanf(p, "%lf %lf %lf", &m.rate, &m.growth, &m.bound) != 3) m.rate = -1;
  if (p) ::pclose(p);
  return m;
}

double disk_rate(const fs::path& file, int64_t jets) {
  drop_cache(file);
  const int fd = ::open(file.c_str(), O_RDONLY);
  std::vector<char> buf(4 << 20);
  const auto t0 = Clock::now();
  while (::read(fd, buf.data(), buf.size()) > 0) {
  }
  const double t = seconds_since(t0);
  ::close(fd);
  return static_cast<double>(jets) / t;
}

std::vector<int> parse_list(const std::string& list) {
  std::vector<int> out;
  for (size_t p = 0; p < list.size();) {
    const size_t q = list.find(',', p);
    out.push_back(std::stoi(list.substr(p, q - p)));
    p = q == std::string::npos ? list.size() : q + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 6 && std::string(argv[1]) == "--measure")
    return measure(argv[2], std::stoi(argv[3]), std::stoll(argv[4]), std::stoll(argv[5]));
  int64_t jets = 400000, batch = 1000, read_limit = 0;
  int files = 50;
  std::vector<int> worker_counts = {0, 1, 2};
  fs::path dir;
  bool keep = false, reuse = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_loader_scale: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "--jets") {
      jets = std::stoll(value());
    } else if (a == "--files") {
      files = std::stoi(value());
    } else if (a == "--batch") {
      batch = std::stoll(value());
    } else if (a == "--workers") {
      worker_counts = parse_list(value());
    } else if (a == "--read") {
      read_limit = std::stoll(value());
    } else if (a == "--dir") {
      dir = value();
    } else if (a == "--keep") {
      keep = true;
    } else if (a == "--reuse") {
      reuse = true;
    } else {
      std::fprintf(stderr, "bench_loader_scale: unknown option %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  const bool own_dir = dir.empty();
  if (own_dir) {
    const char* tmp = std::getenv("TMPDIR");
    dir = fs::path(tmp ? tmp : "/tmp") / ("bench_loader_scale." + std::to_string(getpid()));
  }
  try {
    std::printf("bench_loader_scale: %lld jets, %d files for the virtual dataset, batch %lld, %u hardware threads, "
                "%s per measurement\n",
                static_cast<long long>(jets), files, static_cast<long long>(batch), std::thread::hardware_concurrency(),
                read_limit > 0 ? (std::to_string(read_limit) + " jets").c_str() : "one epoch");
    const fs::path single = dir / "single" / "pp_output_train.h5";
    const std::string pattern = (dir / "parts" / "part_*.h5").string();
    if (!reuse) {
      const auto t0 = Clock::now();
      write_toy_data(ToyDataOptions().set_out_dir(dir / "single").set_num_train(jets).set_num_val(0).set_num_test(0));
      for (int f = 0; f < files; ++f) {
        const fs::path part_dir = dir / "tmp_part";
        auto written = write_toy_data(ToyDataOptions()
                                          .set_out_dir(part_dir)
                                          .set_num_train(jets / files)
                                          .set_num_val(0)
                                          .set_num_test(0)
                                          .set_seed(1000 + f));
        fs::create_directories(dir / "parts");
        char name[32];
        std::snprintf(name, sizeof name, "part_%03d.h5", f);
        fs::rename(written.train, dir / "parts" / name);
        salt::remove_tree(part_dir);
      }
      std::printf("  data              %.0f s to write, %.0f MB single file, %d parts\n", seconds_since(t0),
                  static_cast<double>(fs::file_size(single)) / 1e6, files);
    }
    const fs::path vds = build_virtual_file(pattern, dir / "parts_vds" / "vds.h5");
    const double disk = disk_rate(single, jets);
    std::printf("  disk (baseline)   %10.0f jets/s  (sequential 4 MiB reads of the single file, cache dropped; %.0f "
                "MB/s)\n",
                disk, disk * static_cast<double>(fs::file_size(single)) / static_cast<double>(jets) / 1e6);
    for (const auto& [layout, file] : {std::pair<const char*, fs::path>{"single", single}, {"vds", vds}})
      for (int w : worker_counts) {
        const auto m = measure_in_child(file, w, batch, read_limit);
        if (m.rate < 0) throw std::runtime_error(std::string("measurement failed: ") + layout);
        std::printf("  loader %-6s %d worker%s %10.0f jets/s  loader/disk = %.2f   peak RSS growth %6.1f MiB (bound "
                    "%.1f MiB)\n",
                    layout, w, w == 1 ? " " : "s", m.rate, m.rate / disk, m.growth, m.bound);
      }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_loader_scale: error: %s\n", e.what());
    if (own_dir && !keep) salt::remove_tree(dir);
    return 1;
  }
  if (own_dir && !keep) salt::remove_tree(dir);
  return 0;
}
