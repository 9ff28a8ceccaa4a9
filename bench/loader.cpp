// bench_loader: data loader throughput next to the physical limit, measured in one run.
// See --help. Figures: docs/data.md ("Loader design").
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <string>
#include <vector>

#include "data/h5_reader.h"
#include "data/loader.h"
#include "data/norm_dict.h"
#include "data/toy_data.h"
#include "core/remove_tree.h"

namespace fs = std::filesystem;
using namespace salt::data;
using Clock = std::chrono::steady_clock;

namespace {

const char* kHelp = R"(bench_loader: salt-cpp data loader throughput (jets/s) next to the physical limit.

Generates a toy training file (UPP format, LZF, GN2's 2 jet + 19 track variables,
labels flavour_label, ftagTruthOriginLabel, ftagTruthVertexIndex), reads it once to
put it in the page cache, then measures in the same run:
  raw     H5Dread of whole compound records, batch by batch (in the loader's
          shuffled order), no conversion:
          the physical limit of anything that reads through HDF5 (I/O from page cache +
          LZF decompression, all under HDF5's global lock)
  convert the conversion alone (records -> float32/int64 tensors), one thread
  chunks  the direct design's share under the lock: H5Dread_chunk of the compressed
          chunks only (decompression then runs in the workers, outside HDF5)
  loader  the Loader (shuffled training epochs) with 0, 1, 2 workers, and loader/raw,
          for both designs: "direct" (default: chunks read raw under the lock,
          decompressed + converted in parallel) and "h5dread" (whole records via
          H5Dread, decompression under the lock, only conversion in parallel)
  RSS     RSS after each of many epochs of a 2-worker loader (must not grow over the
          second half; the first epochs may settle allocator arenas), and peak RSS

Options:
  --jets N        jets in the file (default 200000)
  --batch B       batch size (default 4000)
  --epochs E      epochs for the RSS check (default 20)
  --workers LIST  comma-separated worker counts (default 0,1,2)
  --compression C lzf (default, like UPP), gzip or none
  --dir PATH      where to write the file (default: a fresh directory under $TMPDIR)
  --keep          keep the generated file
  -h, --help      this text
)";

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double rss_mb() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

ReaderOptions gn2_options() {
  ReaderOptions o;
  o.set_variables({{"jets", toy_jet_variables()}, {"tracks", toy_track_variables()}})
      .set_labels({{"jets", {"flavour_label"}}, {"tracks", {"ftagTruthOriginLabel", "ftagTruthVertexIndex"}}});
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a crash still leaves how far it got in a log file
  int64_t jets = 200000, batch = 4000;
  int epochs = 20;
  std::vector<int> worker_counts = {0, 1, 2};
  fs::path dir;
  bool keep = false;
  h5::Compression compression = h5::Compression::Lzf;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_loader: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "--jets") {
      jets = std::stoll(value());
    } else if (a == "--batch") {
      batch = std::stoll(value());
    } else if (a == "--epochs") {
      epochs = std::stoi(value());
    } else if (a == "--workers") {
      worker_counts.clear();
      std::string list = value();
      for (size_t p = 0; p < list.size();) {
        size_t q = list.find(',', p);
        worker_counts.push_back(std::stoi(list.substr(p, q - p)));
        p = q == std::string::npos ? list.size() : q + 1;
      }
    } else if (a == "--compression") {
      compression = h5::parse_compression(value());
    } else if (a == "--dir") {
      dir = value();
    } else if (a == "--keep") {
      keep = true;
    } else {
      std::fprintf(stderr, "bench_loader: unknown option %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  const bool own_dir = dir.empty();
  if (own_dir) {
    const char* tmp = std::getenv("TMPDIR");
    dir = fs::path(tmp ? tmp : "/tmp") / ("bench_loader." + std::to_string(getpid()));
  }

  try {
    std::printf("bench_loader: %lld jets, batch %lld, %u hardware threads\n", static_cast<long long>(jets),
                static_cast<long long>(batch), std::thread::hardware_concurrency());
    auto t0 = Clock::now();
    ToyDataFiles files =
        write_toy_data(ToyDataOptions().set_out_dir(dir).set_num_train(jets).set_num_val(0).set_num_test(0).set_compression(
            compression));
    std::printf("  toy file          %.1f s to generate, %.1f MB on disk (%s)\n", seconds_since(t0),
                static_cast<double>(fs::file_size(files.train)) / 1e6, h5::to_string(compression).c_str());
    {  // page cache
      std::ifstream in(files.train, std::ios::binary);
      std::vector<char> buf(1 << 20);
      while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
      }
    }

    auto reader = std::make_shared<H5Reader>(files.train, gn2_options().set_direct_chunks(false));
    auto direct = std::make_shared<H5Reader>(files.train, gn2_options());
    const int64_t n_batches = jets / batch;
    const int64_t used = n_batches * batch;

    // Physical limit: whole records, no conversion; and the conversion alone. Same
    // (shuffled) batch order as the loader's first epoch.
    const std::vector<Slice> order = BatchSampler(SamplerOptions::training(jets, batch, 42)).epoch(0);
    double t_raw = 0, t_conv = 0;
    double raw_bytes = 0;
    for (int rep = 0; rep < 2; ++rep) {  // best of two
      double tr = 0, tc = 0;
      for (const Slice& sl : order) {
        auto a = Clock::now();
        RawBatch raw = reader->read_raw(sl.start, sl.size);
        tr += seconds_since(a);
        a = Clock::now();
        salt::Batch b = reader->convert(std::move(raw));
        tc += seconds_since(a);
      }
      t_raw = rep == 0 ? tr : std::min(t_raw, tr);
      t_conv = rep == 0 ? tc : std::min(t_conv, tc);
    }
    {
      h5::File f = h5::File::open_read(files.train);
      raw_bytes = static_cast<double>(used) * (static_cast<double>(f.dataset("jets").layout().record_size) +
                                               40.0 * static_cast<double>(f.dataset("tracks").layout().record_size));
    }
    const double raw_rate = static_cast<double>(used) / t_raw;
    std::printf("  raw H5Dread       %10.0f jets/s  (%.0f MB/s of records, 1 thread, the limit)\n", raw_rate,
                raw_bytes / t_raw / 1e6);
    std::printf("  convert only      %10.0f jets/s  (1 thread, records -> tensors)\n",
                static_cast<double>(used) / t_conv);
    {  // data.warn_input_sigma's check against the norm dict (on in every run), same records
      auto checked = std::make_shared<H5Reader>(
          files.train,
          gn2_options().set_direct_chunks(false).set_plausibility(
              norm_params_for(read_norm_dict(files.norm_dict), gn2_options().variables), 1e4, 0));
      double t_checked = 1e30, t_plain = 1e30;
      for (int rep = 0; rep < 2; ++rep) {
        double tc = 0, tp = 0;
        for (const Slice& sl : order) {
          RawBatch raw = checked->read_raw(sl.start, sl.size);
          RawBatch copy = reader->read_raw(sl.start, sl.size);
          auto a = Clock::now();
          salt::Batch b = checked->convert(std::move(raw));
          tc += seconds_since(a);
          a = Clock::now();
          salt::Batch p = reader->convert(std::move(copy));
          tp += seconds_since(a);
        }
        t_checked = std::min(t_checked, tc);
        t_plain = std::min(t_plain, tp);
      }
      std::printf("  convert + norm check %7.0f jets/s  (vs %.0f without: %.2fx the time)\n",
                  static_cast<double>(used) / t_checked, static_cast<double>(used) / t_plain, t_checked / t_plain);
    }
    {
      double t_chunks = 1e30;
      for (int rep = 0; rep < 2; ++rep) {
        auto a = Clock::now();
        for (const Slice& sl : order) {
          RawBatch raw = direct->read_raw(sl.start, sl.size);
          (void)raw;
        }
        t_chunks = std::min(t_chunks, seconds_since(a));
      }
      std::printf("  chunks (I/O only) %10.0f jets/s  (the direct design's time under HDF5's lock)\n",
                  static_cast<double>(used) / t_chunks);
    }

    for (const auto& [design, r] : {std::pair<const char*, std::shared_ptr<H5Reader>>{"h5dread", reader},
                                    std::pair<const char*, std::shared_ptr<H5Reader>>{"direct", direct}}) {
      for (int w : worker_counts) {
        Loader loader(r, SamplerOptions::training(0, batch, 42), LoaderOptions().set_num_workers(w));
        double best = 0;
        for (int e = 0; e < 3; ++e) {  // first epoch includes thread start-up; keep the best
          auto a = Clock::now();
          int64_t seen = 0;
          loader.start_epoch(e);
          while (auto b = loader.next()) seen += b->size;
          best = std::max(best, static_cast<double>(seen) / seconds_since(a));
        }
        std::printf("  loader %-7s %d worker%s %10.0f jets/s  loader/raw = %.2f\n", design, w, w == 1 ? " " : "s",
                    best, best / raw_rate);
      }
    }

    // Memory: RSS after every epoch of a 2-worker loader must stay flat.
    {
      Loader loader(direct, SamplerOptions::training(0, batch, 1), LoaderOptions().set_num_workers(2));
      std::vector<double> rss;
      for (int e = 0; e < epochs; ++e) {
        loader.start_epoch(e);
        while (auto b = loader.next()) {
        }
        rss.push_back(rss_mb());
      }
      // A leak grows every epoch; allocator arenas settle in the first few. So the
      // verdict compares the second half of the run.
      const double after_first = rss.front(), last = rss.back(), mid = rss[rss.size() / 2];
      std::printf("  RSS               after epoch 1: %.0f MB, epoch %zu: %.0f MB, epoch %d: %.0f MB;"
                  " growth over the second half %+.1f MB\n",
                  after_first, rss.size() / 2 + 1, mid, epochs, last, last - mid);
      std::printf("  RSS per epoch    ");
      for (double r : rss) std::printf(" %.0f", r);
      std::printf(" MB\n  peak RSS          %.0f MB\n", peak_rss_mb());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_loader: error: %s\n", e.what());
    if (own_dir && !keep) salt::remove_tree(dir);
    return 1;
  }
  if (own_dir && !keep) salt::remove_tree(dir);
  return 0;
}
