// `salt mup`: salt's muP_utils/main_muP.py. Builds the base and delta proxy models
// of a config with model.mup_config (every width at parameter_base, then at
// parameter_delta) and writes their base shapes to <shape_path>/storeshapes, which
// `salt fit` on the same config reads (models/mup.h).
#pragma once
#include <filesystem>

#include "config/compose.h"

namespace salt::training {

// `resolved`: config::resolve's output. Returns the file written. UsageError without
// model.mup_config or when a width is not found in the model's arguments.
std::filesystem::path write_mup_shapes(const config::ResolvedConfig& resolved);

}  // namespace salt::training
