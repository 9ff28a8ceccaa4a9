// Lightning's EMAWeightAveraging on real fits of the small GN2 (8 steps an epoch):
// every step's checkpoint holds torch's exponential moving average in state_dict
// (recomputed in Python torch from the checkpoints' current_model_state), the
// count and Lightning's callback state beside it; validation runs on the average;
// a resume continues it bit for bit; a checkpoint laid out by torch's AveragedModel
// as Lightning's on_save_checkpoint splits it resumes here.
#include "training/checkpoints/checkpoint.h"
#include "training/fit_support.h"

namespace salt::testing {
namespace fs = std::filesystem;

namespace {

// decay 0.8, updates from step index 3 (the 4th optimizer step) on.
const char* kEma =
    "--trainer.callbacks+={class_path: lightning.pytorch.callbacks.EMAWeightAveraging, init_args: {decay: 0.8, "
    "update_starting_at_step: 3}}";
const char* kEveryStep =
    "--trainer.callbacks+={class_path: lightning.pytorch.callbacks.ModelCheckpoint, init_args: "
    "{every_n_train_steps: 1, save_top_k: -1, filename: 'every-{step}'}}";

fs::path step_checkpoint(const fs::path& run, int64_t step) {
  return run / "checkpoints" / ("every-step=" + std::to_string(step) + ".ckpt");
}

void expect_same_tensors(const std::vector<std::pair<std::string, torch::Tensor>>& a,
                         const std::vector<std::pair<std::string, torch::Tensor>>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first) << what;
    EXPECT_TRUE(torch::equal(a[i].second, b[i].second)) << what << " " << a[i].first;
  }
}

}  // namespace

