// H5Reader on real files written here: every dtype, shuffled field order, non-prefix
// valid slots, truncation, limits, compression layouts, and every error.
#include <gtest/gtest.h>

#include "support/one_line_error.h"
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "data/h5_reader.h"
#include "h5_test_files.h"
#include "support/test_support.h"

namespace salt::data {
namespace h5 {
// gtest names the parameter in ctest's listing: none/lzf/gzip, not its bytes.
void PrintTo(Compression c, std::ostream* os) { *os << to_string(c); }
}  // namespace h5

namespace {

using h5::Compression;
using testfiles::FieldSpec;
namespace fs = std::filesystem;

constexpr int64_t kRows = 53;
constexpr int64_t kSlots = 6;

bool is_valid(int64_t r, int64_t s) { return (r + s) % 3 != 0 && s <= r % kSlots; }  // holes: not a prefix

double value(int64_t r, int64_t s, const std::string& name) {
  if (name == "valid") return is_valid(r, s);
  if (name == "t_bool") return (r + s) % 2;
  if (name == "t_u1" || name == "n_hits") return (r * 7 + s * 3) % 100;
  double base = static_cast<double>((r * 7 + s * 3 + static_cast<int64_t>(name.size())) % 100 - 50);
  if (name == "flt_label") return base + 0.5;
  return base;
}

const std::vector<std::string> kTrackVars = {"t_f2", "t_f4", "t_f8", "t_i1", "t_u1", "t_i2", "t_i4", "t_i8", "t_bool"};
const std::vector<std::string> kJetVars = {"pt", "eta", "w16"};

// File order deliberately differs from the variables' order.
const std::vector<FieldSpec> kTrackFields = {
    {"t_i8", h5::kI8}, {"valid", h5::kBool}, {"t_f4", h5::kF4}, {"origin", h5::kI1}, {"t_u1", h5::kU1},
    {"t_bool", h5::kBool}, {"t_f2", h5::kF2}, {"t_i2", h5::kI2}, {"flt_label", h5::kF4}, {"t_f8", h5::kF8},
    {"t_i1", h5::kI1}, {"t_i4", h5::kI4}, {"t_u2", h5::kU2}};
const std::vector<FieldSpec> kJetFields = {
    {"eta", h5::kF8}, {"flavour_label", h5::kI4}, {"w16", h5::kF2}, {"pt", h5::kF4}, {"u8", h5::kU8}};

fs::path write_standard_file(const fs::path& path, Compression c, int64_t rows = kRows,
                             const testfiles::ValueFn& fn = value) {
  h5::File f = h5::File::create(path);
  std::vector<hsize_t> jchunk, tchunk;
  if (c != Compression::None) {
    jchunk = {5};
    tchunk = {7, kSlots};  // chunks that batches cut through
  }
  testfiles::write_dataset(f, "jets", kJetFields, rows, 0, fn, c, jchunk);
  testfiles::write_dataset(f, "tracks", kTrackFields, rows, kSlots, fn, c, tchunk);
  h5::Dataset jets = f.dataset("jets");
  h5::write_attr(jets.id(), "flavour_label", std::vector<std::string>{"bjets", "cjets", "ujets"});
  h5::write_attr(f.id(), "unique_jets", int64_t{rows});
  h5::write_attr(f.id(), "config", std::string("{\"a\": 1}"));
  return path;
}

ReaderOptions standard_options() {
  ReaderOptions o;
  o.set_variables({{"jets", kJetVars}, {"tracks", kTrackVars}})
      .set_labels({{"jets", {"flavour_label"}}, {"tracks", {"origin", "flt_label", "valid"}}});
  return o;
}

// Asserts the batch holds rows [start, start+size) of the standard file.
void expect_rows(const Batch& b, int64_t start, int64_t size, int64_t slots = kSlots) {
  ASSERT_EQ(b.start, start);
  ASSERT_EQ(b.size, size);
  const auto& x = b.inputs.at("tracks");
  const auto& mask = b.pad_masks.at("tracks");
  ASSERT_EQ(x.sizes(), (std::vector<int64_t>{size, slots, static_cast<int64_t>(kTrackVars.size())}));
  ASSERT_EQ(x.dtype(), torch::kFloat32);
  ASSERT_EQ(mask.dtype(), torch::kBool);
  auto xa = x.accessor<float, 3>();
  auto ma = mask.accessor<bool, 2>();
  auto origin = b.labels.at("tracks").at("origin");
  auto flt = b.labels.at("tracks").at("flt_label");
  ASSERT_EQ(origin.dtype(), torch::kInt64);
  ASSERT_EQ(flt.dtype(), torch::kFloat32);
  for (int64_t i = 0; i < size; ++i) {
    const int64_t r = start + i;
    for (int64_t s = 0; s < slots; ++s) {
      ASSERT_EQ(ma[i][s], !is_valid(r, s)) << "row " << r << " slot " << s;
      for (size_t f = 0; f < kTrackVars.size(); ++f) {
        const float want = is_valid(r, s) ? static_cast<float>(value(r, s, kTrackVars[f])) : 0.0f;
        ASSERT_EQ(xa[i][s][static_cast<int64_t>(f)], want) << kTrackVars[f] << " row " << r << " slot " << s;
      }
      ASSERT_EQ(origin[i][s].item<int64_t>(), static_cast<int64_t>(value(r, s, "origin")));
      ASSERT_EQ(flt[i][s].item<float>(), static_cast<float>(value(r, s, "flt_label")));
    }
  }
  const auto& j = b.inputs.at("jets");
  ASSERT_EQ(j.sizes(), (std::vector<int64_t>{size, 3}));
  for (int64_t i = 0; i < size; ++i)
    for (size_t f = 0; f < kJetVars.size(); ++f)
      ASSERT_EQ(j[i][static_cast<int64_t>(f)].item<float>(), static_cast<float>(value(start + i, 0, kJetVars[f])));
  EXPECT_EQ(b.pad_masks.count("jets"), 0u);
  EXPECT_EQ(b.labels.at("jets").at("flavour_label")[size - 1].item<int64_t>(),
            static_cast<int64_t>(value(start + size - 1, 0, "flavour_label")));
}

// (compression, direct chunk reads): both read paths must give the same batches.
class ReaderLayouts : public ::testing::TestWithParam<std::tuple<Compression, bool>> {};

TEST_P(ReaderLayouts, EveryDtypeAnyFieldOrderNonPrefixValid) {
  salt::testing::TempDir dir;
  fs::path path = write_standard_file(dir / "f.h5", std::get<0>(GetParam()));
  H5Reader reader(path, standard_options().set_direct_chunks(std::get<1>(GetParam())));
  EXPECT_EQ(reader.num_rows(), kRows);
  EXPECT_EQ(reader.available_rows(), kRows);
  // Batches that start and end inside chunks, and the tail.
  expect_rows(reader.read(0, 10), 0, 10);
  expect_rows(reader.read(13, 17), 13, 17);
  expect_rows(reader.read(50, 3), 50, 3);
  EXPECT_EQ(reader.class_names(), (std::vector<std::string>{"bjets", "cjets", "ujets"}));
  YAML::Node attrs = reader.file_attributes();
  EXPECT_EQ(attrs["unique_jets"].as<int64_t>(), kRows);
  EXPECT_EQ(attrs["config"].as<std::string>(), "{\"a\": 1}");
}

INSTANTIATE_TEST_SUITE_P(Compression, ReaderLayouts,
                         ::testing::Combine(::testing::Values(Compression::None, Compression::Lzf, Compression::Gzip),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return h5::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_direct" : "_h5dread");
                         });

// HDF5 itself refuses a second member of one name only through a return code, and
// the record then keeps unwritten bytes (a MaskFormer's outputs written twice did).
TEST(CompoundBuilder, ASecondFieldOfOneNameIsRefused) {
  h5::CompoundBuilder builder;
  builder.add("pt", h5::kF4).add("eta", h5::kF4);
  try {
    builder.add("pt", h5::kI8);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "an HDF5 record would hold two fields named 'pt'");
  }
  EXPECT_EQ(builder.layout().record_size, 8u);
}

TEST(DirectChunks, MatchH5DreadIncludingUnwrittenAndSkippedChunks) {
  salt::testing::TempDir dir;
  for (Compression c : {Compression::None, Compression::Lzf, Compression::Gzip}) {
    fs::path path = dir / ("partial_" + h5::to_string(c) + ".h5");
    {
      h5::File f = h5::File::create(path);
      h5::CompoundBuilder b;
      b.add("x", h5::kF4).add("n", h5::kI2);
      h5::Id t = b.build();
      h5::DatasetSpec spec;
      spec.shape = {100, 10};
      spec.chunk = {7, 4};  // chunks cut both axes, edge chunks overhang
      spec.compression = c;
      h5::Dataset ds = h5::create_dataset(f, "tracks", t.get(), spec, 6);
      std::vector<uint8_t> rows(30 * 10 * 6);
      for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<uint8_t>(i * 37 + (i >> 7));  // poorly compressible
      ds.write_records(40, 30, rows.data());  // rows 0..39 and 70..99 never written
    }
    h5::File f = h5::File::open_read(path);
    h5::Dataset ds = f.dataset("tracks");
    ASSERT_TRUE(ds.direct_chunks_supported());
    for (auto [start, count, cols] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {0, 100, 10}, {33, 20, 10}, {38, 35, 6}, {69, 31, 3}, {41, 1, 1}}) {
      std::vector<uint8_t> a(static_cast<size_t>(count * cols) * 6, 1), b(a.size(), 2);
      ds.read_records(start, count, cols, a.data());
      ds.decode_chunks(ds.read_chunks(start, count, cols), b.data());
      EXPECT_EQ(a, b) << h5::to_string(c) << " rows " << start << "+" << count << " cols " << cols;
    }
  }
}

