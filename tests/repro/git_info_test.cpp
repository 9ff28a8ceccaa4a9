// The git keys of metadata.yaml.
#include <gtest/gtest.h>

#include "git_fixture.h"
#include "repro/git_info.h"

namespace salt::repro::testing {
namespace {

class GitInfoTest : public GitFixture {};

TEST_F(GitInfoTest, NoRepositoryGivesNulls) {
  fs::create_directories(tmp / "plain");
  auto info = git_info(inspect_repository(tmp / "plain", {}, {tmp.path()}));
  EXPECT_FALSE(info.repo_path || info.commit || info.branch);
  auto node = git_info_yaml(info);
  EXPECT_TRUE(node["git_commit"].IsNull());
  EXPECT_TRUE(node["git_repo"].IsNull());
  EXPECT_TRUE(node["git_branch"].IsNull());
  EXPECT_TRUE(node["git_dirty"].IsNull());
  YAML::Emitter out;
  out << node;
  EXPECT_NE(std::string(out.c_str()).find("git_commit: ~"), std::string::npos) << out.c_str();
}

TEST_F(GitInfoTest, RepositoryValuesAreRecorded) {
  auto repo = init_repo(work);
  write(work / "a.txt", "a\n");
  auto id = commit_all(repo.get(), "c");
  write(work / "a.txt", "b\n");
  auto info = git_info(inspect_repository(work));
  YAML::Node meta;
  meta["salt_hash"] = id;
  add_git_info(meta, info);
  EXPECT_EQ(meta["git_commit"].as<std::string>(), id);
  EXPECT_EQ(meta["git_branch"].as<std::string>(), "main");
  EXPECT_EQ(fs::canonical(meta["git_repo"].as<std::string>()), fs::canonical(work));
  EXPECT_TRUE(meta["git_dirty"].as<bool>());
  EXPECT_EQ(meta["salt_hash"].as<std::string>(), id);
  // Round trip through text, as metadata.yaml will be read back.
  YAML::Emitter out;
  out << meta;
  auto back = YAML::Load(out.c_str());
  EXPECT_EQ(back["git_commit"].as<std::string>(), id);
  EXPECT_TRUE(back["git_dirty"].as<bool>());
}

}  // namespace
}  // namespace salt::repro::testing
