// Reads Python pickles (protocols 0 to 5, as torch.save and Lightning write them)
// into PyValues without running anything: globals are names, calls of classes
// salt-cpp does not rebuild become opaque objects. Rebuilt as values: dict and
// collections.OrderedDict (and dict subclasses, as objects with entries), list,
// tuple, set/frozenset, bytes (also protocol 2's _codecs.encode), torch's tensor
// and parameter rebuilds, and LibTorch's own type tags (torch.jit._pickle).
#pragma once
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "serialize/py_value.h"

namespace salt::serialize {

// A pickle that cannot be read: what and at which byte.
class PickleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Resolves a persistent id (torch: ('storage', <type>, key, location, numel)) to
// the value it stands for: for torch, the storage as a flat tensor.
using PersistentLoad = std::function<PyValue(const PyValue& pid)>;

PyValue unpickle(std::string_view bytes, const PersistentLoad& persistent_load);

}  // namespace salt::serialize
