// verify_zip_crcs on archives written by Python's zipfile (stored, deflated,
// zip64), damaged the ways files get damaged: a flipped byte, a cut end.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "core/zip_check.h"
#include "support/one_line_error.h"
#include "support/test_support.h"

namespace salt::testing {
namespace {

// The archive's bytes; *middle: a byte in the middle of archive/data/0's data.
std::string archive(const std::string& kind, TempDir& dir, size_t* middle = nullptr) {
  const auto path = dir / (kind + ".zip");
  auto r = run_python(R"(
import sys, zipfile
kind, path = sys.argv[1], sys.argv[2]
method = zipfile.ZIP_DEFLATED if kind == "deflated" else zipfile.ZIP_STORED
with zipfile.ZipFile(path, "w", compression=method, allowZip64=True) as z:
    z.writestr("archive/data.pkl", b"header" * 50)
    z.writestr("archive/data/0", bytes(range(256)) * 400)
    if kind == "zip64":
        info = zipfile.ZipInfo("archive/data/1")
        with z.open(info, "w", force_zip64=True) as f:
            f.write(b"x" * 1000)
raw = open(path, "rb").read()
info = zipfile.ZipFile(path).getinfo("archive/data/0")
start = info.header_offset + 30 + int.from_bytes(raw[info.header_offset + 26:info.header_offset + 28], "little") \
    + int.from_bytes(raw[info.header_offset + 28:info.header_offset + 30], "little")
print(start + info.compress_size // 2)
)", {kind, path.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (middle) *middle = std::stoul(r.out);
  return read_file(path);
}

std::string check_error(const std::string& bytes) {
  return one_line_error_of<InputError>([&] { verify_zip_crcs(bytes.data(), bytes.size(), "model.ckpt"); });
}

TEST(ZipCheck, IntactArchivesPass) {
  TempDir dir;
  for (const auto& kind : {"stored", "deflated", "zip64"}) {
    const auto bytes = archive(kind, dir);
    EXPECT_NO_THROW(verify_zip_crcs(bytes.data(), bytes.size(), kind)) << kind;
  }
}

TEST(ZipCheck, AFlippedDataByteFailsItsEntrysCrc) {
  TempDir dir;
  for (const auto& kind : {"stored", "deflated", "zip64"}) {
    size_t middle = 0;
    auto bytes = archive(kind, dir, &middle);
    bytes[middle] ^= 0x01;
    const auto e = check_error(bytes);
    EXPECT_NE(e.find("model.ckpt: damaged file ("), std::string::npos) << kind << ": " << e;
    EXPECT_TRUE(e.find("entry 'archive/data/0'") != std::string::npos) << kind << ": " << e;
  }
}

TEST(ZipCheck, ACutArchiveIsDamaged) {
  TempDir dir;
  const auto bytes = archive("stored", dir);
  for (size_t keep : {bytes.size() - 10, bytes.size() / 2, size_t{10}})
    EXPECT_NE(check_error(bytes.substr(0, keep)).find("damaged file"), std::string::npos) << keep;
}

}  // namespace
}  // namespace salt::testing
