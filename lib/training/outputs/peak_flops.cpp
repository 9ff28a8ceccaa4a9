#include "training/outputs/peak_flops.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace salt::training {
namespace {

struct Peaks {
  double f32, tf32, bf16, f16;  // 0: not listed
};

// Lightning 2.6's _CUDA_FLOPS for the data-centre cards of the field.
const std::map<std::string, Peaks>& table() {
  static const std::map<std::string, Peaks> t = {
      {"h200 sxm1", {6.7e13, 9.9e14, 2.0e15, 2.0e15}},
      {"h200 nvl1", {6.0e13, 8.4e14, 1.7e15, 1.7e15}},
      {"h100 nvl", {133.8e12, 989.4e12, 1978.8e12, 1978.8e12}},
      {"h100 sxm", {66.9e12, 494.7e12, 989.4e12, 989.4e12}},
      {"h100 pcie", {51.2e12, 378e12, 756e12, 756e12}},
      {"l4", {30.3e12, 60e12, 121e12, 121e12}},
      {"l40", {90.5e12, 90.5e12, 181e12, 181e12}},
      {"a100", {19.5e12, 156e12, 312e12, 312e12}},
      {"a6000", {38.7e12, 77.4e12, 38.7e12, 38.7e12}},
      {"a40", {37.4e12, 74.8e12, 37.4e12, 37.4e12}},
      {"a10g", {31.2e12, 62.5e12, 125e12, 125e12}},
      {"t4", {8.1e12, 0, 0, 65e12}},
      {"v100 sxm", {15.7e12, 0, 0, 125e12}},
      {"v100 pcie", {14e12, 0, 0, 112e12}},
      {"v100s pcie", {16.4e12, 0, 0, 130e12}},
  };
  return t;
}

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

std::string chip_of(const std::string& device_name) {
  std::string chip = device_name;
  std::transform(chip.begin(), chip.end(), chip.begin(), [](unsigned char c) { return std::tolower(c); });
  // Lightning's parsing, in its order. A plain "NVIDIA H200" (what the H200 SXM
  // reports) Lightning leaves unnamed; it is the SXM card, so salt-cpp names it.
  if (has(chip, "h200")) return has(chip, "nvl") ? "h200 nvl1" : "h200 sxm1";
  if (has(chip, "h100")) {
    if (has(chip, "hbm3")) return "h100 sxm";
    if (has(chip, "nvl")) return "h100 nvl";
    if (has(chip, "pcie") || has(chip, "hbm2e")) return "h100 pcie";
    return "";
  }
  if (has(chip, "l4")) return has(chip, "tesla") ? "l40" : "l4";
  if (has(chip, "a6000")) return "a6000";
  if (has(chip, "a100")) return "a100";
  if (has(chip, "a40")) return "a40";
  if (has(chip, "a10g")) return "a10g";
  if (has(chip, "t4")) return "t4";
  if (has(chip, "v100-sxm")) return "v100 sxm";
  if (has(chip, "v100-pcie")) return "v100 pcie";
  if (has(chip, "v100s-pcie")) return "v100s pcie";
  return "";
}

std::optional<double> peak_flops(const std::string& device_name, int major, config::Precision precision,
                                 const std::string& matmul_precision) {
  const auto it = table().find(chip_of(device_name));
  if (it == table().end()) return std::nullopt;
  const auto& p = it->second;
  double v = 0;
  switch (precision) {
    case config::Precision::kBFloat16Mixed: v = p.bf16; break;
    case config::Precision::kFloat16Mixed: v = p.f16; break;
    case config::Precision::kFloat32: v = major >= 8 && matmul_precision != "highest" ? p.tf32 : p.f32; break;
  }
  if (v <= 0) return std::nullopt;
  return v;
}

}  // namespace salt::training
