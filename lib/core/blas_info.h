// Which BLAS library LibTorch is calling. Debian's LibTorch uses whatever
// libblas.so.3 the alternatives system selects; the reference BLAS is ~27x slower
// than OpenBLAS, so `salt --version` says which one is active.
#pragma once
#include <string>

namespace salt {

struct BlasInfo {
  std::string path;    // resolved file of the loaded libblas, empty if none is loaded
  std::string vendor;  // "OpenBLAS", "BLIS", "MKL", "reference", or "unknown"
  bool optimised() const { return vendor != "reference" && vendor != "unknown"; }
};

BlasInfo active_blas();

}  // namespace salt
