#include "training/loop/mup_shapes.h"

#include <spdlog/spdlog.h>

#include "config/compose.h"
#include "config/mup_config.h"
#include "core/errors.h"
#include "models/mup.h"
#include "training/run_setup.h"

namespace salt::training {

std::filesystem::path write_mup_shapes(const config::ResolvedConfig& resolved) {
  const auto& run = resolved.run;
  if (!run.model.mup_config)
    throw UsageError("salt mup: the config has no model.mup_config (the widths and where to write their base shapes)");
  const auto& mup = *run.model.mup_config;
  auto params_of = [&](bool base) {
    auto setup = prepare_run(config::mup_proxy(resolved, mup, base), Stage::kFit);
    return setup.model->model->named_parameters();
  };
  const auto shapes = models::make_base_shapes(params_of(true), params_of(false));
  const auto file = config::mup_shapes_file(mup);
  models::write_base_shapes(file, shapes);
  int widths = 0;
  for (const auto& [_, dims] : shapes)
    for (const auto& d : dims) widths += d.has_value();
  spdlog::info("wrote {}: {} parameters, {} width dimensions", file.string(), shapes.size(), widths);
  return file;
}

}  // namespace salt::training
