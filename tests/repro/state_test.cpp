// Repository discovery, HEAD/branch, and the dirty-tree refusal before `salt fit`.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "git_fixture.h"
#include "repro/dirty_check.h"
#include "repro/git_state.h"
#include "repro/path_filter.h"

namespace salt::repro::testing {
namespace {

class StateTest : public GitFixture {
 protected:
  void SetUp() override {
    GitFixture::SetUp();
    repo = init_repo(work);
    write(work / "a.txt", "alpha\n");
    write(work / "b.txt", "beta\n");
    write(work / "src" / "c.cpp", "int main() {}\n");
    write(work / ".gitignore", "*.log\nbuild/\n");
    commit_id = commit_all(repo.get(), "initial");
  }
  // The refusal's message for the current tree, or "" when it did not throw.
  std::string refusal() {
    auto state = inspect_repository(work);
    EXPECT_TRUE(state.has_value());
    try {
      refuse_if_dirty(*state);
    } catch (const InputError& e) {
      EXPECT_EQ(e.exit_code(), 1);
      std::string msg = e.what();
      RecordProperty("message", msg);  // shown in --gtest_output=xml reports
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      EXPECT_NE(msg.find("--force"), std::string::npos) << msg;
      EXPECT_EQ(msg.rfind("uncommitted changes in " + fs::canonical(work).string() + " (", 0), 0u) << msg;
      return msg;
    }
    return "";
  }
  RepositoryPtr repo;
  std::string commit_id;
};

TEST_F(StateTest, CleanTreePassesWithCommitAndBranch) {
  auto state = inspect_repository(work / "src");  // discovered from a subdirectory
  ASSERT_TRUE(state);
  EXPECT_EQ(fs::canonical(state->workdir), fs::canonical(work));
  ASSERT_TRUE(state->commit);
  EXPECT_EQ(*state->commit, commit_id);
  EXPECT_EQ(state->commit->size(), 40u);
  EXPECT_EQ(state->branch, std::optional<std::string>("main"));
  EXPECT_FALSE(state->is_dirty());
  EXPECT_NO_THROW(refuse_if_dirty(*state));
  EXPECT_EQ(refusal(), "");
}

TEST_F(StateTest, DetachedHeadHasCommitButNoBranch) {
  git_oid id;
  ok(git_oid_fromstr(&id, commit_id.c_str()), "oid");
  ok(git_repository_set_head_detached(repo.get(), &id), "detach");
  auto state = inspect_repository(work);
  ASSERT_TRUE(state);
  EXPECT_EQ(state->commit, std::optional<std::string>(commit_id));
  EXPECT_FALSE(state->branch.has_value());
}

TEST_F(StateTest, UnbornBranchHasNameButNoCommit) {
  auto fresh = init_repo(tmp / "fresh");
  auto state = inspect_repository(tmp / "fresh");
  ASSERT_TRUE(state);
  EXPECT_FALSE(state->commit.has_value());
  EXPECT_EQ(state->branch, std::optional<std::string>("main"));
  EXPECT_FALSE(state->is_dirty());
}

TEST_F(StateTest, UnstagedModificationIsRefused) {
  write(work / "a.txt", "alpha changed\n");
  auto msg = refusal();
  EXPECT_NE(msg.find("(modified: a.txt)"), std::string::npos) << msg;
}

TEST_F(StateTest, UnstagedDeletionIsRefused) {
  fs::remove(work / "src" / "c.cpp");
  auto msg = refusal();
  EXPECT_NE(msg.find("deleted: src/c.cpp"), std::string::npos) << msg;
}

TEST_F(StateTest, StagedChangeIsRefused) {
  write(work / "b.txt", "beta staged\n");
  stage(repo.get(), "b.txt");
  auto msg = refusal();
  EXPECT_NE(msg.find("(staged: b.txt)"), std::string::npos) << msg;
}

TEST_F(StateTest, StagedThenEditedAgainShowsBothKinds) {
  write(work / "b.txt", "beta staged\n");
  stage(repo.get(), "b.txt");
  write(work / "b.txt", "beta edited after staging\n");
  auto msg = refusal();
  EXPECT_NE(msg.find("staged+modified: b.txt"), std::string::npos) << msg;
}

TEST_F(StateTest, UntrackedFileIsRefused) {
  write(work / "notes" / "todo.txt", "remember\n");
  auto msg = refusal();
  // Listed as the file itself, not as the directory holding it.
  EXPECT_NE(msg.find("(untracked: notes/todo.txt)"), std::string::npos) << msg;
}

TEST_F(StateTest, IgnoredUntrackedFilesAreNotDirt) {
  write(work / "train.log", "epoch 1\n");
  write(work / "build" / "out.o", "\x7f" "ELF");
  write(work / "src" / "deep.log", "x\n");
  auto state = inspect_repository(work);
  ASSERT_TRUE(state);
  EXPECT_FALSE(state->is_dirty()) << describe_dirty(*state);
  EXPECT_EQ(refusal(), "");
}

TEST_F(StateTest, AllKindsListedInPathOrder) {
  write(work / "a.txt", "alpha changed\n");
  write(work / "b.txt", "beta staged\n");
  stage(repo.get(), "b.txt");
  write(work / "notes.txt", "n\n");
  auto msg = refusal();
  EXPECT_NE(msg.find("(modified: a.txt, staged: b.txt, untracked: notes.txt); commit them or rerun with --force"),
            std::string::npos)
      << msg;
}

TEST_F(StateTest, MoreThanTenPathsAreSummarised) {
  for (int i = 0; i < 13; ++i) write(work / ("new_" + std::string(1, char('a' + i)) + ".txt"), "x\n");
  auto msg = refusal();
  EXPECT_NE(msg.find("untracked: new_j.txt and 3 more)"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("new_k.txt"), std::string::npos) << msg;
  size_t listed = 0;
  for (size_t pos = 0; (pos = msg.find("untracked: ", pos)) != std::string::npos; ++pos) ++listed;
  EXPECT_EQ(listed, 10u);
}

TEST_F(StateTest, ExcludedRunOutputsAreNotDirt) {
  // A logs/ root inside the repository, not in .gitignore: the first run's
  // directory must not make the second run refuse to start.
  write(work / "logs" / "GN2_20261121-T101530" / "config.yaml", "a: 1\n");
  write(work / "logs" / "GN2_20261121-T101530" / "ckpts" / "e.ckpt", "weights");
  EXPECT_TRUE(inspect_repository(work)->is_dirty());
  EXPECT_FALSE(inspect_repository(work, {work / "logs"})->is_dirty()) << "absolute";
  EXPECT_FALSE(inspect_repository(work / "src", {"logs"})->is_dirty()) << "relative to the working tree";
  write(work / "logs_not_really.txt", "x\n");
  auto state = inspect_repository(work, {work / "logs"});
  ASSERT_EQ(state->dirty.size(), 1u);
  EXPECT_EQ(state->dirty[0].path, "logs_not_really.txt");
}

TEST(PathFilterTest, MatchesPathsAndWhatIsBelowThem) {
  namespace fs = std::filesystem;
  PathFilter f("/repo", {"/repo/logs", "out/", "/elsewhere/logs", "/repo", "a.txt"});
  EXPECT_TRUE(f.excluded("logs"));
  EXPECT_TRUE(f.excluded("logs/run/config.yaml"));
  EXPECT_TRUE(f.excluded("out/x"));
  EXPECT_TRUE(f.excluded("a.txt"));
  EXPECT_FALSE(f.excluded("logs2/x"));
  EXPECT_FALSE(f.excluded("a.txt2"));
  EXPECT_FALSE(f.excluded("src/main.cpp")) << "the whole tree and outside paths are never excluded";
}

TEST_F(StateTest, DirectoryOutsideAnyRepositoryGivesNothing) {
  fs::create_directories(tmp / "plain" / "sub");
  // The ceiling keeps discovery inside tmp even if $TMPDIR lies in some repository.
  auto found = Repository::discover(tmp / "plain" / "sub", {tmp.path()});
  EXPECT_FALSE(found.has_value());
  EXPECT_FALSE(inspect_repository(tmp / "plain", {}, {tmp.path()}).has_value());
}

TEST_F(StateTest, BareRepositoryIsNotAWorkingTree) {
  auto bare = init_bare(tmp / "bare.git");
  EXPECT_FALSE(Repository::discover(tmp / "bare.git", {tmp.path()}).has_value());
}

}  // namespace
}  // namespace salt::repro::testing
