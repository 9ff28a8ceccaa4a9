// The data settings live with the rest of the schema in lib/config; the data
// code knows them by these names.
#pragma once
#include "config/data_config.h"

namespace salt::data {
using config::data_config_from_yaml;
using config::DataConfig;
}  // namespace salt::data
