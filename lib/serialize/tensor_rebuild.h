// torch's pickled tensors: storage type names <-> dtypes, and the rebuild calls
// (torch._utils._rebuild_tensor_v2 and friends) applied to a storage.
#pragma once
#include <ATen/core/Tensor.h>

#include <optional>
#include <string>

#include "serialize/py_value.h"

namespace salt::serialize {

// "FloatStorage" -> float32, ...; "UntypedStorage" -> uint8 (bytes); none for others.
std::optional<c10::ScalarType> storage_dtype(const std::string& storage_type);
// float32 -> "FloatStorage", ...; throws std::invalid_argument for dtypes torch cannot pickle.
std::string storage_type_name(c10::ScalarType dtype);

// If `fn` is one of torch's tensor or parameter rebuilds, the tensor it builds
// from `args` (a view into the storage tensor args[0]); sizes, strides and offset
// outside the storage throw std::invalid_argument.
std::optional<at::Tensor> rebuild_tensor(const PyValue& fn, const PyValue::Items& args);

}  // namespace salt::serialize
