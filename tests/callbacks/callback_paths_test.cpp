// Paths that callbacks build from the config's text stay in their folder: a
// ModelCheckpoint filename, salt's Checkpoint fname_string and the profiler's
// filename that would leave it are refused when the config is read (no run
// directory is made), its format specs too; and a checkpoint folder replaced by a
// symbolic link to another place is neither written through nor has files deleted
// behind it. Real `salt fit` runs of DL1 on toy data (1000 jets, batches of 250).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/remove_tree.h"
#include "support/test_support.h"

namespace salt::testing {
namespace {
namespace fs = std::filesystem;

class CallbackPaths : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_THROW(write_toy_data(dir / "data/toy", 1000, 300, 300)); }

  // `salt fit` of DL1, run suffix `suffix`, with `extra` flags, in `dir`.
  ProcessResult fit(const std::string& suffix, std::vector<std::string> extra) {
    std::vector<std::string> args{"fit",
                                  "-c",
                                  (source_dir() / "configs" / "DL1.yaml").string(),
                                  "--data.batch_size",
                                  "250",
                                  "--data.num_workers",
                                  "0",
                                  "--trainer.enable_progress_bar",
                                  "false",
                                  "--trainer.enable_model_summary",
                                  "false",
                                  "-ls",
                                  suffix};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_salt(args, dir.path(), {"OMP_NUM_THREADS=1"});
  }

  static std::string model_checkpoint(const std::string& init_args) {
    return "--trainer.callbacks+={class_path: lightning.pytorch.callbacks.ModelCheckpoint, init_args: {" + init_args +
           "}}";
  }

  fs::path run_dir(const std::string& suffix) const { return dir / "logs" / ("DL1_" + suffix); }

  // Every file below `root` whose name starts with `prefix`.
  static std::vector<fs::path> files_named(const fs::path& root, const std::string& prefix) {
    std::vector<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(root))
      if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
    return out;
  }

  // One error line, exit 2, no run directory, and `needles` in the message.
  void expect_refused(const ProcessResult& r, const std::string& suffix, const std::vector<std::string>& needles) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(error_lines(r.err), 1) << r.err;
    for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << n << "\n" << r.err;
    EXPECT_FALSE(fs::exists(run_dir(suffix))) << r.err;
  }

  TempDir dir;
};

TEST_F(CallbackPaths, NamesThatWouldLeaveTheirFolderAreRefusedBeforeTheRun) {
  fs::create_directories(dir / "elsewhere");
  const auto absolute = (dir / "elsewhere" / "escape_abs_{epoch}").string();
  struct Case {
    std::string suffix;
    std::vector<std::string> flags;
    std::string key;
  };
  const std::vector<Case> cases = {
      {"up", {model_checkpoint("filename: '../../../escape_up_{epoch}'")}, "ModelCheckpoint 'filename'"},
      {"abs", {model_checkpoint("filename: '" + absolute + "'")}, "ModelCheckpoint 'filename'"},
      {"inner", {model_checkpoint("filename: '{epoch}/../../../../escape_inner'")}, "ModelCheckpoint 'filename'"},
      // salt's Checkpoint (configs/base.yaml's first callback): <run>/ckpts/epoch=NNN-<fname_string>=X.ckpt
      {"fname", {"--trainer.callbacks.0.init_args.fname_string", "x/../../../../escape_fname"},
       "salt.callbacks.Checkpoint 'fname_string'"},
      {"prof",
       {"--trainer.profiler",
        "{class_path: lightning.pytorch.profilers.SimpleProfiler, init_args: {filename: /../../../escape_prof}}"},
       "'trainer.profiler' filename"},
  };
  for (const auto& c : cases) {
    auto flags = c.flags;
    flags.insert(flags.end(), {"--trainer.max_epochs", "1"});
    const auto r = fit(c.suffix, flags);
    expect_refused(r, c.suffix, {c.key, "no '..'"});
  }
  EXPECT_TRUE(files_named(dir.path(), "escape").empty());  // where each would have landed
  // Folders below dirpath are still Lightning's: a '/' in the template makes one.
  const auto ok = fit("nested", {"--trainer.max_epochs", "1", model_checkpoint("filename: 'sub/{epoch}'")});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(fs::exists(run_dir("nested") / "checkpoints" / "sub" / "epoch=0.ckpt"));
}

TEST_F(CallbackPaths, FormatSpecsAreCheckedWhenTheConfigIsRead) {
  const std::string huge(100000, 'x');
  struct Case {
    std::string suffix, filename;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {"wide", "'{epoch:099999999999999999999}'", {"'filename'", "width over 100"}},
      {"widef", "'{val/loss:99999999999999999999}'", {"'filename'", "'val/loss'", "width over 100"}},
      {"prec", "'{val/loss:.101f}'", {"'filename'", "precision over 100"}},
      {"intf", "'{epoch}-{val/loss:03d}'", {"'filename'", "'03d' is for integers"}},
      {"bad", "'{epoch:.2q}'", {"'filename'", "'.2q'"}},
      {"long", "'" + huge + "{epoch}'", {"'filename'", "longer than 255 bytes"}},
      {"longspec", "'{epoch:" + huge + "}'", {"'filename'"}},
  };
  for (const auto& c : cases) {
    const auto r = fit(c.suffix, {"--trainer.max_epochs", "1", model_checkpoint("filename: " + c.filename)});
    expect_refused(r, c.suffix, c.needles);
    EXPECT_LT(r.err.size(), 600u) << r.err.substr(0, 600);  // the user's text is cut, not echoed whole
  }
  // Within the bounds, the widest spec formats as Python does: format(0, '03d'), a float in 100 places.
  const auto ok =
      fit("fine", {"--trainer.max_epochs", "1", model_checkpoint("filename: '{epoch:03d}-{val/loss:.100f}'")});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const auto saved = files_named(run_dir("fine") / "checkpoints", "loss=");
  ASSERT_EQ(saved.size(), 1u);
  const auto name = saved[0].filename().string();
  EXPECT_EQ(name.size(), std::string("loss=0.").size() + 100 + std::string(".ckpt").size()) << name;
}

