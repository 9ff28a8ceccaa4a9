// Integrity of a zip archive (torch's checkpoint format): every entry's data is
// checked against the CRC-32 its central directory records, as Python's zipfile
// does when torch.load reads it. LibTorch's reader does not, so a flipped byte in
// a tensor would load silently as a different weight.
#pragma once
#include <cstddef>
#include <string>

namespace salt {

// Throws InputError "<what>: damaged ...: <the first problem>" when the archive is
// truncated, its directory is inconsistent, or an entry's data fails its CRC-32.
// Entries that are compressed (torch stores them uncompressed) are inflated first.
void verify_zip_crcs(const char* data, std::size_t size, const std::string& what);

}  // namespace salt
