// torch.save's file format (the zip archive of torch >= 1.6: data.pkl, version,
// byteorder, data/<key> storages), read and written with LibTorch's own zip
// container and the project's pickle reader and writer, so any file Python's
// torch.save or salt-cpp wrote opens, under LibTorch 1.13 and 2.x alike.
#pragma once
#include <filesystem>
#include <string>

#include "serialize/py_value.h"

namespace salt::serialize {

// The object a torch file holds. Damaged, truncated, legacy (pre-1.6) or
// non-torch files are an InputError naming `source` and what is wrong.
PyValue load_torch_file(const std::string& bytes, const std::string& source);

// The bytes torch.save would write for `root` (a pickle of dicts, lists, tuples,
// scalars, strings and tensors), readable by torch.load(weights_only=True).
std::string torch_file_bytes(const PyValue& root);

}  // namespace salt::serialize