// filename '{epoch}/model': each epoch's checkpoint in its own folder below
// dirpath. A folder of them replaced by a link to another place holds, there, a
// file of the same name: the resumed run (save_top_k 1) must not delete it.
TEST_F(CallbackPaths, ADeletionNeverFollowsALinkOutOfDirpath) {
  const auto ckpts = dir / "mc";
  const auto mc = model_checkpoint("dirpath: " + ckpts.string() + ", filename: '{epoch}/model', save_top_k: 1");
  const auto first = fit("first", {"--trainer.max_epochs", "1", mc});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto epoch0 = ckpts / "epoch=0";
  ASSERT_TRUE(fs::exists(epoch0 / "model.ckpt"));
  const auto resume_from = dir / "resume.ckpt";
  fs::copy_file(epoch0 / "model.ckpt", resume_from);
  // The user's own folder, with a file named as the old checkpoint, now behind epoch=0.
  const auto theirs = dir / "theirs";
  fs::create_directories(theirs);
  write_file(theirs / "model.ckpt", "not salt's\n");
  salt::remove_tree(epoch0);
  fs::create_directory_symlink(theirs, epoch0);

  const auto resumed = fit("second", {"--trainer.max_epochs", "2", "--ckpt_path", resume_from.string(),
                                      "--model.lrs_config.last_epoch", "0", mc});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(fs::exists(ckpts / "epoch=1" / "model.ckpt"));
  ASSERT_TRUE(fs::exists(theirs / "model.ckpt")) << resumed.err;
  EXPECT_EQ(read_file(theirs / "model.ckpt"), "not salt's\n");
  EXPECT_NE(resumed.err.find("ModelCheckpoint: keeping " + (epoch0 / "model.ckpt").string() +
                             ": a symbolic link in its path leads out of dirpath"),
            std::string::npos)
      << resumed.err;
}

// The same layout, where the next checkpoint's folder is the link: the run
// stops with one line instead of writing into the other place.
TEST_F(CallbackPaths, AWriteNeverFollowsALinkOutOfDirpath) {
  const auto ckpts = dir / "mc";
  const auto mc = model_checkpoint("dirpath: " + ckpts.string() + ", filename: '{epoch}/model', save_top_k: -1");
  const auto theirs = dir / "theirs";
  fs::create_directories(ckpts);
  fs::create_directories(theirs);
  fs::create_directory_symlink(theirs, ckpts / "epoch=0");
  const auto r = fit("write", {"--trainer.max_epochs", "1", mc});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("ModelCheckpoint: not writing " + (ckpts / "epoch=0" / "model.ckpt").string() +
                       ": a symbolic link in it leads out of dirpath"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::is_empty(theirs));
  // dirpath itself may be a link: it is the user's choice of folder.
  const auto linked = dir / "linked";
  fs::create_directory_symlink(theirs, linked);
  const auto ok = fit("linked", {"--trainer.max_epochs", "1",
                                 model_checkpoint("dirpath: " + linked.string() + ", filename: '{epoch}/model'")});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(fs::exists(theirs / "epoch=0" / "model.ckpt"));
}

// A checkpoint edited in Python (torch.load / torch.save, as a user or another
// tool could) whose ModelCheckpoint state ranks a file outside dirpath as the
// k-th best: the resumed run replaces it in the ranking and keeps the file.
TEST_F(CallbackPaths, AResumedStateNamingAFileOutsideDirpathDeletesNothing) {
  const auto ckpts = dir / "mc";
  const auto mc = model_checkpoint("dirpath: " + ckpts.string() + ", monitor: val/loss, save_top_k: 1");
  const auto first = fit("first", {"--trainer.max_epochs", "1", mc});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto saved = ckpts / "epoch=0-step=4.ckpt";
  ASSERT_TRUE(fs::exists(saved));
  const auto victim = dir / "victim.ckpt", edited = dir / "edited.ckpt";
  write_file(victim, "not salt's\n");
  const auto py = run_python(R"(
import sys, torch
ck = torch.load(sys.argv[1])
(key,) = [k for k in ck["callbacks"] if k.startswith("ModelCheckpoint")]
state, victim = ck["callbacks"][key], sys.argv[2]
inf = torch.tensor(float("inf"))
state.update(best_k_models={victim: inf}, kth_best_model_path=victim, kth_value=inf, best_model_path=victim,
             best_model_score=inf)
torch.save(ck, sys.argv[3])
)",
                             {saved.string(), victim.string(), edited.string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  const auto resumed = fit("second", {"--trainer.max_epochs", "2", "--ckpt_path", edited.string(),
                                      "--model.lrs_config.last_epoch", "0", mc});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(read_file(victim), "not salt's\n");
  EXPECT_TRUE(fs::exists(ckpts / "epoch=1-step=8.ckpt"));
  EXPECT_NE(resumed.err.find("ModelCheckpoint: keeping " + victim.string() + ": it is outside dirpath"),
            std::string::npos)
      << resumed.err;
}

}  // namespace
}  // namespace salt::testing