TEST(Lzf, WrittenInH5pyFormatAndReadThroughThePlugin) {
  // The Debian plugin (h5py's lzf_filter built against liblzf) must load in a fresh
  // process: salt_data links liblzf for it. Checked in a child so that nothing this
  // process registered earlier can stand in for it.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(h5::filter_available(h5::kLzfFilter) ? 0 : 1);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the LZF plugin (hdf5-plugin-lzf) does not load";

  salt::testing::TempDir dir;
  h5::File f = h5::File::create(dir / "lzf.h5");
  auto zeros = [](int64_t, int64_t, const std::string&) { return 0.0; };
  testfiles::write_dataset(f, "tracks", {{"a", h5::kF4}, {"b", h5::kI1}}, 1000, 40, zeros, Compression::Lzf, {100, 40});
  h5::StorageInfo info = f.dataset("tracks").storage();
  f.close();
  ASSERT_TRUE(info.chunked);
  ASSERT_EQ(info.filters, (std::vector<H5Z_filter_t>{32000}));
  // h5py's lzf_filter: {filter version 4, liblzf 0x0105, chunk bytes}
  EXPECT_EQ(info.filter_params[0], (std::vector<unsigned>{4, 0x0105, 100 * 40 * 5}));
  EXPECT_LT(fs::file_size(dir / "lzf.h5"), 1000u * 40 * 5 / 4) << "chunks were not compressed";
  h5::File back = h5::File::open_read(dir / "lzf.h5");
  h5::Dataset ds = back.dataset("tracks");
  ds.check_filters();
  std::vector<uint8_t> buf(250 * 40 * 5, 0xff);
  ds.read_records(700, 250, 40, buf.data());
  EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](uint8_t c) { return c == 0; }));
}

