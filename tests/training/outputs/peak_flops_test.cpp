// The cards' peaks ThroughputMonitor divides by: Lightning 2.6's table and its
// parsing of torch.cuda.get_device_name.
#include <gtest/gtest.h>

#include "training/outputs/peak_flops.h"

namespace salt::training {
namespace {

using config::Precision;

TEST(PeakFlops, LightningsChipNames) {
  EXPECT_EQ(chip_of("NVIDIA H100 80GB HBM3"), "h100 sxm");
  EXPECT_EQ(chip_of("NVIDIA H100 PCIe"), "h100 pcie");
  EXPECT_EQ(chip_of("NVIDIA H100 NVL"), "h100 nvl");
  EXPECT_EQ(chip_of("NVIDIA H200"), "h200 sxm1");  // Lightning leaves it unnamed
  EXPECT_EQ(chip_of("NVIDIA A100-SXM4-80GB"), "a100");
  EXPECT_EQ(chip_of("Tesla V100-SXM2-16GB"), "v100 sxm");
  EXPECT_EQ(chip_of("NVIDIA GeForce GTX 1080"), "");
  EXPECT_EQ(chip_of(""), "");
}

TEST(PeakFlops, TheDtypeTheProductsRunIn) {
  EXPECT_EQ(peak_flops("NVIDIA H100 80GB HBM3", 9, Precision::kBFloat16Mixed, "medium"), 989.4e12);
  EXPECT_EQ(peak_flops("NVIDIA H100 80GB HBM3", 9, Precision::kFloat16Mixed, "medium"), 989.4e12);
  EXPECT_EQ(peak_flops("NVIDIA H100 80GB HBM3", 9, Precision::kFloat32, "medium"), 494.7e12);  // TF32
  EXPECT_EQ(peak_flops("NVIDIA H100 80GB HBM3", 9, Precision::kFloat32, "highest"), 66.9e12);
  EXPECT_EQ(peak_flops("Tesla V100-SXM2-16GB", 7, Precision::kFloat32, "medium"), 15.7e12);  // no TF32 before 8
  EXPECT_FALSE(peak_flops("Tesla V100-SXM2-16GB", 7, Precision::kBFloat16Mixed, "medium"));  // no bf16 there
  EXPECT_FALSE(peak_flops("", 0, Precision::kFloat32, "highest"));                          // the CPU
}

}  // namespace
}  // namespace salt::training