TEST_F(FitTest, EmaWeightAveragingKeepsTorchsAverageAndValidatesOnIt) {
  SALT_REQUIRE(have_python_module("torch"), "python3-torch is not installed (scripts/bootstrap.sh installs it)");
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "2", "-ls", "ema", kEma, kEveryStep}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto run = dir / "logs" / "GN2_cpu_ema";
  std::vector<std::string> paths;
  for (int64_t k = 1; k <= 16; ++k) paths.push_back(step_checkpoint(run, k).string());

  auto check = run_python(R"(
import sys, torch
decay, start = 0.8, 3
initial = average = None
for k, path in enumerate(sys.argv[1:], start=1):
    c = torch.load(path)
    sd, cur = c["state_dict"], c["current_model_state"]
    assert list(sd) == list(cur), path
    assert set(c["averaging_state"]) == {"n_averaged"}, c["averaging_state"].keys()
    assert int(c["averaging_state"]["n_averaged"]) == max(0, k - start), (k, c["averaging_state"])
    assert c["callbacks"]["EMAWeightAveraging"] == {"latest_update_step": k if k > start else 0}, c["callbacks"]
    if k <= start:  # no update yet: the average is the copy made when the fit began
        initial = initial or {n: t.clone() for n, t in sd.items()}
        want = initial
    elif average is None:  # torch's AveragedModel: the first update copies
        average = want = {n: t.clone() for n, t in cur.items()}
    else:  # torch.optim.swa_utils.get_ema_avg_fn
        average = want = {n: decay * average[n] + (1 - decay) * t if t.is_floating_point() else t.clone()
                          for n, t in cur.items()}
    for n in sd:
        assert torch.equal(sd[n], want[n]), (k, n, (sd[n] - want[n]).abs().max())
    differ = sum(not torch.equal(sd[n], cur[n]) for n in sd)
    assert (differ == 0) == (k == start + 1), (k, differ)  # the average is not the weights but where it was copied
print(len(sd), "tensors,", differ, "differ at the end")
)",
                          paths);
  ASSERT_EQ(check.exit_code, 0) << check.err;

  // Each validation ran on the average: salt validate of the average at the
  // epoch's last step (state_dict) gives the logged val/loss.
  std::vector<double> logged;
  for (const auto& row : read_metrics(run / "metrics.csv"))
    if (row.count("val/loss")) logged.push_back(row.at("val/loss"));
  ASSERT_EQ(logged.size(), 2u);
  for (int epoch = 0; epoch < 2; ++epoch) {
    auto val = salt("validate", {"-c", (run / "config.yaml").string(), "--ckpt_path",
                                 step_checkpoint(run, 8 * (epoch + 1)).string()});
    ASSERT_EQ(val.exit_code, 0) << val.err;
    const auto at = val.out.find("val/loss ");  // its table: name, then the value
    ASSERT_NE(at, std::string::npos) << val.out;
    EXPECT_NEAR(std::stod(val.out.substr(at + 9)), logged[static_cast<std::size_t>(epoch)], 1e-5) << val.out;
  }

  // Resumed from a step inside the first epoch, the run ends with the same
  // average and weights, bit for bit.
  auto resumed = salt("fit", small_gn2({"--trainer.max_epochs", "2", "-ls", "ema_resumed", kEma, kEveryStep,
                                        "--ckpt_path", step_checkpoint(run, 5).string()}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto a = training::load_checkpoint(step_checkpoint(run, 16));
  const auto b = training::load_checkpoint(step_checkpoint(dir / "logs" / "GN2_cpu_ema_resumed", 16));
  expect_same_tensors(a.state_dict, b.state_dict, "state_dict");
  expect_same_tensors(a.averaging.current_model_state, b.averaging.current_model_state, "current_model_state");
  expect_same_tensors(a.averaging.averaging_state, b.averaging.averaging_state, "averaging_state");
}

// A checkpoint whose averaging state torch's AveragedModel wrote (split as
// Lightning's on_save_checkpoint splits it, with a decay applied in Python): a
// resume takes it as the average and goes on from current_model_state.
TEST_F(FitTest, EmaResumesFromAnAveragedModelStateWrittenByPythonTorch) {
  SALT_REQUIRE(have_python_module("torch"), "python3-torch is not installed (scripts/bootstrap.sh installs it)");
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "2", "-ls", "ema", kEma, kEveryStep}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto run = dir / "logs" / "GN2_cpu_ema";
  const auto edited = dir / "python.ckpt";
  auto write = run_python(R"(
import sys, torch
from torch import nn
from torch.optim.swa_utils import AveragedModel
c = torch.load(sys.argv[1])
# A module tree with the checkpoint's names, its average loaded as Lightning loads it.
root = nn.Module()
for name, t in c["state_dict"].items():
    *path, leaf = name.split(".")
    m = root
    for p in path:
        if not hasattr(m, p): m.add_module(p, nn.Module())
        m = getattr(m, p)
    m.register_buffer(leaf, t.clone())
avg = AveragedModel(root, use_buffers=True)
avg.load_state_dict({"module." + n: t for n, t in c["state_dict"].items()} | dict(c["averaging_state"]))
# Another average (half-way to the weights), saved as Lightning's on_save_checkpoint does.
for n, t in avg.module.state_dict().items():
    if t.is_floating_point(): t.copy_(0.5 * t + 0.5 * c["current_model_state"][n])
state = avg.state_dict()
c["state_dict"] = {n[7:]: t for n, t in state.items() if n.startswith("module.")}
c["averaging_state"] = {n: t for n, t in state.items() if not n.startswith("module.")}
torch.save(c, sys.argv[2])
print(int(c["averaging_state"]["n_averaged"]))
)",
                          {step_checkpoint(run, 5).string(), edited.string()});
  ASSERT_EQ(write.exit_code, 0) << write.err;
  EXPECT_EQ(write.out, "2\n");

  auto resumed = salt("fit", small_gn2({"--trainer.max_epochs", "2", "-ls", "from_python", kEma, kEveryStep,
                                        "--ckpt_path", edited.string()}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto python = training::load_checkpoint(edited);
  const auto next = training::load_checkpoint(step_checkpoint(dir / "logs" / "GN2_cpu_from_python", 6));
  const auto straight = training::load_checkpoint(step_checkpoint(run, 6));
  // The weights went on from current_model_state: the uninterrupted run's step 6.
  expect_same_tensors(next.averaging.current_model_state, straight.averaging.current_model_state, "current_model_state");
  ASSERT_EQ(next.averaging.averaging_state.size(), 1u);
  EXPECT_EQ(next.averaging.averaging_state[0].second.item<int64_t>(), 3);
  // The average went on from Python's: 0.8 x it + 0.2 x the step-6 weights.
  const std::map<std::string, torch::Tensor> before(python.state_dict.begin(), python.state_dict.end());
  ASSERT_EQ(next.state_dict.size(), before.size());
  for (std::size_t i = 0; i < next.state_dict.size(); ++i) {
    const auto& [name, average] = next.state_dict[i];
    const auto& cur = next.averaging.current_model_state[i].second;
    if (!cur.is_floating_point()) continue;
    const auto want = before.at(name).mul(0.8).add(cur.mul(1 - 0.8));
    EXPECT_TRUE(torch::equal(average, want)) << name;
  }
}

}  // namespace salt::testing

