// `salt compare_models` (salt/utils/compare_models.py): two taggers' predictions
// in one or two evaluation files compared jet by jet, e.g. salt-cpp's `salt test`
// output against the same model run in Athena and dumped by the TDD.
#pragma once
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace salt::deploy {

struct CompareOptions {
  std::filesystem::path file_a;
  std::optional<std::filesystem::path> file_b;  // default: file_a
  std::string tagger_a;
  std::optional<std::string> tagger_b;          // default: tagger_a
  std::vector<std::string> vars{"b", "c", "u"}; // compared: {tagger}_p{var} ({tagger}_{var} with gaussian_regression)
  bool gaussian_regression = false;
  std::vector<std::string> cuts{"n_tracks <= 40"};  // the default cut is skipped for files without n_tracks
  bool cuts_given = false;
  int64_t num = -1;  // jets compared (-1: all)
};

struct VarComparison {
  std::string var_a, var_b;
  double max = 0, mean = 0, median = 0;
  int64_t above_1e6 = 0;
  bool close = true;  // numpy's allclose(rtol=1e-4, atol=1e-6)
};

// Prints salt's report to `out`; UsageError for bad arguments (same model twice),
// InputError for files without the fields, non-float32 or NaN values, different
// jet counts, and when the predictions are not close.
std::vector<VarComparison> compare_models(const CompareOptions& options, std::ostream& out);

}  // namespace salt::deploy
