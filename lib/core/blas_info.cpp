#include "core/blas_info.h"

#include <link.h>

#include <cstdlib>
#include <filesystem>

namespace salt {
namespace {

int collect_blas(dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::string*>(data);
  std::string name = info->dlpi_name ? info->dlpi_name : "";
  auto base = std::filesystem::path(name).filename().string();
  if (out->empty() && (base.rfind("libblas.so", 0) == 0 || base.rfind("libopenblas", 0) == 0 ||
                       base.rfind("libmkl_rt", 0) == 0 || base.rfind("libblis", 0) == 0)) {
    *out = name;
  }
  return 0;
}

std::string vendor_of(const std::string& resolved) {
  auto has = [&](const char* s) { return resolved.find(s) != std::string::npos; };
  if (has("openblas")) return "OpenBLAS";
  if (has("blis")) return "BLIS";
  if (has("mkl")) return "MKL";
  if (has("atlas")) return "ATLAS";
  if (has("/blas/") || has("libblas.so")) return "reference";
  return "unknown";
}

}  // namespace

BlasInfo active_blas() {
  std::string loaded;
  dl_iterate_phdr(collect_blas, &loaded);
  BlasInfo info;
  if (loaded.empty()) return {"", "unknown"};
  std::error_code ec;
  auto resolved = std::filesystem::canonical(loaded, ec);
  info.path = ec ? loaded : resolved.string();
  info.vendor = vendor_of(info.path);
  return info;
}

}  // namespace salt
