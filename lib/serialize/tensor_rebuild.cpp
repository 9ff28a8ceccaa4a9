#include "serialize/tensor_rebuild.h"

#include <ATen/ATen.h>

#include <array>
#include <stdexcept>
#include <utility>

namespace salt::serialize {
namespace {

constexpr std::array<std::pair<const char*, c10::ScalarType>, 13> kStorages = {{
    {"FloatStorage", c10::kFloat},
    {"DoubleStorage", c10::kDouble},
    {"HalfStorage", c10::kHalf},
    {"BFloat16Storage", c10::kBFloat16},
    {"LongStorage", c10::kLong},
    {"IntStorage", c10::kInt},
    {"ShortStorage", c10::kShort},
    {"CharStorage", c10::kChar},
    {"ByteStorage", c10::kByte},
    {"BoolStorage", c10::kBool},
    {"ComplexFloatStorage", c10::kComplexFloat},
    {"ComplexDoubleStorage", c10::kComplexDouble},
    {"UntypedStorage", c10::kByte},
}};

std::vector<int64_t> int_list(const PyValue& v, const char* what) {
  std::vector<int64_t> out;
  if (!v.is_sequence()) throw std::invalid_argument(std::string("a tensor's ") + what + " is a " + v.type_name());
  for (const auto& item : v.items()) out.push_back(item.as_int());
  return out;
}

// storage[offset] viewed with `size` and `stride`, every element inside it.
at::Tensor view_of(const at::Tensor& storage, int64_t offset, const std::vector<int64_t>& size,
                   const std::vector<int64_t>& stride) {
  if (size.size() != stride.size()) throw std::invalid_argument("a tensor's size and stride differ in length");
  int64_t last = offset, numel = 1;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] < 0 || stride[d] < 0) throw std::invalid_argument("a tensor with a negative size or stride");
    numel *= size[d];
    if (size[d] > 0) last += (size[d] - 1) * stride[d];
  }
  if (offset < 0 || (numel > 0 && last >= storage.numel()))
    throw std::invalid_argument("a tensor reaches past its storage (" + std::to_string(storage.numel()) + " elements)");
  if (numel == 0) return at::empty(size, storage.options());
  return storage.as_strided(size, stride, offset);
}

}  // namespace

std::optional<c10::ScalarType> storage_dtype(const std::string& storage_type) {
  for (const auto& [name, dtype] : kStorages)
    if (storage_type == name) return dtype;
  return std::nullopt;
}

std::string storage_type_name(c10::ScalarType dtype) {
  for (const auto& [name, d] : kStorages)
    if (d == dtype && std::string(name) != "UntypedStorage") return name;
  throw std::invalid_argument(std::string("no torch storage type for ") + c10::toString(dtype));
}

std::optional<at::Tensor> rebuild_tensor(const PyValue& fn, const PyValue::Items& args) {
  if (fn.kind() != PyValue::Kind::kGlobal || fn.type_name().rfind("torch._utils._rebuild_", 0) != 0) return std::nullopt;
  const auto name = fn.type_name().substr(std::string("torch._utils.").size());
  const size_t needed = name == "_rebuild_tensor" || name == "_rebuild_tensor_v2" ? 4 : 1;
  if (args.size() < needed) throw std::invalid_argument(name + " with " + std::to_string(args.size()) + " arguments");
  if (name == "_rebuild_parameter" || name == "_rebuild_parameter_with_state") return args[0].as_tensor();
  if (needed == 4)
    return view_of(args[0].as_tensor(), args[1].as_int(), int_list(args[2], "size"), int_list(args[3], "stride"));
  throw std::invalid_argument("torch._utils." + name + " (sparse, quantized or other tensors salt-cpp does not read)");
}

}  // namespace salt::serialize
