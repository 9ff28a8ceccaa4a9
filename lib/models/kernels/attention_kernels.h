// Which attention kernels the process ran: each Attention call site records its
// kernel the first time it runs, e.g. "varlen (salt-cpp's kernel on packed rows,
// cpu, Float)" or "scaled_dot_product_attention: memory-efficient (cuda,
// BFloat16)". fit reports them with the run's resources (metadata.yaml). Torch-free.
#pragma once
#include <string>
#include <vector>

namespace salt::models {

void note_attention_kernel(const std::string& kernel);
// One entry per kernel, sorted.
std::vector<std::string> attention_kernels_used();

}  // namespace salt::models
