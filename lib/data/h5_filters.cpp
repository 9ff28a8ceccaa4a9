// h5_file.h implementation, part 3: compression names, filter names and
// availability, and the in-process LZF filter (h5py's format, on liblzf) that
// ensure_lzf_for_writing registers when no LZF plugin is installed.
#include "data/h5_file.h"

#include <fmt/format.h>
#include <liblzf/lzf.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "core/errors.h"

namespace salt::data::h5 {

// --- filters -----------------------------------------------------------------------------

std::string to_string(Compression c) {
  switch (c) {
    case Compression::None: return "none";
    case Compression::Lzf: return "lzf";
    case Compression::Gzip: return "gzip";
  }
  return "?";
}

Compression parse_compression(const std::string& s) {
  if (s == "none" || s.empty()) return Compression::None;
  if (s == "lzf") return Compression::Lzf;
  if (s == "gzip") return Compression::Gzip;
  throw InputError(fmt::format("Unknown compression '{}' (choose none, lzf or gzip)", s));
}

std::string filter_name(H5Z_filter_t id) {
  switch (id) {
    case H5Z_FILTER_DEFLATE: return "gzip (HDF5 filter 1)";
    case H5Z_FILTER_SHUFFLE: return "shuffle (HDF5 filter 2)";
    case H5Z_FILTER_FLETCHER32: return "fletcher32 (HDF5 filter 3)";
    case H5Z_FILTER_SZIP: return "szip (HDF5 filter 4)";
    case 32000: return "LZF (HDF5 filter 32000)";
    case 32001: return "Blosc (HDF5 filter 32001)";
    case 32004: return "LZ4 (HDF5 filter 32004)";
    case 32008: return "Bitshuffle (HDF5 filter 32008)";
    case 32015: return "Zstandard (HDF5 filter 32015)";
    default: return fmt::format("HDF5 filter {}", id);
  }
}

std::string filter_package(H5Z_filter_t id) {
  if (id == 32000) return "hdf5-plugin-lzf";
  if (id == 32001 || id == 32004 || id == 32008 || id == 32015) return "hdf5-filter-plugin";
  if (id == H5Z_FILTER_SZIP) return "libaec0 (HDF5 built with szip)";
  return "";
}

bool filter_available(H5Z_filter_t id) {
  Guard guard;
  // H5Zfilter_avail also tries to load a plugin from HDF5_PLUGIN_PATH.
  htri_t avail = H5Zfilter_avail(id);
  H5Eclear2(H5E_DEFAULT);
  if (avail <= 0) return false;
  unsigned config = 0;
  if (H5Zget_filter_info(id, &config) < 0) return false;
  return (config & H5Z_FILTER_CONFIG_DECODE_ENABLED) != 0;
}

// H5_checksum_fletcher32 (HDF5's H5checksum.c): 16-bit big-endian words, sums folded
// every 360 words so they cannot overflow; an odd last byte is the high byte of a word.
uint32_t fletcher32(const uint8_t* data, size_t len) {
  uint32_t sum1 = 0, sum2 = 0;
  for (size_t words = len / 2; words > 0;) {
    size_t block = std::min<size_t>(words, 360);
    words -= block;
    for (; block > 0; --block, data += 2) {
      sum1 += (static_cast<uint32_t>(data[0]) << 8) | data[1];
      sum2 += sum1;
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  if (len % 2) {
    sum1 += static_cast<uint32_t>(*data) << 8;
    sum2 += sum1;
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  sum1 = (sum1 & 0xffff) + (sum1 >> 16);
  sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  return (sum2 << 16) | sum1;
}

bool fletcher32_matches(const uint8_t* chunk, size_t bytes) {
  if (bytes < 4) return false;
  const uint8_t* tail = chunk + bytes - 4;
  const uint32_t stored = static_cast<uint32_t>(tail[0]) | static_cast<uint32_t>(tail[1]) << 8 |
                          static_cast<uint32_t>(tail[2]) << 16 | static_cast<uint32_t>(tail[3]) << 24;
  const uint32_t sum = fletcher32(chunk, bytes - 4);
  // H5Z_filter_fletcher32 also accepts the sum with the bytes of each half swapped
  // (written so by HDF5 before 1.6.3 on little-endian machines).
  const uint32_t swapped = ((sum & 0x00ff00ffu) << 8) | ((sum >> 8) & 0x00ff00ffu);
  return stored == sum || stored == swapped;
}

namespace {

// The LZF filter format of h5py (lzf_filter.c, filter version 4): cd_values =
// {4, LZF library version 0x0105, chunk size in bytes}; each chunk is one raw lzf
// stream. Compression that fails to shrink a chunk returns 0, and since the filter
// is optional HDF5 then stores that chunk uncompressed (flagged in its filter mask).
constexpr unsigned kLzfFilterVersion = 4;
constexpr unsigned kLzfLibVersion = 0x0105;

herr_t lzf_set_local(hid_t dcpl, hid_t type, hid_t) {
  unsigned flags = 0;
  size_t nelements = 8;
  unsigned values[8] = {};
  if (H5Pget_filter_by_id2(dcpl, kLzfFilter, &flags, &nelements, values, 0, nullptr, nullptr) < 0) return -1;
  if (nelements < 3) nelements = 3;
  values[0] = kLzfFilterVersion;
  values[1] = kLzfLibVersion;
  hsize_t dims[32];
  int ndims = H5Pget_chunk(dcpl, 32, dims);
  if (ndims < 0) return -1;
  size_t bytes = H5Tget_size(type);
  for (int i = 0; i < ndims; ++i) bytes *= dims[i];
  values[2] = static_cast<unsigned>(bytes);
  return H5Pmodify_filter(dcpl, kLzfFilter, flags, nelements, values) < 0 ? -1 : 1;
}

size_t lzf_filter_fn(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes, size_t* buf_size,
                     void** buf) {
  if (!(flags & H5Z_FLAG_REVERSE)) {
    size_t out_size = *buf_size;
    void* out = std::malloc(out_size);
    if (!out) return 0;
    unsigned status = lzf_compress(*buf, static_cast<unsigned>(nbytes), out, static_cast<unsigned>(out_size));
    if (status == 0) {
      std::free(out);
      return 0;  // did not shrink: the optional filter is skipped for this chunk
    }
    std::free(*buf);
    *buf = out;
    *buf_size = out_size;
    return status;
  }
  size_t out_size = (cd_nelmts >= 3 && cd_values[2] != 0) ? cd_values[2] : *buf_size;
  for (;;) {
    void* out = std::malloc(out_size);
    if (!out) return 0;
    unsigned status = lzf_decompress(*buf, static_cast<unsigned>(nbytes), out, static_cast<unsigned>(out_size));
    if (status != 0) {
      std::free(*buf);
      *buf = out;
      *buf_size = out_size;
      return status;
    }
    std::free(out);
    if (errno != E2BIG) return 0;
    out_size += *buf_size;
  }
}

}  // namespace

bool ensure_lzf_for_writing() {
  if (filter_available(kLzfFilter)) return true;
  Guard guard;
  static const H5Z_class2_t lzf_class = {
      H5Z_CLASS_T_VERS, kLzfFilter, 1, 1, "lzf", nullptr, lzf_set_local, lzf_filter_fn,
  };
  if (H5Zregister(&lzf_class) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  return true;
}

}  // namespace salt::data::h5
