// A card's theoretical peak FLOP/s for the dtype its matrix products run in, as
// Lightning's get_available_flops tables them (lightning/fabric/utilities/
// throughput.py, 2.6): ThroughputMonitor's MFU divides by it. nullopt where the
// table has no figure (the CPU, cards it does not list, a dtype a card lacks).
#pragma once
#include <optional>
#include <string>

#include "config/trainer_config.h"

namespace salt::training {

// device_name: torch.cuda.get_device_name's ("NVIDIA H100 80GB HBM3"); major: the
// compute capability (float32 counts as TF32 from 8 on unless matmul_precision is
// "highest", as in Lightning).
std::optional<double> peak_flops(const std::string& device_name, int major, config::Precision precision,
                                 const std::string& matmul_precision);

// Lightning's chip key for a device name ("h100 sxm"); "" when it names none.
std::string chip_of(const std::string& device_name);

}  // namespace salt::training
