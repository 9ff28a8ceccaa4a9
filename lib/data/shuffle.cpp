#include "data/shuffle.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>  // getpid

#include <malloc.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/signals.h"
#include "data/h5_file.h"
#include "data/virtual_file.h"
#include "core/remove_tree.h"

namespace salt::data {
namespace fs = std::filesystem;

namespace {

// Measured: HDF5's library state, its chunk caches (1 MiB per open dataset) and LZF
// buffers grow a shuffle's resident memory by 6-7 MiB whatever the budget; 8 are set aside.
constexpr int64_t kHdf5ReserveMb = 8, kMinimumBudgetMb = 10;
// 16 TiB: beyond any machine's memory, and far below where the budget in bytes
// (memory_mb << 20) overflows int64 (near INT64_MAX it became 60,000 tiny buckets).
constexpr int64_t kMaximumBudgetMb = int64_t{1} << 24;

// Draws bucket b with probability (room left in b) / (room left in all): jets are
// dealt into urns of fixed sizes without replacement. A Fenwick tree keeps a draw at
// O(log B) for hundreds of millions of jets.
class Urns {
 public:
  explicit Urns(const std::vector<int64_t>& sizes) : tree_(sizes.size() + 1, 0) {
    for (size_t i = 0; i < sizes.size(); ++i) add(i, sizes[i]);
  }
  size_t draw(std::mt19937_64& rng) {
    const int64_t r = static_cast<int64_t>(bounded(rng, static_cast<uint64_t>(total_)));
    size_t pos = 0;  // largest pos with prefix(pos) <= r, by binary lifting
    int64_t left = r;
    for (size_t step = highest_bit(tree_.size() - 1); step > 0; step >>= 1)
      if (pos + step < tree_.size() && tree_[pos + step] <= left) {
        pos += step;
        left -= tree_[pos];
      }
    add(pos, -1);
    return pos;
  }
  // Uniform in [0, n) without modulo bias.
  static uint64_t bounded(std::mt19937_64& rng, uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = rng();
    while (x >= limit);
    return x % n;
  }

 private:
  void add(size_t i, int64_t delta) {
    total_ += delta;
    for (size_t k = i + 1; k < tree_.size(); k += k & (~k + 1)) tree_[k] += delta;
  }
  static size_t highest_bit(size_t n) {
    size_t b = 1;
    while (b * 2 <= n) b *= 2;
    return n == 0 ? 0 : b;
  }
  std::vector<int64_t> tree_;
  int64_t total_ = 0;
};

// The datasets of a jet: name, element type, columns, bytes per row.
struct Part {
  std::string name;
  h5::Id type;
  int64_t cols = 1;
  size_t row_bytes = 0;
  h5::DatasetSpec spec;
};

std::vector<Part> describe_parts(const std::vector<fs::path>& files, const std::vector<std::string>& names) {
  const auto first = h5::File::open_read(files.front());
  std::vector<Part> parts;
  for (const auto& n : names) {
    const auto ds = first.dataset(n);
    Part p{n, ds.file_type(), ds.cols(), 0, {}};
    p.row_bytes = H5Tget_size(p.type.get()) * static_cast<size_t>(p.cols);
    p.spec.shape = ds.shape();
    const auto storage = ds.storage();
    if (storage.chunked) p.spec.chunk = storage.chunk;
    p.spec.compression = h5::Compression::Lzf;
    parts.push_back(std::move(p));
  }
  for (const auto& f : files) {  // a jet is a row of every dataset
    const auto file = h5::File::open_read(f);
    const int64_t rows = file.dataset(names.front()).rows();
    for (const auto& n : names)
      if (file.dataset(n).rows() != rows)
        throw InputError(fmt::format("{}: dataset '{}' has {} rows but '{}' has {}; salt shuffle moves a jet's rows "
                                     "of every dataset together",
                                     f.string(), n, file.dataset(n).rows(), names.front(), rows));
  }
  return parts;
}

// Bucket files in a hidden directory next to the output, removed on every way out.
// Writes are buffered per bucket and appended, so no more than one is open at a time.
class Buckets {
 public:
  Buckets(const fs::path& output, size_t count, size_t buffer_bytes)
      : dir_(output.parent_path() / fmt::format(".{}.buckets.{}", output.filename().string(), getpid())),
        buffers_(count),
        buffer_bytes_(buffer_bytes) {
    create_directories_or_fail(dir_, "salt shuffle's bucket directory");
  }
  ~Buckets() {
    std::error_code ec;
    salt::remove_tree(dir_, ec);
  }
  void append(size_t b, const uint8_t* data, size_t n) {
    auto& buf = buffers_[b];
    if (buf.capacity() == 0) buf.reserve(buffer_bytes_ + n);  // exactly: no doubling past the budget
    buf.insert(buf.end(), data, data + n);
    if (buf.size() >= buffer_bytes_) flush(b);
  }
  void flush_all() {
    for (size_t b = 0; b < buffers_.size(); ++b) flush(b);
  }
  // The bucket's bytes; its file is removed.
  std::vector<uint8_t> take(size_t b) {
    const auto path = file(b);
    std::error_code ec;
    std::vector<uint8_t> out(fs::exists(path, ec) ? fs::file_size(path) : 0);
    std::ifstream in(path, std::ios::binary);
    if (!out.empty() && !in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size())))
      throw InputError("salt shuffle: cannot read back " + path.string());
    fs::remove(path, ec);
    return out;
  }

