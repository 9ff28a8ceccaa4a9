// The trainer settings live with the rest of the schema in lib/config; the
// training code knows them by these names.
#pragma once
#include "config/trainer_config.h"

namespace salt::training {
using config::BatchLimit;
using config::Precision;
using config::trainer_config_from_yaml;
using config::TrainerConfig;
}  // namespace salt::training