TEST(Lzf, IncompressibleChunksFallBackToRaw) {
  // Random bytes do not shrink: h5py's filter declines and HDF5 stores the chunk raw.
  salt::testing::TempDir dir;
  {
    h5::File f = h5::File::create(dir / "rand.h5");
    auto noise = [](int64_t r, int64_t s, const std::string& n) {
      uint64_t x = (r * 40 + s) * 2654435761u + n.size();
      x ^= x >> 13;
      x *= 0x9e3779b97f4a7c15ull;
      return static_cast<double>(static_cast<int32_t>(x >> 33));
    };
    testfiles::write_dataset(f, "jets", {{"v", h5::kI4}}, 4000, 0, noise, Compression::Lzf, {1000});
  }
  H5Reader r(dir / "rand.h5", ReaderOptions().set_variables({{"jets", {"v"}}}));
  auto b = r.read(0, 4000);
  EXPECT_EQ(b.inputs["jets"].size(0), 4000);
}

TEST(Reader, TruncationAndLimits) {
  salt::testing::TempDir dir;
  fs::path path = write_standard_file(dir / "f.h5", Compression::Lzf);
  auto opts = standard_options();
  opts.set_num_inputs({{"tracks", 3}});
  H5Reader reader(path, opts, 20, "num_train");
  EXPECT_EQ(reader.num_rows(), 20);
  EXPECT_EQ(reader.slots("tracks"), 3);
  expect_rows(reader.read(5, 15), 5, 15, 3);
  EXPECT_THROW(reader.read(15, 6), InputError);  // past num_train

  try {
    H5Reader too_many(path, standard_options(), kRows + 1, "num_train");
    FAIL();
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Requested 54"), std::string::npos) << msg;
    EXPECT_NE(msg.find("only 53"), std::string::npos) << msg;
    EXPECT_NE(msg.find("num_train"), std::string::npos) << msg;
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
  }
  EXPECT_EQ(H5Reader(path, standard_options(), kRows).num_rows(), kRows);
  EXPECT_EQ(with_commas(10000000), "10,000,000");
}

