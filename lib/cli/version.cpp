#include "cli/version.h"

#include <unistd.h>

#include "core/blas_info.h"
#include "core/provenance.h"
#include "core/torch_compat.h"
#include "parallel/backends.h"

namespace salt::cli {

std::string version_text() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  auto blas = active_blas();
  std::string text;
  text += std::string("salt-cpp ") + salt_version() + "\n";
  text += std::string("commit: ") + build_commit() + (build_dirty() ? " (dirty)" : "") + "\n";
  text += "LibTorch: " + compat::torch_version() + "\n";
  text += std::string("CUDA: ") + (torch::cuda::is_available()
                                       ? "available, " + std::to_string(torch::cuda::device_count()) + " device(s)"
                                       : "not available") +
          "\n";
  text += "BLAS: " + blas.vendor + (blas.path.empty() ? "" : " (" + blas.path + ")");
  if (!blas.optimised()) text += " -- slow; install an optimised BLAS: apt-get install libopenblas0-pthread";
  text += "\n";
  // Gloo goes missing where LibTorch ships no gloo/ headers (pip's; docs/distributed.md).
  const auto backends = parallel::built_backends();
  text += std::string("data parallel: ") +
          (backends.gloo ? "gloo" : "no gloo (its headers were missing at build time)") +
          (backends.nccl ? ", nccl" : "") + "\n";
  text += std::string("host: ") + host + "\n";
  return text;
}

}  // namespace salt::cli
