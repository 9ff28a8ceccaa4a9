// The pictures of a run: light- and c-jet rejection curves of each prediction
// file (next to it, <prediction stem>_roc.{png,pdf}) and the loss curves
// (<run>/loss_curves.{png,pdf}). `salt test` draws them after writing its
// predictions; `salt plot RUN_DIR` redraws them all.
#pragma once
#include <filesystem>
#include <vector>

namespace salt::plot {

// Every tagger of the prediction file's `jets` (fields <tagger>_pb, _pc, _pu),
// flavours from HadronConeExclTruthLabelID (5 b, 4 c, 0 light); D_b with f_c.
// Throws InputError naming the file when it has none of these.
std::vector<std::filesystem::path> plot_predictions(const std::filesystem::path& prediction_file, double f_c = 0.2);

// From <run>/metrics.csv; InputError when it is missing or has no loss.
std::vector<std::filesystem::path> plot_losses(const std::filesystem::path& run_dir);

// Both: the loss curves and every <run>/ckpts/*.h5 prediction file. InputError when
// `run_dir` is not a run directory (no metrics.csv).
std::vector<std::filesystem::path> plot_run(const std::filesystem::path& run_dir);

}  // namespace salt::plot
