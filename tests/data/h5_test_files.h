// Writes small HDF5 files in the preprocessing's layout with chosen field types,
// field order, compression and valid-slot pattern, for the data tests.
#pragma once
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "data/h5_file.h"

namespace salt::data::testfiles {

struct FieldSpec {
  std::string name;
  h5::FieldType type;
};

// value(row, slot, field name) -> value to store (cast to the field's type).
using ValueFn = std::function<double(int64_t, int64_t, const std::string&)>;

inline void pack(double v, h5::FieldType t, uint8_t* p) {
  auto put = [&](auto x) { std::memcpy(p, &x, sizeof x); };
  switch (t.kind) {
    case h5::Kind::Float:
      if (t.size == 2) put(h5::float_to_half(static_cast<float>(v)));
      else if (t.size == 4) put(static_cast<float>(v));
      else put(v);
      break;
    case h5::Kind::Int:
      if (t.size == 1) put(static_cast<int8_t>(v));
      else if (t.size == 2) put(static_cast<int16_t>(v));
      else if (t.size == 4) put(static_cast<int32_t>(v));
      else put(static_cast<int64_t>(v));
      break;
    case h5::Kind::UInt:
      if (t.size == 1) put(static_cast<uint8_t>(v));
      else if (t.size == 2) put(static_cast<uint16_t>(v));
      else if (t.size == 4) put(static_cast<uint32_t>(v));
      else put(static_cast<uint64_t>(v));
      break;
    case h5::Kind::Bool:
      put(static_cast<uint8_t>(v != 0));
      break;
    default:
      break;
  }
}

// Writes dataset `name` with `rows` rows and `slots` columns (0 = 1-D).
inline void write_dataset(const h5::File& file, const std::string& name, const std::vector<FieldSpec>& fields,
                          int64_t rows, int64_t slots, const ValueFn& value,
                          h5::Compression compression = h5::Compression::None, std::vector<hsize_t> chunk = {},
                          bool fletcher32 = false) {
  h5::CompoundBuilder b;
  for (const auto& f : fields) b.add(f.name, f.type);
  h5::Id type = b.build();
  h5::CompoundLayout layout = b.layout();
  h5::DatasetSpec spec;
  spec.shape = slots > 0 ? std::vector<hsize_t>{static_cast<hsize_t>(rows), static_cast<hsize_t>(slots)}
                         : std::vector<hsize_t>{static_cast<hsize_t>(rows)};
  spec.compression = compression;
  spec.chunk = std::move(chunk);
  spec.fletcher32 = fletcher32;
  h5::Dataset ds = h5::create_dataset(file, name, type.get(), spec, layout.record_size);
  const int64_t L = slots > 0 ? slots : 1;
  std::vector<uint8_t> buf(static_cast<size_t>(rows * L) * layout.record_size, 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t s = 0; s < L; ++s)
      for (const auto& f : layout.fields)
        pack(value(r, s, f.name), f.type, buf.data() + static_cast<size_t>(r * L + s) * layout.record_size + f.offset);
  ds.write_records(0, rows, buf.data());
}

}  // namespace salt::data::testfiles