namespace salt::testing {

// `device: cpu` keeps the average where a CPU fit's model is: the same average as
// without it. GN2's buffers (input norms, class weights) never change, but torch's
// EMA of a constant rounds it (0.8 x + 0.2 x); use_buffers: false copies them: the
// model's own values, the parameters' average unchanged. A device that is not cpu, cuda or cuda:N, or
// a card this process does not have, is one line before the data are read (it was
// torch's "Invalid device string" or "PyTorch is not linked with support for cuda
// devices", exit 1).
TEST_F(FitTest, EmaDeviceAndUseBuffersKeepTheAverageAndABadDeviceIsOneLine) {
  auto ema = [&](const std::string& suffix, const std::string& extra) {
    const auto r = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", suffix,
                                          "--trainer.callbacks+={class_path: lightning.pytorch.callbacks."
                                          "EMAWeightAveraging, init_args: {decay: 0.8" + extra + "}}"}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return training::load_checkpoint(checkpoints(dir / "logs" / ("GN2_cpu_" + suffix)).back()).state_dict;
  };
  const auto plain = ema("plain", "");
  expect_same_tensors(ema("on_cpu", ", device: cpu"), plain, "device: cpu");
  const auto copied = ema("no_buffers", ", use_buffers: false");
  ASSERT_EQ(salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "none"})).exit_code, 0);
  const auto model = training::load_checkpoint(checkpoints(dir / "logs" / "GN2_cpu_none").back()).state_dict;
  ASSERT_EQ(copied.size(), plain.size());
  ASSERT_EQ(copied.size(), model.size());
  int buffers_copied = 0;
  for (std::size_t i = 0; i < copied.size(); ++i) {
    if (torch::equal(copied[i].second, plain[i].second)) continue;  // a parameter's average
    ++buffers_copied;
    EXPECT_TRUE(torch::equal(copied[i].second, model[i].second)) << copied[i].first;  // the model's own buffer
  }
  EXPECT_GE(buffers_copied, 1);

  const std::string missing_card = torch::cuda::is_available() ? "cuda:99" : "cuda:0";
  for (const std::string& device : {std::string("gpu"), std::string("cuda:x"), missing_card}) {
    SCOPED_TRACE(device);
    const auto r = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "bad",
                                          "--trainer.callbacks+={class_path: lightning.pytorch.callbacks."
                                          "EMAWeightAveraging, init_args: {decay: 0.8, device: '" + device + "'}}"}));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(error_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("salt: error: EMAWeightAveraging: device '" + device + "' "), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "logs" / "GN2_cpu_bad")) << r.err;
  }
}

}  // namespace salt::testing