TEST(Reader, InputMapAndLabelsOnly) {
  salt::testing::TempDir dir;
  fs::path path = write_standard_file(dir / "f.h5", Compression::None);
  ReaderOptions o;
  o.set_variables({{"jets", kJetVars}, {"trk", {"t_f4"}}})
      .set_input_map({{"trk", "tracks"}})
      .set_labels({{"trk", {"origin"}}});
  H5Reader reader(path, o);
  Batch b = reader.read(0, 4);
  ASSERT_EQ(b.inputs.count("trk"), 1u);
  EXPECT_EQ(b.inputs["trk"].sizes(), (std::vector<int64_t>{4, kSlots, 1}));
  EXPECT_EQ(b.pad_masks.count("trk"), 1u);
  EXPECT_EQ(b.labels["trk"]["origin"].dtype(), torch::kInt64);
}

// --- errors ---------------------------------------------------------------------------------


#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "'" << (haystack) << "' lacks '" << (needle) << "'"

TEST(ReaderErrors, MissingThings) {
  salt::testing::TempDir dir;
  fs::path path = write_standard_file(dir / "f.h5", Compression::None);

  std::string msg = salt::testing::one_line_error_of([&] { H5Reader(dir / "nope.h5", standard_options()); });
  EXPECT_CONTAINS(msg, "nope.h5");

  salt::testing::write_file(dir / "text.h5", "not hdf5");
  msg = salt::testing::one_line_error_of([&] { H5Reader(dir / "text.h5", standard_options()); });
  EXPECT_CONTAINS(msg, "Not an HDF5 file");

  auto o = standard_options();
  o.input_map["tracks"] = "flows";
  msg = salt::testing::one_line_error_of([&] { H5Reader(path, o); });
  EXPECT_CONTAINS(msg, "'flows'");
  EXPECT_CONTAINS(msg, path.string());

  o = standard_options();
  o.variables["tracks"].push_back("nonexistent");
  msg = salt::testing::one_line_error_of([&] { H5Reader(path, o); });
  EXPECT_CONTAINS(msg, "nonexistent");
  EXPECT_CONTAINS(msg, "dataset 'tracks'");
  EXPECT_CONTAINS(msg, path.string());

  o = standard_options();
  o.labels["tracks"].push_back("missing_label");
  msg = salt::testing::one_line_error_of([&] { H5Reader(path, o); });
  EXPECT_CONTAINS(msg, "Label 'missing_label'");

  o = standard_options();
  o.set_num_inputs({{"flows", 3}});
  msg = salt::testing::one_line_error_of([&] { H5Reader(path, o); });
  EXPECT_CONTAINS(msg, "num_inputs");
  EXPECT_CONTAINS(msg, "flows");

  // salt asserts num_inputs <= the file's slots (datasets.py), so more slots than
  // the file has is an error here too; exactly as many is fine.
  o = standard_options();
  o.set_num_inputs({{"tracks", kSlots + 1}});
  msg = salt::testing::one_line_error_of([&] { H5Reader(path, o); });
  EXPECT_CONTAINS(msg, "data.num_inputs.tracks = 7 exceeds the 6 slots");
  EXPECT_CONTAINS(msg, path.string());
  o.set_num_inputs({{"tracks", kSlots}});
  EXPECT_EQ(H5Reader(path, o).slots("tracks"), kSlots);
}

