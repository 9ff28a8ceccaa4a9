// Writes PyValues as a protocol-2 pickle that Python's torch.load reads with
// weights_only=True: the only globals written are collections.OrderedDict,
// torch._utils._rebuild_tensor_v2 and torch's storage types (no LibTorch type
// tags, no classes). Tensors are written through `persistent_id` (torch's
// storages), as torch.save does.
#pragma once
#include <functional>
#include <string>

#include "serialize/py_value.h"

namespace salt::serialize {

// For a tensor: the persistent id of its storage; the tensor is then rebuilt as
// that storage viewed with the tensor's own sizes and contiguous strides.
using PersistentId = std::function<PyValue(const at::Tensor& contiguous)>;

// Objects, bytes and sets have no weights-only form: they throw std::invalid_argument.
std::string pickle(const PyValue& value, const PersistentId& persistent_id);

}  // namespace salt::serialize
