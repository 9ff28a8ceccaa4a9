// Integrated gradients: the quadrature against numpy's, and salt test's
// IntegratedGradientWriter end to end: attributions that add up to the change of
// the output from the baselines to the jet (completeness), that change recomputed
// in Python from salt test's own prediction file.
#include "training/outputs/integrated_gradients.h"

#include <sstream>

#include "training/loop/evaluate.h"



#include "training/fit_support.h"

namespace salt::testing {
namespace fs = std::filesystem;

TEST(IntegratedGradients, GaussLegendreEqualsNumpys) {
  for (int n : {1, 2, 5, 50}) {
    const auto [nodes, weights] = training::gauss_legendre(n);
    auto r = run_python(R"(
import sys, numpy as np
x, w = np.polynomial.legendre.leggauss(int(sys.argv[1]))
for a, b in zip((x + 1) / 2, w / 2): print(repr(float(a)), repr(float(b)))  # numpy 2 reprs np.float64(...)
)",
                        {std::to_string(n)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream in(r.out);
    for (int i = 0; i < n; ++i) {
      double x = 0, w = 0;
      ASSERT_TRUE(in >> x >> w);
      EXPECT_NEAR(nodes[i], x, 1e-14) << "n " << n << " node " << i;
      EXPECT_NEAR(weights[i], w, 1e-14) << "n " << n << " weight " << i;
    }
  }
}

TEST_F(FitTest, IntegratedGradientWriterAttributionsAddUpToTheOutputChange) {
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "ig"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto run = dir / "logs" / "GN2_cpu_ig";
  std::ofstream(dir / "ig.yaml") << R"(
trainer:
  callbacks:
    - class_path: salt.callbacks.PredictionWriter
    - class_path: salt.callbacks.IntegratedGradientWriter
      init_args:
        input_keys: {inputs: [jets, tracks], pad_masks: [tracks]}
        output_keys: [jets, jets_classification]
        n_baselines: 2
        min_allowed_track_sizes: 3
        max_allowed_track_sizes: 12
        n_jets: 40
        n_steps: 50
        internal_batch_size: 16
)";
  const std::vector<std::string> args{"-c", (run / "config.yaml").string(), "-c", (dir / "ig.yaml").string()};
  auto r = salt("test", args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto best = training::best_checkpoint(run / "ckpts");
  const auto attributions = best.parent_path() / (best.stem().string() + "__attributions_ttbar.h5");
  const auto predictions = best.parent_path() / (best.stem().string() + "__test_ttbar.h5");
  ASSERT_TRUE(fs::exists(attributions)) << r.err;

  auto py = run_python(R"(
import sys, h5py, numpy as np
a = h5py.File(sys.argv[1]); p = h5py.File(sys.argv[2]); t = h5py.File(sys.argv[3])
rows = a["jet_index"][:]
jets = p["jets"][:]
probs = np.stack([jets["GN2_cpu_" + c] for c in ("pb", "pc", "pu", "ptau")], axis=1)[rows]
ntracks = t["tracks"]["valid"][:].sum(axis=1)[rows]
assert len(rows) == 40 and ntracks.min() >= 3 and ntracks.max() <= 12
assert np.allclose(a["predictions"][:], probs, atol=1e-5)
# baselines: per track count the 2 jets of highest entropy; f(x) - mean f(baseline)
entropy = -(probs * np.log(np.clip(probs, 1e-12, None))).sum(1)
change = np.zeros_like(probs)
for n in np.unique(ntracks):
    members = np.where(ntracks == n)[0]
    base = members[np.argsort(-entropy[members], kind="stable")[:2]]
    change[members] = probs[members] - probs[base].mean(0)
att = a["attributions"]
assert att["jets"].shape == (40, 4, 2) and att["tracks"].shape == (40, 4, 40, 19), att["tracks"].shape
assert list(att["jets"].attrs["variables"]) == ["pt_btagJes", "eta_btagJes"]
assert list(att.attrs["class_names"]) == ["bjets", "cjets", "ujets", "taujets"]
total = att["jets"][:].sum(axis=2) + att["tracks"][:].sum(axis=(2, 3))
print(np.abs(att["output_difference"][:] - change).max(), np.abs(total - change).max(), np.abs(change).max())
)",
                       {attributions.string(), predictions.string(), (dir / "data/toy/pp_output_test_ttbar.h5").string()});
  ASSERT_EQ(py.exit_code, 0) << py.err << py.out;
  double difference_error = 1, completeness_error = 1, largest_change = 0;
  std::istringstream(py.out) >> difference_error >> completeness_error >> largest_change;
  EXPECT_LT(difference_error, 1e-5) << py.out;
  EXPECT_LT(completeness_error, 1e-3) << py.out;  // 50 Gauss-Legendre points
  EXPECT_GT(largest_change, 0.01) << "the baselines differ from the jets";

  // Run again: the file exists, so one line and the file is untouched.
  const auto before = fs::last_write_time(attributions);
  auto again = salt("test", args);
  EXPECT_NE(again.exit_code, 0);
  EXPECT_EQ(error_lines(again.err), 1) << again.err;
  EXPECT_NE(again.err.find(attributions.string() + " exists; set overwrite: true to replace it"), std::string::npos)
      << again.err;
  EXPECT_EQ(fs::last_write_time(attributions), before);
}

}  // namespace salt::testing