TEST(ReaderErrors, ShapesAndRowCounts) {
  salt::testing::TempDir dir;
  {
    h5::File f = h5::File::create(dir / "bad.h5");
    testfiles::write_dataset(f, "jets", kJetFields, 10, 0, value);
    testfiles::write_dataset(f, "tracks", kTrackFields, 9, kSlots, value);
    testfiles::write_dataset(f, "flat", kTrackFields, 10, 0, value);
  }
  std::string msg = salt::testing::one_line_error_of([&] { H5Reader(dir / "bad.h5", standard_options()); });
  EXPECT_CONTAINS(msg, "Dataset 'tracks' has 9 rows");

  ReaderOptions o;
  o.set_variables({{"jets", kJetVars}, {"flat", {"t_f4"}}});
  msg = salt::testing::one_line_error_of([&] { H5Reader(dir / "bad.h5", o); });
  EXPECT_CONTAINS(msg, "must be 2-D");
}

TEST(ReaderErrors, UnsupportedFieldType) {
  salt::testing::TempDir dir;
  {
    h5::File f = h5::File::create(dir / "be.h5");
    h5::Id be = h5::Id(H5Tcopy(H5T_IEEE_F32BE), H5Tclose);
    h5::CompoundBuilder b;
    b.add("x", be.get());
    h5::Id t = b.build();
    h5::DatasetSpec spec;
    spec.shape = {4};
    spec.compression = Compression::None;
    h5::Dataset ds = h5::create_dataset(f, "jets", t.get(), spec, 4);
    std::vector<uint8_t> zeros(16, 0);
    ds.write_records(0, 4, zeros.data());
  }
  std::string msg = salt::testing::one_line_error_of([&] { H5Reader(dir / "be.h5", ReaderOptions().set_variables({{"jets", {"x"}}})); });
  EXPECT_CONTAINS(msg, "'x'");
  EXPECT_CONTAINS(msg, "unsupported type");
}

