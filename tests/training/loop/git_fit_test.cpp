// `salt fit` and git, through the real binary in real repositories (built with
// libgit2, with a local bare repository as origin): a dirty tree is refused with
// its paths, --force runs and saves the patch, --tag pushes, metadata records the
// commit, and a run outside any repository warns and records null.
#include <git2.h>
#include <yaml-cpp/yaml.h>

#include <sstream>

#include "repro/git_fixture.h"
#include "support/test_support.h"

namespace salt::repro::testing {
namespace {

using salt::testing::ProcessResult;
using salt::testing::read_file;
using salt::testing::run_salt;

using salt::testing::error_lines;

class GitFit : public GitFixture {
 protected:
  void SetUp() override {
    GitFixture::SetUp();
    repo = init_repo(work);
    write(work / ".gitignore", "data/\nlogs/\n");
    write(work / "notes.md", "my analysis\n");
    head = commit_all(repo.get(), "initial");
    ASSERT_NO_THROW(salt::testing::write_toy_data(work / "data/toy", 1000, 200, 200));
  }

  ProcessResult fit(std::vector<std::string> extra) {
    std::vector<std::string> args{"fit", "-c", (salt::testing::source_dir() / "configs/DL1.yaml").string(),
                                  "--trainer.max_epochs", "1", "--data.batch_size", "250", "--data.num_workers", "0",
                                  "--trainer.enable_progress_bar", "false"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_salt(args, work);
  }

  RepositoryPtr repo;
  std::string head;
};

TEST_F(GitFit, CleanTreeRunsAndRecordsTheCommit) {
  auto r = fit({"-ls", "clean"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto meta = YAML::LoadFile((work / "logs/DL1_clean/metadata.yaml").string());
  EXPECT_EQ(meta["git_commit"].as<std::string>(), head);
  EXPECT_EQ(meta["salt_hash"].as<std::string>(), head);
  EXPECT_EQ(meta["git_branch"].as<std::string>(), "main");
  EXPECT_FALSE(meta["git_dirty"].as<bool>());
  EXPECT_FALSE(std::filesystem::exists(work / "logs/DL1_clean/uncommitted.patch"));
}

TEST_F(GitFit, DirtyTreeIsRefusedWithItsPaths) {
  write(work / "notes.md", "changed\n");
  write(work / "new_idea.py", "print(1)\n");
  auto r = fit({"-ls", "dirty"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("notes.md"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("new_idea.py"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(work / "logs"));  // nothing written
  // fast_dev_run skips the check, as in salt
  EXPECT_EQ(fit({"--trainer.fast_dev_run", "1"}).exit_code, 0);
}

TEST_F(GitFit, AStartThatFailsLeavesNoRunDirectory) {
  write(work / "notes.md", "changed\n");  // dirty: --force writes uncommitted.patch into the run directory
  // Refused while planning (no optimizer step), before the git checks.
  auto r = fit({"-ls", "zero", "--force", "--trainer.max_epochs", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(work / "logs/DL1_zero"));
  // Failing on the first batch, after the patch and config.yaml were written: the
  // directory is removed again.
  SALT_REQUIRE(salt::testing::have_python_module("h5py"), "python3-h5py is not installed");
  auto py = salt::testing::run_python(R"(
import shutil, sys, h5py, numpy as np
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r+") as f:
    jets = f["jets"][:]
    jets["pt_btagJes"] = np.nan
    f["jets"][:] = jets
)", {(work / "data/toy/pp_output_train.h5").string(), (work / "data/nan.h5").string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  r = fit({"-ls", "nan", "--force", "--data.train_file", "data/nan.h5"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("Non-finite inputs"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(work / "logs/DL1_nan"));
  // A run directory that existed before (here: an earlier run's, reused with -oc) stays.
  ASSERT_EQ(fit({"-ls", "kept", "--force"}).exit_code, 0);
  r = fit({"-ls", "kept", "--force", "-oc", "--data.train_file", "data/nan.h5"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(std::filesystem::exists(work / "logs/DL1_kept/config.yaml"));
}

TEST_F(GitFit, ForceRunsAndSavesThePatchThatRestoresTheTree) {
  write(work / "notes.md", "changed\n");
  write(work / "new_idea.py", "print(1)\n");
  auto r = fit({"-ls", "forced", "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto run = work / "logs/DL1_forced";
  auto patch = read_file(run / "uncommitted.patch");
  EXPECT_NE(patch.find("+changed"), std::string::npos) << patch;
  EXPECT_NE(patch.find("new_idea.py"), std::string::npos) << patch;
  auto meta = YAML::LoadFile((run / "metadata.yaml").string());
  EXPECT_TRUE(meta["git_dirty"].as<bool>());
  EXPECT_EQ(meta["git_commit"].as<std::string>(), head);
}

TEST_F(GitFit, TagIsCreatedAndPushedToOrigin) {
  auto bare = init_bare(tmp.path() / "origin.git");
  add_remote(repo.get(), "origin", (tmp.path() / "origin.git").string());
  auto r = fit({"-ls", "tagged", "--tag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  git_reference* ref = nullptr;
  ASSERT_EQ(git_reference_lookup(&ref, bare.get(), "refs/tags/DL1_tagged"), 0) << "tag not pushed";
  git_object* target = nullptr;
  ASSERT_EQ(git_reference_peel(&target, ref, GIT_OBJECT_COMMIT), 0);
  char id[GIT_OID_HEXSZ + 1];
  git_oid_tostr(id, sizeof id, git_object_id(target));
  EXPECT_EQ(std::string(id), head);
  git_object_free(target);
  git_reference_free(ref);
}

TEST_F(GitFit, FailingPushIsAClearError) {
  add_remote(repo.get(), "origin", (tmp.path() / "no-such-remote.git").string());
  auto r = fit({"-ls", "badpush", "--tag"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("origin"), std::string::npos) << r.err;
}

TEST_F(GitFit, SubmitRefusesADirtyTreeBeforeSubmittingAndIgnoresItsOwnJobFiles) {
  auto submit = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"submit_slurm", "-c", (salt::testing::source_dir() / "configs/DL1.yaml").string(),
                                  "-t", "t", "--cpu", "--dry-run", "--config.data.batch_size=250"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_salt(args, work);
  };
  // Job scripts and logs left by earlier submissions are not uncommitted changes.
  write(work / "slurm/batch/sbatch_old.sh", "#!/bin/bash\n");
  write(work / "slurm/batch_logs/old.out", "log\n");
  auto clean = submit({});
  EXPECT_EQ(clean.exit_code, 0) << clean.err;
  write(work / "notes.md", "changed\n");
  auto dirty = submit({});
  EXPECT_EQ(dirty.exit_code, 1) << dirty.err;
  EXPECT_NE(dirty.err.find("modified: notes.md"), std::string::npos) << dirty.err;
  EXPECT_EQ(dirty.err.find("slurm/"), std::string::npos) << dirty.err;
  EXPECT_EQ(submit({"-f"}).exit_code, 0);
  // ... and salt fit itself ignores them too.
  write(work / "notes.md", "my analysis\n");
  EXPECT_EQ(fit({"-ls", "withjobs"}).exit_code, 0);
}

TEST(GitFitOutside, NoRepositoryWarnsAndRecordsNull) {
  salt::testing::TempDir dir;
  ASSERT_NO_THROW(salt::testing::write_toy_data(dir / "data/toy", 1000, 200, 0));
  auto r = run_salt({"fit", "-c", (salt::testing::source_dir() / "configs/DL1.yaml").string(), "--trainer.max_epochs", "1",
                     "--data.batch_size", "250", "-ls", "x"},
                    dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("is not inside a git repository"), std::string::npos) << r.err;
  auto meta = YAML::LoadFile((dir / "logs/DL1_x/metadata.yaml").string());
  EXPECT_TRUE(meta["git_commit"].IsNull());
  EXPECT_TRUE(meta["salt_hash"].IsNull());
}

}  // namespace
}  // namespace salt::repro::testing