 private:
  fs::path file(size_t b) const { return dir_ / fmt::format("bucket_{}.bin", b); }
  void flush(size_t b) {
    auto& buf = buffers_[b];
    if (buf.empty()) return;
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(file(b).c_str(), "ab"), &std::fclose);
    if (!f || std::fwrite(buf.data(), 1, buf.size(), f.get()) != buf.size() || std::fflush(f.get()) != 0)
      throw InputError(fmt::format("salt shuffle: cannot write bucket files in {}: {}", dir_.string(), std::strerror(errno)));
    buf.clear();
    buf.shrink_to_fit();
  }
  fs::path dir_;
  std::vector<std::vector<uint8_t>> buffers_;
  size_t buffer_bytes_;
};

int64_t rows_of(const fs::path& file, const std::string& dataset) {
  return h5::File::open_read(file).dataset(dataset).rows();
}

// Pass 1: every jet of every file, in order, into its drawn bucket.
void deal(const std::vector<fs::path>& files, const std::vector<Part>& parts, Urns& urns, Buckets& buckets,
          std::mt19937_64& rng, int64_t block_rows) {
  std::vector<std::vector<uint8_t>> block(parts.size());
  for (const auto& path : files) {
    const auto file = h5::File::open_read(path);
    std::vector<h5::Dataset> datasets;
    for (const auto& p : parts) datasets.push_back(file.dataset(p.name));
    const int64_t rows = datasets.front().rows();
    for (int64_t start = 0; start < rows; start += block_rows) {
      if (int sig = stop_signal()) throw StopRequested{sig};
      const int64_t count = std::min(block_rows, rows - start);
      for (size_t d = 0; d < parts.size(); ++d) {
        block[d].resize(static_cast<size_t>(count) * parts[d].row_bytes);
        datasets[d].read_records(start, count, parts[d].cols, block[d].data());
      }
      for (int64_t r = 0; r < count; ++r) {
        const size_t b = urns.draw(rng);
        for (size_t d = 0; d < parts.size(); ++d)
          buckets.append(b, block[d].data() + static_cast<size_t>(r) * parts[d].row_bytes, parts[d].row_bytes);
      }
    }
  }
  buckets.flush_all();
}

// Pass 2: each bucket permuted and appended to the output's datasets.
void collect(const std::vector<Part>& parts, const std::vector<int64_t>& sizes, Buckets& buckets,
             const std::vector<h5::Dataset>& out, std::mt19937_64& rng) {
  size_t jet_bytes = 0;
  for (const auto& p : parts) jet_bytes += p.row_bytes;
  int64_t offset = 0;
  for (size_t b = 0; b < sizes.size(); ++b) {
    if (int sig = stop_signal()) throw StopRequested{sig};
    const auto bytes = buckets.take(b);
    const int64_t n = sizes[b];
    if (bytes.size() != static_cast<size_t>(n) * jet_bytes)
      throw InputError(fmt::format("salt shuffle: bucket {} holds {} bytes, expected {}", b, bytes.size(),
                                   static_cast<size_t>(n) * jet_bytes));
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(order[static_cast<size_t>(i)], order[Urns::bounded(rng, static_cast<uint64_t>(i + 1))]);
    size_t part_offset = 0;
    for (size_t d = 0; d < parts.size(); ++d) {
      std::vector<uint8_t> gathered(static_cast<size_t>(n) * parts[d].row_bytes);
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(gathered.data() + static_cast<size_t>(i) * parts[d].row_bytes,
                    bytes.data() + static_cast<size_t>(order[static_cast<size_t>(i)]) * jet_bytes + part_offset,
                    parts[d].row_bytes);
      if (n > 0) out[d].write_records(offset, n, gathered.data());
      part_offset += parts[d].row_bytes;
    }
    offset += n;
  }
}

// The same file given twice (again, through a link, as ./x, or matched by a
// wildcard too) would put each of its jets into the output twice: refused, by
// device and inode, before anything is written.
void refuse_repeated_inputs(const std::vector<fs::path>& files) {
  std::map<std::pair<dev_t, ino_t>, fs::path> seen;
  for (const auto& f : files) {
    struct stat st {};
    if (::stat(f.c_str(), &st) != 0) continue;  // a missing file is reported by whoever opens it
    const auto [first, inserted] = seen.emplace(std::make_pair(st.st_dev, st.st_ino), f);
    if (!inserted)
      throw UsageError("salt shuffle: the input " + f.string() + " is the same file as " + first->second.string() +
                       ": given twice, its jets would be written twice; give each input once");
  }
}