TEST(ReaderErrors, NonFiniteInputs) {
  salt::testing::TempDir dir;
  auto with_bad = [](double bad) {
    return [bad](int64_t r, int64_t s, const std::string& name) {
      if (name == "t_f4" && r == 7 && s == 1) return bad;  // valid slot (8 % 3 != 0, 1 <= 7 % 6)
      if (name == "t_f2" && r == 9 && s == 0) return bad;  // padded slot (9 % 3 == 0): ignored
      return value(r, s, name);
    };
  };
  ASSERT_TRUE(is_valid(7, 1));
  ASSERT_FALSE(is_valid(9, 0));
  fs::path nan_file = write_standard_file(dir / "nan.h5", Compression::Lzf, kRows, with_bad(std::nan("")));
  fs::path inf_file = write_standard_file(dir / "inf.h5", Compression::None, kRows, with_bad(-INFINITY));

  for (const fs::path& path : {nan_file, inf_file}) {
    H5Reader strict(path, standard_options());
    EXPECT_NO_THROW(strict.read(0, 7));    // rows before the bad one
    EXPECT_NO_THROW(strict.read(8, 10));   // the padded NaN in row 9 is zeroed, not an error
    std::string msg = salt::testing::one_line_error_of([&] { strict.read(0, 10); });
    EXPECT_EQ(msg, "Non-finite inputs for 'tracks' in " + path.string());

    auto to_num = standard_options();
    to_num.set_non_finite_to_num(true);
    Batch b = H5Reader(path, to_num).read(0, 10);
    EXPECT_EQ(b.inputs["tracks"][7][1][1].item<float>(), 0.0f);  // t_f4 is column 1
    EXPECT_TRUE(torch::isfinite(b.inputs["tracks"]).all().item<bool>());

    auto ignore = standard_options();
    ignore.set_ignore_finite_checks(true);
    b = H5Reader(path, ignore).read(0, 10);
    EXPECT_FALSE(std::isfinite(b.inputs["tracks"][7][1][1].item<float>()));
    EXPECT_EQ(b.inputs["tracks"][9][0][0].item<float>(), 0.0f);  // padded slot still zero
  }
}

TEST(ReaderErrors, UnavailableFilterNamesPackage) {
  salt::testing::TempDir dir;
  // A stand-in for Blosc (id 32001), registered only while writing.
  static const H5Z_class2_t fake = {H5Z_CLASS_T_VERS, 32001, 1, 1, "fake blosc", nullptr, nullptr,
                                    [](unsigned, size_t, const unsigned[], size_t nbytes, size_t*, void**) {
                                      return nbytes;
                                    }};
  ASSERT_GE(H5Zregister(&fake), 0);
  {
    h5::File f = h5::File::create(dir / "blosc.h5");
    h5::CompoundBuilder b;
    b.add("x", h5::kF4);
    h5::Id t = b.build();
    h5::Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    hsize_t dims[1] = {8}, chunk[1] = {4};
    H5Pset_chunk(dcpl.get(), 1, chunk);
    H5Pset_filter(dcpl.get(), 32001, H5Z_FLAG_MANDATORY, 0, nullptr);
    h5::Id space(H5Screate_simple(1, dims, nullptr), H5Sclose);
    h5::Id ds(H5Dcreate2(f.id(), "jets", t.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), H5Dclose);
    std::vector<float> data(8, 1.0f);
    ASSERT_GE(H5Dwrite(ds.get(), t.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), 0);
  }
  ASSERT_GE(H5Zunregister(32001), 0);
  std::string msg = salt::testing::one_line_error_of([&] { H5Reader(dir / "blosc.h5", ReaderOptions().set_variables({{"jets", {"x"}}})); });
  EXPECT_CONTAINS(msg, "Blosc (HDF5 filter 32001)");
  EXPECT_CONTAINS(msg, "hdf5-filter-plugin");
  EXPECT_CONTAINS(msg, "dataset 'jets'");
  EXPECT_CONTAINS(msg, (dir / "blosc.h5").string());

  // LZF without its plugin: unregister it and stop HDF5 from loading plugins.
  fs::path lzf = write_standard_file(dir / "lzf.h5", Compression::Lzf);
  ASSERT_GE(H5Zunregister(h5::kLzfFilter), 0);
  unsigned state = 0;
  H5PLget_loading_state(&state);
  H5PLset_loading_state(0);
  msg = salt::testing::one_line_error_of([&] { H5Reader(lzf, standard_options()); });
  H5PLset_loading_state(state);
  EXPECT_CONTAINS(msg, "LZF (HDF5 filter 32000)");
  EXPECT_CONTAINS(msg, "hdf5-plugin-lzf");
  // ...and it comes back once plugins load again.
  EXPECT_NO_THROW(H5Reader(lzf, standard_options()).read(0, 5));
}

