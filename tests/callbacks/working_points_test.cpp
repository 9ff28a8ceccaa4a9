// salt_cpp.callbacks.WorkingPoints on real fits of the small GN2: the rejections
// at every validation, checked against numpy's percentile on `salt test`'s
// predictions of the same weights over the same jets; a ModelCheckpoint that
// follows one of them keeps the epoch where it peaked (not the best loss's); the
// refusals; config.yaml keeps salt readable.
#include <cmath>

#include "training/fit_support.h"

namespace salt::testing {
namespace fs = std::filesystem;

namespace {

const char* kWorkingPoints = "--trainer.callbacks+={class_path: salt_cpp.callbacks.WorkingPoints}";

// The epoch (from 0) of the first best value of `metric` over the validation rows.
int64_t best_epoch(const std::vector<std::map<std::string, double>>& rows, const std::string& metric, bool max) {
  int64_t best = -1;
  double value = 0;
  for (const auto& row : rows) {
    const double v = row.at(metric);
    if (best < 0 || (max ? v > value : v < value)) best = static_cast<int64_t>(row.at("epoch")), value = v;
  }
  return best;
}

}  // namespace

TEST_F(FitTest, WorkingPointsAreLoggedEachValidationAsSaltTestComputesThem) {
  SALT_REQUIRE(have_python_module("h5py"), "python3-h5py is not installed (scripts/bootstrap.sh installs it)");
  const std::string by_rej =
      "--trainer.callbacks+={class_path: lightning.pytorch.callbacks.ModelCheckpoint, init_args: {monitor: "
      "val/GN2_cpu_light_rej_77, mode: max, save_top_k: 1, filename: '{epoch}'}}";
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "8", "-ls", "wp", "--seed_everything", "3",
                                    kWorkingPoints, by_rej}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto run = dir / "logs" / "GN2_cpu_wp";

  std::vector<std::map<std::string, double>> validations;
  for (const auto& row : read_metrics(run / "metrics.csv"))
    if (row.count("val/loss")) validations.push_back(row);
  ASSERT_EQ(validations.size(), 8u);
  for (const auto& row : validations)
    for (const char* wp : {"70", "77", "85"})
      for (const char* bkg : {"light", "c"}) {
        const auto name = std::string("val/GN2_cpu_") + bkg + "_rej_" + wp;
        ASSERT_TRUE(row.count(name)) << name << " at epoch " << row.at("epoch");
        EXPECT_GE(row.at(name), 1.0) << name;
      }

  // The checkpoint that follows the rejection is its argmax, and the run was
  // chosen so that the best loss came at another epoch (seed 3: the rejection
  // peaks at epoch 3 while the loss falls to the end; else this proves nothing).
  const auto rej_best = best_epoch(validations, "val/GN2_cpu_light_rej_77", true);
  ASSERT_NE(rej_best, best_epoch(validations, "val/loss", false)) << "precondition: the run must tell them apart";
  std::vector<std::string> kept;
  for (const auto& e : fs::directory_iterator(run / "checkpoints"))
    kept.push_back(e.path().filename().string());
  ASSERT_EQ(kept, std::vector<std::string>{"epoch=" + std::to_string(rej_best) + ".ckpt"});

  // The kept epoch's figures, from salt test's predictions of its checkpoint over
  // the validation file, with puma's recipe in numpy.
  auto test = salt("test", {"-c", (run / "config.yaml").string(), "--ckpt_path",
                            (run / "checkpoints" / kept.at(0)).string(), "--data.test_file",
                            (dir / "data/toy/pp_output_val.h5").string(), "--data.num_test", "500"});
  ASSERT_EQ(test.exit_code, 0) << test.err;
  fs::path predictions;
  for (const auto& e : fs::directory_iterator(run / "checkpoints"))
    if (e.path().extension() == ".h5") predictions = e.path();
  ASSERT_FALSE(predictions.empty()) << test.err;
  auto numpy = run_python(R"(
import sys, h5py, numpy as np
pred = h5py.File(sys.argv[1])["jets"][:]
classes = list(h5py.File(sys.argv[2])["jets"].attrs["flavour_label"])
label = pred["flavour_label"]
pb, pc, pu = (pred["GN2_cpu_p" + x].astype(np.float64) for x in "bcu")
d = np.log(pb / (0.2 * pc + 0.8 * pu))
b, c, u = (label == classes.index(n) for n in ("bjets", "cjets", "ujets"))
for eff in (0.70, 0.77, 0.85):
    cut = np.percentile(d[b], 100 * (1 - eff))
    print(repr(float(1 / np.mean(d[u] > cut))), repr(float(1 / np.mean(d[c] > cut))))
)",
                          {predictions.string(), (dir / "data/toy/pp_output_val.h5").string()});
  ASSERT_EQ(numpy.exit_code, 0) << numpy.err;
  std::istringstream in(numpy.out);
  const auto& kept_row = validations.at(static_cast<std::size_t>(rej_best));
  for (const char* wp : {"70", "77", "85"}) {
    double light = 0, c = 0;
    ASSERT_TRUE(in >> light >> c) << numpy.out;
    EXPECT_NEAR(kept_row.at(std::string("val/GN2_cpu_light_rej_") + wp), light, 1e-6 * light) << wp;
    EXPECT_NEAR(kept_row.at(std::string("val/GN2_cpu_c_rej_") + wp), c, 1e-6 * c) << wp;
  }

  // salt reads config.yaml: salt-cpp's own callback is left out of it.
  std::ifstream config(run / "config.yaml");
  const std::string text((std::istreambuf_iterator<char>(config)), {});
  EXPECT_EQ(text.find("WorkingPoints"), std::string::npos);
  EXPECT_NE(text.find("ModelCheckpoint"), std::string::npos);
}

TEST_F(FitTest, WorkingPointsRefuseAnEfficiencyInPercentAndAnUnknownTask) {
  const std::pair<std::string, std::string> cases[] = {
      {"init_args: {efficiencies: [0.7, 77]}", "WorkingPoints: efficiency 77 is not in (0, 1] (a fraction: 0.77"},
      {"init_args: {task_name: track_origin}",
       "task 'track_origin' is not a classification of jets with classes bjets, cjets and ujets"},
      {"init_args: {task_name: jets_flavour}", "the model has no task 'jets_flavour' (its tasks: jets_classification"},
  };
  for (const auto& [args, says] : cases) {
    auto r = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "bad",
                                    "--trainer.callbacks+={class_path: salt_cpp.callbacks.WorkingPoints, " + args + "}"}));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(error_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("salt: error: " + std::string(says)), std::string::npos) << r.err;
    EXPECT_TRUE(runs().empty()) << r.err;
  }
}

}  // namespace salt::testing
