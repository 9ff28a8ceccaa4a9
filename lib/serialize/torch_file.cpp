#include "serialize/torch_file.h"

#include <ATen/ATen.h>
#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "core/errors.h"
#include "core/zip_check.h"
#include "serialize/pickler.h"
#include "serialize/tensor_rebuild.h"
#include "serialize/unpickler.h"

namespace salt::serialize {
namespace {

bool starts_with(const std::string& bytes, std::string_view prefix) {
  return bytes.size() >= prefix.size() && std::memcmp(bytes.data(), prefix.data(), prefix.size()) == 0;
}

// What a file that is not torch's zip archive is, for the refusal.
void refuse_non_zip(const std::string& bytes, const std::string& source) {
  if (starts_with(bytes, "PK\x03\x04")) return;
  // torch < 1.6 (and _use_new_zipfile_serialization=False) pickled a magic number first.
  if (starts_with(bytes, std::string_view("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 14)))
    throw InputError(source + ": a torch file in the legacy (pre-1.6) format; load and re-save it with torch.save in "
                              "torch >= 1.6 to use it here");
  if (starts_with(bytes, "\x08") && source.size() > 5 && source.substr(source.size() - 5) == ".onnx")
    throw InputError(source + ": an ONNX model, not a checkpoint (give the .ckpt it was exported from)");
  throw InputError(source + ": not a checkpoint (not the zip archive torch.save writes)");
}

// torch's persistent ids: ('storage', torch.<Type>Storage, key, location, numel).
class StorageLoader {
 public:
  StorageLoader(caffe2::serialize::PyTorchStreamReader& reader) : reader_(reader) {}

  PyValue operator()(const PyValue& pid) {
    if (pid.kind() != PyValue::Kind::kTuple || pid.items().size() < 5 || !pid.items()[0].is_str() ||
        pid.items()[0].as_str() != "storage")
      throw std::invalid_argument("a persistent id that is not a torch storage (" + pid.type_name() + ")");
    const auto& items = pid.items();
    const auto type = items[1].type_name();
    const auto dtype = storage_dtype(type.substr(type.rfind('.') + 1));
    if (!dtype) throw std::invalid_argument("a storage of type " + type + ", which salt-cpp does not read");
    const auto& key = items[2].as_str();
    if (auto it = storages_.find(key); it != storages_.end()) return PyValue::tensor(it->second);
    const auto numel = items[4].as_int();
    const auto name = "data/" + key;
    if (!reader_.hasRecord(name)) throw std::invalid_argument("the archive has no record '" + name + "'");
    auto [data, size] = reader_.getRecord(name);
    const auto element = static_cast<int64_t>(c10::elementSize(*dtype));
    // Typed storages count elements, torch 2.x's untyped ones bytes (their dtype here).
    const auto elements = numel;
    if (numel < 0 || static_cast<uint64_t>(elements) * element > size)
      throw std::invalid_argument("storage '" + key + "' holds " + std::to_string(size) + " bytes, fewer than its " +
                                  std::to_string(numel) + " elements");
    auto storage = at::empty({elements}, at::TensorOptions().dtype(*dtype));
    if (elements > 0) std::memcpy(storage.data_ptr(), data.get(), static_cast<size_t>(elements * element));
    storages_.emplace(key, storage);
    return PyValue::tensor(storage);
  }

 private:
  caffe2::serialize::PyTorchStreamReader& reader_;
  std::map<std::string, at::Tensor> storages_;
};

// The first `n` bytes of `text` for a message, anything unprintable as '?'.
std::string printable_prefix(const std::string& text, size_t n) {
  std::string out;
  for (size_t i = 0; i < std::min(n, text.size()); ++i) out += (text[i] >= 0x20 && text[i] < 0x7f) ? text[i] : '?';
  return text.size() > n ? out + "…" : out;
}

std::string record_text(caffe2::serialize::PyTorchStreamReader& reader, const std::string& name) {
  auto [data, size] = reader.getRecord(name);
  return std::string(static_cast<const char*>(data.get()), size);
}

}  // namespace

PyValue load_torch_file(const std::string& bytes, const std::string& source) {
  refuse_non_zip(bytes, source);
  verify_zip_crcs(bytes.data(), bytes.size(), source);  // LibTorch's reader checks no CRC; torch.load does
  try {
    caffe2::serialize::PyTorchStreamReader reader(
        std::make_shared<caffe2::serialize::MemoryReadAdapter>(bytes.data(), static_cast<off_t>(bytes.size())));
    if (reader.hasRecord("byteorder")) {
      const auto order = record_text(reader, "byteorder");
      if (order == "big")
        throw InputError(source + ": written on a big-endian machine (byteorder 'big'); salt-cpp reads little-endian "
                                  "checkpoints");
      if (order != "little")  // not torch's: shown only in part, it may be anything of any size
        throw InputError(source + ": a byteorder record that is neither 'little' nor 'big' (" +
                         std::to_string(order.size()) + " bytes: '" + printable_prefix(order, 20) +
                         "'): not a torch file, or a damaged one");
    }
    if (!reader.hasRecord("data.pkl")) throw InputError(source + ": a zip archive without data.pkl: not a torch file");
    const auto pkl = record_text(reader, "data.pkl");
    StorageLoader storages(reader);
    return unpickle(pkl, std::ref(storages));
  } catch (const PickleError& e) {
    throw InputError(source + ": not a readable checkpoint (data.pkl: " + e.what() + ")");
  } catch (const c10::Error& e) {
    throw InputError(source + ": not a readable checkpoint (" + e.what_without_backtrace() + ")");
  }
}

std::string torch_file_bytes(const PyValue& root) {
  std::vector<std::pair<std::string, at::Tensor>> storages;
  auto persistent_id = [&](const at::Tensor& t) {
    auto key = std::to_string(storages.size());
    storages.emplace_back(key, t);
    return PyValue::tuple({PyValue::str("storage"), PyValue::global("torch", storage_type_name(t.scalar_type())),
                           PyValue::str(key), PyValue::str("cpu"), PyValue::integer(t.numel())});
  };
  const auto pkl = pickle(root, persistent_id);
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) {
    out.append(static_cast<const char*>(data), n);
    return n;
  });
  writer.writeRecord("data.pkl", pkl.data(), pkl.size());
  writer.writeRecord("byteorder", "little", 6);
  for (const auto& [key, t] : storages)
    writer.writeRecord("data/" + key, t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size());
  writer.writeEndOfFile();
  return out;
}

}  // namespace salt::serialize
