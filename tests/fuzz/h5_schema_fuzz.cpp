// libFuzzer target: the HDF5 reader's schema checks. Each input describes a file
// in the preprocessing's layout -- which datasets exist, their fields (names from
// the variables a GN2-like config reads plus strangers, any numpy type, repeats),
// shapes, row counts, compression and raw record bytes (NaN, garbage flags) --
// that is written with the project's own HDF5 writer; then H5Reader opens it with
// a fixed GN2-like ReaderOptions and reads a batch. A salt error (UserError) is a
// refusal and fine; a crash, a sanitizer report or any other exception is a finding.
#include <fuzzer/FuzzedDataProvider.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "core/errors.h"
#include "data/h5_file.h"
#include "data/h5_reader.h"

namespace {

using namespace salt::data;

const std::vector<std::string> kJetFields = {"pt_btagJes", "eta_btagJes", "flavour_label", "HadronConeExclTruthLabelID",
                                             "eventNumber", "n_tracks", "valid", "x"};
const std::vector<std::string> kTrackFields = {"d0", "z0SinTheta", "dphi", "valid", "ftagTruthOriginLabel",
                                               "ftagTruthVertexIndex", "pt", "d0RelativeToBeamspot", "y"};
const std::vector<std::string> kTypes = {"f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "bool"};

const std::string& scratch_file() {
  static const std::string path = "/dev/shm/salt-h5-fuzz-" + std::to_string(getpid()) + ".h5";
  return path;
}

// One dataset as the input describes it; false when the input does not write one.
bool write_dataset(FuzzedDataProvider& in, const h5::File& file, const std::string& name,
                   const std::vector<std::string>& vocabulary, bool sequence) {
  if (!in.ConsumeBool()) return false;
  h5::CompoundBuilder b;
  const int fields = in.ConsumeIntegralInRange(0, 10);
  for (int f = 0; f < fields; ++f) {
    const bool stranger = in.ConsumeIntegralInRange(0, 7) == 0;
    const auto field = stranger ? in.ConsumeRandomLengthString(12)
                                : vocabulary[in.ConsumeIntegralInRange<size_t>(0, vocabulary.size() - 1)];
    b.add(field, h5::FieldType::parse(kTypes[in.ConsumeIntegralInRange<size_t>(0, kTypes.size() - 1)]));
  }
  h5::Id type = b.build();
  const auto layout = b.layout();
  const hsize_t rows = in.ConsumeIntegralInRange<hsize_t>(0, 300);
  const hsize_t slots = sequence ? in.ConsumeIntegralInRange<hsize_t>(0, 45) : 1;
  h5::DatasetSpec spec;
  spec.shape = sequence ? std::vector<hsize_t>{rows, slots} : std::vector<hsize_t>{rows};
  const int compression = in.ConsumeIntegralInRange(0, 2);
  spec.compression = compression == 0 ? h5::Compression::None : compression == 1 ? h5::Compression::Lzf : h5::Compression::Gzip;
  if (compression != 0 && rows > 0 && (!sequence || slots > 0)) {
    spec.chunk = {in.ConsumeIntegralInRange<hsize_t>(1, rows)};
    if (sequence) spec.chunk.push_back(slots);
  }
  h5::Dataset ds = h5::create_dataset(file, name, type.get(), spec, layout.record_size);
  std::vector<uint8_t> records(static_cast<size_t>(rows * slots) * layout.record_size);
  const auto bytes = in.ConsumeBytes<uint8_t>(records.size());
  std::copy(bytes.begin(), bytes.end(), records.begin());
  if (rows > 0 && layout.record_size > 0) ds.write_records(0, static_cast<int64_t>(rows), records.data());
  return true;
}

ReaderOptions gn2_like(FuzzedDataProvider& in) {
  ReaderOptions o;
  o.set_variables({{"jets", {"pt_btagJes", "eta_btagJes"}}, {"tracks", {"d0", "z0SinTheta", "dphi"}}});
  o.set_labels({{"jets", {"flavour_label"}}, {"tracks", {"ftagTruthOriginLabel", "ftagTruthVertexIndex"}}});
  if (in.ConsumeBool()) o.set_num_inputs({{"tracks", in.ConsumeIntegralInRange<int64_t>(-1, 50)}});
  if (in.ConsumeBool()) o.selections = {{"tracks", {"d0 < 3.5", "pt > 500"}}};
  o.non_finite_to_num = in.ConsumeBool();
  o.direct_chunks = in.ConsumeBool();
  return o;
}

void run_one(FuzzedDataProvider& in) {
  try {  // files HDF5 itself will not write (a compound without fields, repeated names) are skipped
    auto file = h5::File::create(scratch_file());
    write_dataset(in, file, "jets", kJetFields, false);
    write_dataset(in, file, "tracks", kTrackFields, true);
    file.close();
  } catch (const std::exception&) {
    return;
  }
  auto options = gn2_like(in);
  const int64_t num = in.ConsumeIntegralInRange<int64_t>(-1, 400);
  H5Reader reader(scratch_file(), options, num, "num_train");
  if (reader.num_rows() > 0) reader.read(0, std::min<int64_t>(reader.num_rows(), 64));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  try {
    run_one(in);
  } catch (const salt::UserError&) {
    // a refusal: what a bad file should get
  } catch (const std::exception& e) {
    std::fprintf(stderr, "h5_schema_fuzz: escaped exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