TEST(H5, HalfFloatConversions) {
  // Exactly representable values survive the round trip.
  for (float f : {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 1023.5f})
    EXPECT_EQ(h5::half_to_float(h5::float_to_half(f)), f);
  EXPECT_EQ(h5::half_to_float(h5::float_to_half(1.0f)), 1.0f);
  EXPECT_EQ(h5::half_to_float(h5::float_to_half(0.1f)), 0.0999755859375f);  // nearest half
  EXPECT_TRUE(std::isinf(h5::half_to_float(h5::float_to_half(1e6f))));
  EXPECT_TRUE(std::isnan(h5::half_to_float(h5::float_to_half(std::nanf("")))));
  EXPECT_EQ(h5::half_to_float(0x0001), 5.9604645e-08f);  // smallest subnormal
  EXPECT_EQ(h5::half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(h5::half_to_float(0xc000), -2.0f);
}

TEST(H5, AttributesOfEveryKind) {
  salt::testing::TempDir dir;
  h5::File f = h5::File::create(dir / "a.h5");
  h5::write_attr(f.id(), "s", std::string("text"));
  h5::write_attr(f.id(), "i", int64_t{7});
  h5::write_attr(f.id(), "d", 2.5);
  h5::write_attr(f.id(), "list", std::vector<std::string>{"x", "y"});
  // numpy bytes arrays become fixed-length strings in h5py
  h5::Id fixed(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(fixed.get(), 5);
  hsize_t n = 2;
  h5::Id space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  h5::Id attr(H5Acreate2(f.id(), "fixed", fixed.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const char data[10] = {'b', 'j', 'e', 't', 's', 'u', 'j', 0, 0, 0};
  H5Awrite(attr.get(), fixed.get(), data);
  attr.reset();
  YAML::Node a = f.attributes();
  EXPECT_EQ(a["s"].as<std::string>(), "text");
  EXPECT_EQ(a["i"].as<int64_t>(), 7);
  EXPECT_EQ(a["d"].as<double>(), 2.5);
  EXPECT_EQ(a["list"].as<std::vector<std::string>>(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(a["fixed"].as<std::vector<std::string>>(), (std::vector<std::string>{"bjets", "uj"}));
}

TEST(H5, RawRecordsForCopying) {
  // What the prediction writer needs: all fields of rows, in the file's own layout.
  salt::testing::TempDir dir;
  fs::path path = write_standard_file(dir / "f.h5", Compression::Lzf);
  h5::File f = h5::File::open_read(path);
  h5::Dataset jets = f.dataset("jets");
  const h5::CompoundLayout& layout = jets.layout();
  EXPECT_EQ(layout.names(), (std::vector<std::string>{"eta", "flavour_label", "w16", "pt", "u8"}));
  std::vector<uint8_t> buf(layout.record_size * 4);
  jets.read_records(10, 4, 1, buf.data());
  double eta;
  std::memcpy(&eta, buf.data() + layout.record_size * 2 + layout.find("eta")->offset, 8);
  EXPECT_EQ(eta, value(12, 0, "eta"));
  EXPECT_EQ(layout.find("w16")->type, h5::kF2);
  EXPECT_EQ(layout.find("u8")->type, h5::kU8);
}

}  // namespace
}  // namespace salt::data
