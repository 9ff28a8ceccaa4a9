// TensorBoard event files: the records TensorBoard reads (tensorboard.proto,
// serialized with protobuf) in TFRecord framing: a little-endian uint64 length,
// the masked CRC-32C of those 8 bytes, the data, the masked CRC-32C of the data.
// Append-only by design (TensorBoard reads a growing file), so not written under a
// temp name; flush() pushes what was written to the file.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace salt::tensorboard {

// CRC-32C (Castagnoli), and TFRecord's mask of it (rotate right 15, add 0xa282ead8).
uint32_t crc32c(const void* data, size_t size);
uint32_t masked_crc32c(const void* data, size_t size);

class EventWriter {
 public:
  // Creates `dir` and in it events.out.tfevents.<seconds>.<host>.<pid>.<n>, whose
  // first record is the file_version event. InputError when it cannot be written.
  explicit EventWriter(const std::filesystem::path& dir);
  void scalar(const std::string& tag, double value, int64_t step);
  // TensorBoard's histogram of `values` over `buckets` equal-width buckets.
  void histogram(const std::string& tag, const std::vector<double>& values, int64_t step, int buckets = 30);
  // A PNG picture for TensorBoard's images tab (its size read from the PNG header).
  void image(const std::string& tag, const std::string& png, int64_t step);
  // Text (markdown) for TensorBoard's text plugin.
  void text(const std::string& tag, const std::string& markdown, int64_t step);
  void flush();
  const std::filesystem::path& path() const { return path_; }

 private:
  void write_record(const std::string& bytes);
  std::filesystem::path path_;
  std::ofstream out_;
};

}  // namespace salt::tensorboard
