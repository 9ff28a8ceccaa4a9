// Internal helpers shared by the h5_*.cpp files that implement h5_file.h (formerly
// file-local in h5_file.cpp). Not a public header: include it only from lib/data/h5_*.cpp;
// everything else uses h5_file.h.
#pragma once
#include <hdf5.h>

#include <string>

#include "data/h5_file.h"

namespace salt::data::h5::detail {

// Throws InputError "<what>: <last_error()>" and clears HDF5's error stack (h5_file.cpp).
[[noreturn]] void fail(const std::string& what);

// Owning handles for a type or dataspace id just returned by HDF5.
inline Id type_id(hid_t t) { return Id(t, H5Tclose); }
inline Id space_id(hid_t s) { return Id(s, H5Sclose); }

// The FieldType of an HDF5 scalar type; FieldType{} (Kind::Other) if unsupported (h5_types.cpp).
FieldType classify(hid_t t);

}  // namespace salt::data::h5::detail
