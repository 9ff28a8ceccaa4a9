// `model.lrs_config`: salt's AdamW + OneCycleLR settings (bound in schema_root.cpp).
#pragma once
#include <cstdint>

namespace salt::config {

struct LrsConfig {
  double initial = 1e-7;
  double max = 5e-4;
  double end = 1e-7;
  double pct_start = 0.1;
  double weight_decay = 1e-5;
  int64_t last_epoch = -1;  // OneCycleLR's last_epoch, for resuming past the planned total
};

}  // namespace salt::config
