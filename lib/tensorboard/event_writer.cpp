#include "tensorboard/event_writer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "tensorboard/tensorboard.pb.h"

namespace salt::tensorboard {
namespace fs = std::filesystem;
using ::tensorboard::Event;    // the generated protobuf types (package tensorboard)
using ::tensorboard::Summary;

namespace {

const std::array<uint32_t, 256>& crc_table() {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;  // reflected Castagnoli
      t[i] = c;
    }
    return t;
  }();
  return table;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("localhost");
}

void set_plugin(Summary::Value* v, const char* plugin) {
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name(plugin);
}

}  // namespace

uint32_t crc32c(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < size; ++i) c = crc_table()[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t c = crc32c(data, size);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

EventWriter::EventWriter(const fs::path& dir) {
  static std::atomic<int> counter{0};
  create_directories_or_fail(dir, "TensorBoard log directory");
  path_ = dir / fmt::format("events.out.tfevents.{:010d}.{}.{}.{}", static_cast<int64_t>(now_seconds()), hostname(),
                            getpid(), counter++);
  out_.open(path_, std::ios::binary | std::ios::app);
  if (!out_) throw InputError("cannot write TensorBoard event file " + path_.string());
  Event e;
  e.set_wall_time(now_seconds());
  e.set_file_version("brain.Event:2");
  write_record(e.SerializeAsString());
  flush();
}

void EventWriter::write_record(const std::string& bytes) {
  const uint64_t length = bytes.size();  // little-endian on every machine we build for
  const uint32_t length_crc = masked_crc32c(&length, sizeof length), data_crc = masked_crc32c(bytes.data(), bytes.size());
  out_.write(reinterpret_cast<const char*>(&length), sizeof length);
  out_.write(reinterpret_cast<const char*>(&length_crc), sizeof length_crc);
  out_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out_.write(reinterpret_cast<const char*>(&data_crc), sizeof data_crc);
}

void EventWriter::scalar(const std::string& tag, double value, int64_t step) {
  Event e;
  e.set_wall_time(now_seconds());
  e.set_step(step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  set_plugin(v, "scalars");
  write_record(e.SerializeAsString());
}

void EventWriter::histogram(const std::string& tag, const std::vector<double>& values, int64_t step, int buckets) {
  Event e;
  e.set_wall_time(now_seconds());
  e.set_step(step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  auto* h = v->mutable_histo();
  double lo = values.empty() ? 0 : *std::min_element(values.begin(), values.end());
  double hi = values.empty() ? 0 : *std::max_element(values.begin(), values.end());
  double sum = 0, squares = 0;
  for (double x : values) sum += x, squares += x * x;
  h->set_min(lo), h->set_max(hi), h->set_num(static_cast<double>(values.size()));
  h->set_sum(sum), h->set_sum_squares(squares);
  const double width = hi > lo ? (hi - lo) / buckets : 1.0;
  std::vector<double> counts(static_cast<size_t>(buckets), 0.0);
  for (double x : values)
    counts[static_cast<size_t>(std::clamp(static_cast<int>((x - lo) / width), 0, buckets - 1))] += 1;
  for (int b = 0; b < buckets; ++b) {
    h->add_bucket_limit(b == buckets - 1 ? DBL_MAX : lo + width * (b + 1));
    h->add_bucket(counts[static_cast<size_t>(b)]);
  }
  set_plugin(v, "histograms");
  write_record(e.SerializeAsString());
}

void EventWriter::text(const std::string& tag, const std::string& markdown, int64_t step) {
  Event e;
  e.set_wall_time(now_seconds());
  e.set_step(step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  auto* t = v->mutable_tensor();
  t->set_dtype(7);  // DT_STRING
  t->mutable_tensor_shape()->add_dim()->set_size(1);
  t->add_string_val(markdown);
  set_plugin(v, "text");
  write_record(e.SerializeAsString());
}

void EventWriter::image(const std::string& tag, const std::string& png, int64_t step) {
  // PNG: 8-byte signature, then the IHDR chunk (length, "IHDR", width, height: big-endian).
  if (png.size() < 24 || png.compare(12, 4, "IHDR") != 0) throw std::logic_error("EventWriter::image: not a PNG");
  const auto be32 = [&](std::size_t at) {
    return static_cast<int>((uint32_t(uint8_t(png[at])) << 24) | (uint32_t(uint8_t(png[at + 1])) << 16) |
                            (uint32_t(uint8_t(png[at + 2])) << 8) | uint32_t(uint8_t(png[at + 3])));
  };
  const int width = be32(16), height = be32(20);
  Event e;
  e.set_wall_time(now_seconds());
  e.set_step(step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  auto* img = v->mutable_image();
  img->set_height(height);
  img->set_width(width);
  img->set_colorspace(3);
  img->set_encoded_image_string(png);
  write_record(e.SerializeAsString());
}

void EventWriter::flush() {
  out_.flush();
  if (!out_) throw InputError("cannot write TensorBoard event file " + path_.string());
}

}  // namespace salt::tensorboard
