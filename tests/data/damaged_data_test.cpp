// Damaged training data is caught where the format allows it: HDF5's Fletcher32
// checksum (verified by the direct chunk path as HDF5 verifies it), an LZF stream
// that no longer decodes, and, since LZF has no checksum of its own, values far
// outside the norm dict's range, named by file, dataset and row.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "core/errors.h"
#include "data/h5_reader.h"
#include "h5_test_files.h"
#include "support/one_line_error.h"
#include "support/test_support.h"

namespace salt::data {
namespace {

namespace fs = std::filesystem;
using h5::Compression;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "'" << (haystack) << "' lacks '" << (needle) << "'"

constexpr int64_t kRows = 100, kSlots = 4;

bool valid(int64_t r, int64_t s) { return s <= r % kSlots; }

// d0 of row `bad_row`, slot 1 (valid when bad_row % 4 >= 1) is `bad`; everything
// else lies within a few standard deviations of norm(), whose d0 is 1 +- 2.
fs::path write_file(const fs::path& path, Compression c, bool fletcher32, double bad = 0, int64_t bad_row = -1) {
  h5::File f = h5::File::create(path);
  auto value = [=](int64_t r, int64_t s, const std::string& name) -> double {
    if (name == "valid") return valid(r, s);
    if (name == "flavour_label") return r % 3;
    if (name == "pt") return static_cast<double>(r % 10);
    if (r == bad_row && s == 1) return bad;
    return static_cast<double>(r % 5) * 0.5 + static_cast<double>(s);
  };
  testfiles::write_dataset(f, "jets", {{"pt", h5::kF4}, {"flavour_label", h5::kI4}}, kRows, 0, value, c, {10},
                           fletcher32);
  testfiles::write_dataset(f, "tracks", {{"valid", h5::kBool}, {"d0", h5::kF4}}, kRows, kSlots, value, c,
                           {10, kSlots}, fletcher32);
  return path;
}

ReaderOptions options() {
  ReaderOptions o;
  o.set_variables({{"jets", {"pt"}}, {"tracks", {"d0"}}}).set_labels({{"jets", {"flavour_label"}}});
  return o;
}

std::map<std::string, NormParams> norm() { return {{"jets", {{5.0f}, {3.0f}}}, {"tracks", {{1.0f}, {2.0f}}}}; }

// XORs `mask` into `count` bytes of the stored chunk at row `row` of `dataset`,
// starting `at` bytes into it (where HDF5 says the chunk lies in the file).
void damage_chunk(const fs::path& path, const std::string& dataset, hsize_t row, size_t at, size_t count,
                  uint8_t mask) {
  haddr_t addr = 0;
  hsize_t size = 0;
  {
    h5::File f = h5::File::open_read(path);
    h5::Dataset ds = f.dataset(dataset);
    hsize_t offset[2] = {row, 0};
    unsigned filter_mask = 0;
    ASSERT_GE(H5Dget_chunk_info_by_coord(ds.id(), offset, &filter_mask, &addr, &size), 0);
    ASSERT_LE(at + count, size);
  }
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  for (size_t i = 0; i < count; ++i) {
    file.seekg(static_cast<std::streamoff>(addr + at + i));
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(static_cast<uint8_t>(byte) ^ mask);
    file.seekp(static_cast<std::streamoff>(addr + at + i));
    file.write(&byte, 1);
  }
}

TEST(DamagedData, Fletcher32IsHdf5sChecksum) {
  // By hand: the words 0x0102 and 0x0300 (an odd last byte is a word's high byte):
  // sum1 = 0x0102 + 0x0300 = 0x0402, sum2 = 0x0102 + 0x0402 = 0x0504.
  const uint8_t three[] = {0x01, 0x02, 0x03};
  EXPECT_EQ(h5::fletcher32(three, 3), 0x05040402u);
  // Every chunk HDF5's own filter checksummed (LZF chunks of both parities, raw ones).
  salt::testing::TempDir dir;
  for (Compression c : {Compression::Lzf, Compression::Gzip, Compression::None}) {
    fs::path file = write_file(dir / ("f32_" + h5::to_string(c) + ".h5"), c, true);
    h5::File f = h5::File::open_read(file);
    std::set<size_t> parities;
    for (const char* name : {"jets", "tracks"}) {
      h5::Dataset ds = f.dataset(name);
      for (hsize_t row = 0; row < kRows; row += 10) {
        hsize_t offset[2] = {row, 0}, bytes = 0;
        ASSERT_GE(H5Dget_chunk_storage_size(ds.id(), offset, &bytes), 0);
        std::vector<uint8_t> chunk(bytes);
        uint32_t mask = 0;
        ASSERT_GE(H5Dread_chunk(ds.id(), H5P_DEFAULT, offset, &mask, chunk.data()), 0);
        EXPECT_TRUE(h5::fletcher32_matches(chunk.data(), chunk.size())) << name << " row " << row;
        chunk[chunk.size() / 2] ^= 0x10;
        EXPECT_FALSE(h5::fletcher32_matches(chunk.data(), chunk.size())) << name << " row " << row;
        parities.insert(bytes % 2);
      }
    }
    if (c == Compression::Lzf) EXPECT_EQ(parities.size(), 2u) << "no odd-length chunk was checked";
  }
}

TEST(DamagedData, ChecksummedFilesReadAsWithoutTheChecksumInBothPaths) {
  salt::testing::TempDir dir;
  const Batch plain = H5Reader(write_file(dir / "plain.h5", Compression::Lzf, false), options()).read(0, kRows);
  for (bool direct : {true, false}) {
    H5Reader reader(write_file(dir / "f32.h5", Compression::Lzf, true), options().set_direct_chunks(direct));
    const Batch b = reader.read(0, kRows);
    EXPECT_TRUE(torch::equal(b.inputs.at("tracks"), plain.inputs.at("tracks"))) << direct;
    EXPECT_TRUE(torch::equal(b.inputs.at("jets"), plain.inputs.at("jets"))) << direct;
    EXPECT_TRUE(torch::equal(b.pad_masks.at("tracks"), plain.pad_masks.at("tracks"))) << direct;
  }
}

TEST(DamagedData, AFlippedByteUnderFletcher32IsAnErrorNamingChunkDatasetAndFile) {
  salt::testing::TempDir dir;
  for (Compression c : {Compression::Lzf, Compression::None}) {
    const fs::path file = write_file(dir / ("bad_" + h5::to_string(c) + ".h5"), c, true);
    damage_chunk(file, "tracks", 30, 20, 1, 0x04);
    for (bool direct : {true, false}) {
      H5Reader reader(file, options().set_direct_chunks(direct));
      EXPECT_NO_THROW(reader.read(0, 30));  // the chunks before it are intact
      const std::string msg = salt::testing::one_line_error_of([&] { reader.read(25, 10); });
      EXPECT_CONTAINS(msg, "dataset 'tracks'");
      EXPECT_CONTAINS(msg, file.string());
      EXPECT_CONTAINS(msg, "Fletcher32");
      if (direct) EXPECT_CONTAINS(msg, "chunk at row 30");
    }
  }
}

TEST(DamagedData, AnLzfChunkThatNoLongerDecodesIsNamed) {
  salt::testing::TempDir dir;
  const fs::path file = write_file(dir / "lzf.h5", Compression::Lzf, false);
  // 0xff as LZF's first control byte is a back reference before the start.
  damage_chunk(file, "tracks", 50, 0, 1, 0xff);
  for (bool direct : {true, false}) {
    H5Reader reader(file, options().set_direct_chunks(direct));
    EXPECT_NO_THROW(reader.read(60, 40));
    const std::string msg = salt::testing::one_line_error_of([&] { reader.read(40, 20); });
    EXPECT_CONTAINS(msg, "dataset 'tracks'");
    EXPECT_CONTAINS(msg, file.string());
    if (direct) EXPECT_CONTAINS(msg, "Cannot decompress the LZF (HDF5 filter 32000) chunk at row 50");
  }
}

// Captures what spdlog says while alive.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)) {
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

TEST(DamagedData, ValuesFarFromTheNormDictAreNamedWithFileDatasetAndRow) {
  salt::testing::TempDir dir;
  // Row 37 (37 % 4 = 1: slot 1 valid), d0 = 2e7: (2e7 - 1) / 2 ~ 1e7 standard deviations.
  const fs::path file = write_file(dir / "far.h5", Compression::Lzf, false, 2e7, 37);
  const std::string where = "tracks.d0 = 2e+07 in row 37 (slot 1) of dataset 'tracks' in " + file.string() +
                            " lies 1e+07 standard deviations from the norm dict's mean (1 +- 2)";
  {  // a warning, once per input, and the batch as the file has it
    H5Reader reader(file, options().set_plausibility(norm(), 1e4, 0));
    LogCapture log;
    const Batch b = reader.read(30, 10);
    reader.read(30, 10);
    EXPECT_EQ(b.inputs.at("tracks")[7][1][0].item<float>(), 2e7f);
    EXPECT_CONTAINS(log.text(), where);
    EXPECT_CONTAINS(log.text(), "data.max_input_sigma makes it an error");
    EXPECT_EQ(log.text().find("warning"), log.text().rfind("warning")) << log.text();
  }
  {  // an error above max_sigma, naming the same place
    H5Reader reader(file, options().set_plausibility(norm(), 1e4, 1e6));
    EXPECT_NO_THROW(reader.read(0, 30));
    const std::string msg = salt::testing::one_line_error_of([&] { reader.read(30, 10); });
    EXPECT_CONTAINS(msg, where);
    EXPECT_CONTAINS(msg, "data.max_input_sigma is 1e+06");
  }
  {  // below both thresholds, or both off: nothing said
    LogCapture log;
    H5Reader(file, options().set_plausibility(norm(), 1e8, 1e9)).read(30, 10);
    H5Reader(file, options().set_plausibility(norm(), 0, 0)).read(30, 10);
    EXPECT_EQ(log.text(), "");
  }
  {  // a padded slot holds whatever it holds: row 36 has only slot 0 valid
    const fs::path padded = write_file(dir / "padded.h5", Compression::Lzf, false, 2e7, 36);
    H5Reader reader(padded, options().set_plausibility(norm(), 1e4, 1e6));
    EXPECT_NO_THROW(reader.read(30, 10));
  }
}

}  // namespace
}  // namespace salt::data
