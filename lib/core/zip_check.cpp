#include "core/zip_check.h"

#include <fmt/format.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/errors.h"

namespace salt {

namespace {

constexpr uint32_t kEndOfDirectory = 0x06054b50, kZip64Locator = 0x07064b50, kZip64End = 0x06064b50;
constexpr uint32_t kDirectoryEntry = 0x02014b50, kLocalHeader = 0x04034b50;

// Little-endian reads that fail (instead of reading past the end) on a short file.
class Reader {
 public:
  Reader(const char* data, std::size_t size, const std::string& what) : data_(data), size_(size), what_(what) {}
  template <class T>
  T at(uint64_t offset) const {
    if (offset > size_ || sizeof(T) > size_ - offset) damaged("a record points past the end of the file (truncated?)");
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
      v |= static_cast<T>(static_cast<unsigned char>(data_[offset + i])) << (8 * i);
    return v;
  }
  const char* span(uint64_t offset, uint64_t length) const {
    if (offset > size_ || length > size_ - offset) damaged("an entry's data runs past the end of the file (truncated?)");
    return data_ + offset;
  }
  std::size_t size() const { return size_; }
  [[noreturn]] void damaged(const std::string& problem) const {
    throw InputError(what_ + ": damaged file (" + problem + "); it was changed or cut after it was written");
  }

 private:
  const char* data_;
  std::size_t size_;
  const std::string& what_;
};

struct Directory {
  uint64_t entries = 0, offset = 0;
};

Directory find_directory(const Reader& r) {
  if (r.size() < 22) r.damaged("too short for a zip archive");
  const uint64_t lowest = r.size() > 22 + 0xFFFF ? r.size() - 22 - 0xFFFF : 0;
  for (uint64_t pos = r.size() - 22;; --pos) {
    if (r.at<uint32_t>(pos) == kEndOfDirectory) {
      Directory d{r.at<uint16_t>(pos + 10), r.at<uint32_t>(pos + 16)};
      if (pos >= 20 && r.at<uint32_t>(pos - 20) == kZip64Locator) {
        const uint64_t end64 = r.at<uint64_t>(pos - 20 + 8);
        if (r.at<uint32_t>(end64) != kZip64End) r.damaged("the zip64 end record is missing");
        d = {r.at<uint64_t>(end64 + 32), r.at<uint64_t>(end64 + 48)};
      }
      return d;
    }
    if (pos == lowest) r.damaged("no zip end-of-directory record (truncated?)");
  }
}

uint32_t crc_of(const char* data, uint64_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (size > 0) {
    const auto chunk = static_cast<uInt>(std::min<uint64_t>(size, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), chunk);
    data += chunk;
    size -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

uint32_t crc_of_deflated(const Reader& r, const char* data, uint64_t size, const std::string& name) {
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) r.damaged("cannot inflate '" + name + "'");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
  z.avail_in = static_cast<uInt>(size);
  std::vector<char> out(1 << 16);
  uLong crc = crc32(0L, Z_NULL, 0);
  int status = Z_OK;
  while (status == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    status = inflate(&z, Z_NO_FLUSH);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(out.data()), static_cast<uInt>(out.size() - z.avail_out));
  }
  inflateEnd(&z);
  if (status != Z_STREAM_END) r.damaged("entry '" + name + "' does not inflate");
  return static_cast<uint32_t>(crc);
}

// Sizes and offset of a central-directory entry, with the zip64 extra field's
// values for those recorded as 0xFFFFFFFF.
struct Entry {
  std::string name;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0, uncompressed = 0, local = 0;
  uint64_t next = 0;  // the following directory entry
};

Entry read_entry(const Reader& r, uint64_t pos) {
  if (r.at<uint32_t>(pos) != kDirectoryEntry) r.damaged("a central directory entry is missing");
  Entry e;
  e.method = r.at<uint16_t>(pos + 10);
  e.crc = r.at<uint32_t>(pos + 16);
  e.compressed = r.at<uint32_t>(pos + 20);
  e.uncompressed = r.at<uint32_t>(pos + 24);
  const uint16_t name_len = r.at<uint16_t>(pos + 28), extra_len = r.at<uint16_t>(pos + 30);
  const uint16_t comment_len = r.at<uint16_t>(pos + 32);
  e.local = r.at<uint32_t>(pos + 42);
  e.name.assign(r.span(pos + 46, name_len), name_len);
  for (uint64_t x = pos + 46 + name_len, end = x + extra_len; x + 4 <= end;) {
    const uint16_t id = r.at<uint16_t>(x), len = r.at<uint16_t>(x + 2);
    uint64_t field = x + 4;
    if (id == 0x0001) {
      for (uint64_t* v : {&e.uncompressed, &e.compressed, &e.local})
        if (*v == 0xFFFFFFFFu) {
          *v = r.at<uint64_t>(field);
          field += 8;
        }
    }
    x += 4 + len;
  }
  e.next = pos + 46 + name_len + extra_len + comment_len;
  return e;
}

}  // namespace

void verify_zip_crcs(const char* data, std::size_t size, const std::string& what) {
  const Reader r(data, size, what);
  const auto dir = find_directory(r);
  uint64_t pos = dir.offset;
  for (uint64_t i = 0; i < dir.entries; ++i) {
    const auto e = read_entry(r, pos);
    pos = e.next;
    if (r.at<uint32_t>(e.local) != kLocalHeader) r.damaged("the local header of '" + e.name + "' is missing");
    const uint64_t start = e.local + 30 + r.at<uint16_t>(e.local + 26) + r.at<uint16_t>(e.local + 28);
    const char* bytes = r.span(start, e.compressed);
    uint32_t crc = 0;
    if (e.method == 0) crc = crc_of(bytes, e.compressed);
    else if (e.method == 8) crc = crc_of_deflated(r, bytes, e.compressed, e.name);
    else r.damaged(fmt::format("entry '{}' uses compression method {}", e.name, e.method));
    if (crc != e.crc)
      r.damaged(fmt::format("entry '{}' fails its CRC-32 check: recorded {:08x}, data gives {:08x}", e.name, e.crc, crc));
  }
}

}  // namespace salt