std::vector<fs::path> expand_inputs(const std::vector<std::string>& inputs) {
  std::vector<fs::path> files;
  for (const auto& in : inputs) {
    if (!has_wildcard(in)) {
      files.emplace_back(in);
      continue;
    }
    for (auto& f : match_files(in)) files.push_back(std::move(f));
  }
  if (files.empty()) throw InputError("salt shuffle: no input files");
  refuse_repeated_inputs(files);
  return files;
}

}  // namespace

ShuffleResult shuffle_files(const ShuffleOptions& o) {
  if (o.memory_mb < kMinimumBudgetMb)
    throw UsageError(fmt::format("--memory_mb must be at least {} (HDF5 itself takes about {} MiB)", kMinimumBudgetMb,
                                 kHdf5ReserveMb));
  if (o.memory_mb > kMaximumBudgetMb)
    throw UsageError(fmt::format("--memory_mb {} is beyond any machine: give MiB from {} to {} (16 TiB)", o.memory_mb,
                                 kMinimumBudgetMb, kMaximumBudgetMb));
  const auto files = expand_inputs(o.inputs);
  for (const auto& f : files)
    if (fs::weakly_canonical(f) == fs::weakly_canonical(o.output))
      throw UsageError("salt shuffle: the output " + o.output.string() + " is also an input");
  refuse_directory_target(o.output);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(o.output, ec)) && !o.overwrite)
    throw UsageError("salt shuffle: " + o.output.string() + " exists (pass --overwrite to replace it)");
  const auto names = same_datasets(files);
  const auto parts = describe_parts(files, names);
  ShuffleResult result;
  for (const auto& p : parts) result.bytes_per_jet += static_cast<int64_t>(p.row_bytes);
  for (const auto& f : files) result.jets += rows_of(f, names.front());

  // Pass 1 holds an input block and the bucket buffers, a quarter of what is usable
  // each; pass 2 a bucket (half) and one dataset's permuted copy of it (at most half).
  const int64_t usable = (o.memory_mb - kHdf5ReserveMb) << 20, half = usable / 2, quarter = usable / 4;
  const int64_t jets_per_bucket = std::max<int64_t>(1, half / result.bytes_per_jet);
  result.buckets = std::max<int64_t>(1, (result.jets + jets_per_bucket - 1) / jets_per_bucket);
  std::vector<int64_t> sizes(static_cast<size_t>(result.buckets), result.jets / result.buckets);
  for (int64_t i = 0; i < result.jets % result.buckets; ++i) ++sizes[static_cast<size_t>(i)];
  const int64_t block_rows = std::max<int64_t>(1, quarter / result.bytes_per_jet);
  // A bucket's buffer never holds more than the bucket: a large budget on small data
  // reserves what the data needs, not the budget.
  const int64_t bucket_bytes = sizes.front() * result.bytes_per_jet;
  const size_t buffer_bytes =
      static_cast<size_t>(std::max<int64_t>(1, std::min(quarter / result.buckets, bucket_bytes)));

  if (!fs::path(o.output).parent_path().empty())
    create_directories_or_fail(o.output.parent_path(), "output directory of salt shuffle");
  // A shuffle killed before it could clean up (SIGKILL) left its temp output and its
  // buckets (as large as the data) next to the output.
  if (const int n = remove_dead_leftovers_of(o.output))
    spdlog::info("removed {} temp file(s) and bucket folder(s) left next to {} by killed processes", n,
                 o.output.string());
  if (!h5::ensure_lzf_for_writing()) throw InputError("salt shuffle: the LZF filter is not available for writing");
  // glibc raises its mmap threshold after large frees, and then buffers of a few MiB
  // come from the heap and stay resident after they are freed: a fixed threshold
  // returns them, keeping the peak to the budget (measured: 32 MiB -> 32.5 MiB growth
  // with the dynamic threshold, 22.7 MiB with this one).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  std::mt19937_64 rng(o.seed);
  Urns urns(sizes);
  Buckets buckets(o.output, sizes.size(), buffer_bytes);
  deal(files, parts, urns, buckets, rng, block_rows);

  write_via_temp(o.output, [&](const fs::path& tmp) {
    auto out = h5::File::create(tmp, o.output);
    std::vector<h5::Dataset> datasets;
    for (const auto& p : parts) {
      h5::DatasetSpec spec = p.spec;
      spec.shape[0] = static_cast<hsize_t>(result.jets);
      if (!spec.chunk.empty()) spec.chunk[0] = std::min<hsize_t>(spec.chunk[0], std::max<hsize_t>(1, spec.shape[0]));
      if (result.jets == 0) spec.chunk.clear(), spec.compression = h5::Compression::None;
      datasets.push_back(h5::create_dataset(out, p.name, p.type.get(), spec, H5Tget_size(p.type.get())));
      h5::copy_attributes(h5::File::open_read(files.front()).dataset(p.name).id(), datasets.back().id());
    }
    h5::copy_attributes(h5::File::open_read(files.front()).id(), out.id());
    h5::write_attr(out.id(), "salt_shuffle", fmt::format("seed {} over {} file(s), first {}", o.seed, files.size(),
                                                         files.front().string()));
    collect(parts, sizes, buckets, datasets, rng);
    out.flush();
    datasets.clear();
    out.close();
  });
  return result;
}

}  // namespace salt::data
