// salt fit --tag: annotated tag named after the run, pushed to a bare "origin".
#include <gtest/gtest.h>

#include "core/errors.h"
#include "git_fixture.h"
#include "repro/tag.h"

namespace salt::repro::testing {
namespace {

const std::string kRun = "GN2_20261121-T101530";

class TagTest : public GitFixture {
 protected:
  void SetUp() override {
    GitFixture::SetUp();
    repo = init_repo(work);
    write(work / "train.py", "print('hi')\n");
    commit = commit_all(repo.get(), "base");
    origin_path = tmp / "origin.git";
    origin = init_bare(origin_path);
  }
  // The message of the InputError `f` throws ("" if none).
  template <typename F>
  static std::string error_of(F&& f) {
    try {
      f();
    } catch (const InputError& e) {
      std::string msg = e.what();
      RecordProperty("message", msg);  // shown in --gtest_output=xml reports
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      return msg;
    }
    ADD_FAILURE() << "no InputError";
    return "";
  }
  static bool has_tag(git_repository* r, const std::string& name) {
    git_reference* raw = nullptr;
    int rc = git_reference_lookup(&raw, r, ("refs/tags/" + name).c_str());
    ReferencePtr ref(raw);
    git_error_clear();
    return rc == 0;
  }
  // The commit refs/tags/<name> peels to in `r`.
  static std::string peeled(git_repository* r, const std::string& name) {
    git_object* raw = nullptr;
    ok(git_revparse_single(&raw, r, ("refs/tags/" + name + "^{commit}").c_str()), "peel " + name);
    ObjectPtr obj(raw);
    char hex[GIT_OID_HEXSZ + 1];
    git_oid_tostr(hex, sizeof hex, git_object_id(obj.get()));
    return hex;
  }
  RepositoryPtr repo, origin;
  fs::path origin_path;
  std::string commit;
};

TEST_F(TagTest, NameIsTheRunDirectoryBasename) {
  EXPECT_EQ(tag_name_for_run("logs/" + kRun), kRun);
  EXPECT_EQ(tag_name_for_run("logs/" + kRun + "/"), kRun);
  EXPECT_EQ(tag_name_for_run("/abs/logs/" + kRun), kRun);
}

TEST_F(TagTest, CreatesAnnotatedTagAndPushesItToOrigin) {
  set_config(repo.get(), "user.name", "Ada Physicist");
  set_config(repo.get(), "user.email", "ada@cern.ch");
  add_remote(repo.get(), "origin", origin_path.string());
  auto r = Repository::open(work);
  auto result = tag_and_push(r, kRun);
  EXPECT_EQ(result.name, kRun);
  EXPECT_EQ(result.commit, commit);
  EXPECT_EQ(result.remote_url, origin_path.string());

  // Locally: refs/tags/<run> -> an annotated tag object -> HEAD.
  git_oid ref_target;
  ok(git_reference_name_to_id(&ref_target, repo.get(), ("refs/tags/" + kRun).c_str()), "tag ref");
  git_tag* tag_raw = nullptr;
  ASSERT_EQ(git_tag_lookup(&tag_raw, repo.get(), &ref_target), 0) << "not an annotated tag";
  TagPtr tag(tag_raw);
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, git_tag_target_id(tag.get()));
  EXPECT_EQ(std::string(hex), commit);
  EXPECT_EQ(git_tag_target_type(tag.get()), GIT_OBJECT_COMMIT);
  EXPECT_EQ(std::string(git_tag_name(tag.get())), kRun);
  EXPECT_EQ(std::string(git_tag_message(tag.get())), "salt-cpp training run " + kRun + "\n");
  EXPECT_EQ(std::string(git_tag_tagger(tag.get())->name), "Ada Physicist");
  EXPECT_EQ(std::string(git_tag_tagger(tag.get())->email), "ada@cern.ch");
  git_oid_tostr(hex, sizeof hex, &ref_target);
  EXPECT_EQ(std::string(hex), result.tag_object);

  // On the remote: the same tag object, peeling to the same commit.
  auto bare = Repository::open(origin_path);
  ASSERT_TRUE(has_tag(bare.get(), kRun));
  EXPECT_EQ(peeled(bare.get(), kRun), commit);
  git_oid remote_target;
  ok(git_reference_name_to_id(&remote_target, bare.get(), ("refs/tags/" + kRun).c_str()), "remote ref");
  EXPECT_TRUE(git_oid_equal(&remote_target, &ref_target));
}

TEST_F(TagTest, FileUrlRemoteAndOtherRemoteNameWork) {
  add_remote(repo.get(), "backup", "file://" + origin_path.string());
  auto r = Repository::open(work);
  TagOptions opts;
  opts.remote = "backup";
  tag_and_push(r, kRun, opts);
  EXPECT_EQ(peeled(origin.get(), kRun), commit);
}

TEST_F(TagTest, TaggerFallsBackWhenNoIdentityIsConfigured) {
  auto r = Repository::open(work);
  TagOptions opts;
  opts.push = false;
  auto result = tag_and_push(r, kRun, opts);
  EXPECT_EQ(result.remote_url, "");
  git_oid id;
  ok(git_oid_fromstr(&id, result.tag_object.c_str()), "oid");
  git_tag* raw = nullptr;
  ok(git_tag_lookup(&raw, repo.get(), &id), "lookup tag");
  TagPtr tag(raw);
  EXPECT_EQ(std::string(git_tag_tagger(tag.get())->name), "salt-cpp");
  EXPECT_EQ(std::string(git_tag_tagger(tag.get())->email), "salt-cpp@localhost");
}

TEST_F(TagTest, NoSuchRemoteListsTheRemotes) {
  add_remote(repo.get(), "upstream", origin_path.string());
  add_remote(repo.get(), "fork", origin_path.string());
  auto r = Repository::open(work);
  auto msg = error_of([&] { tag_and_push(r, kRun); });
  EXPECT_NE(msg.find("no git remote 'origin'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("remotes: fork, upstream"), std::string::npos) << msg;
  EXPECT_FALSE(has_tag(repo.get(), kRun)) << "checked before creating the tag";
}

TEST_F(TagTest, NoRemotesAtAll) {
  auto r = Repository::open(work);
  auto msg = error_of([&] { tag_and_push(r, kRun); });
  EXPECT_NE(msg.find("no git remote 'origin'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("has no remotes"), std::string::npos) << msg;
}

TEST_F(TagTest, MissingRemotePathIsUnreachable) {
  add_remote(repo.get(), "origin", (tmp / "nowhere.git").string());
  auto r = Repository::open(work);
  auto msg = error_of([&] { tag_and_push(r, kRun); });
  EXPECT_NE(msg.find("cannot reach remote 'origin'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
  EXPECT_FALSE(has_tag(repo.get(), kRun));
}

TEST_F(TagTest, UnreachableNetworkRemote) {
  // Port 1 on localhost: connection refused at once, no real network needed.
  add_remote(repo.get(), "origin", "http://127.0.0.1:1/salt.git");
  auto r = Repository::open(work);
  auto msg = error_of([&] { tag_and_push(r, kRun); });
  EXPECT_NE(msg.find("cannot reach remote 'origin' (http://127.0.0.1:1/salt.git)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the local tag '" + kRun + "' was removed again"), std::string::npos) << msg;
  EXPECT_FALSE(has_tag(repo.get(), kRun));
}

TEST_F(TagTest, ExistingRemoteTagWithOtherTargetIsRejected) {
  add_remote(repo.get(), "origin", origin_path.string());
  auto r = Repository::open(work);
  tag_and_push(r, kRun);
  // Same name again, for a newer commit, after deleting the local tag.
  ok(git_tag_delete(repo.get(), kRun.c_str()), "delete tag");
  write(work / "train.py", "print('changed')\n");
  auto second = commit_all(repo.get(), "second");
  auto msg = error_of([&] { tag_and_push(r, kRun); });
  EXPECT_NE(msg.find("remote 'origin' (" + origin_path.string() + ") rejected tag '" + kRun + "'"),
            std::string::npos)
      << msg;
  EXPECT_FALSE(has_tag(repo.get(), kRun)) << "the failed tag is removed locally";
  EXPECT_EQ(peeled(origin.get(), kRun), commit) << "the remote's tag is untouched";
  EXPECT_NE(second, commit);
}

TEST_F(TagTest, TagPushedBySomeoneElseIsRejected) {
  // A colleague's clone pushes a tag of the same name first; its tag object is
  // unknown to our repository.
  add_remote(repo.get(), "origin", origin_path.string());
  auto colleague_dir = tmp / "colleague";
  auto colleague = init_repo(colleague_dir);
  write(colleague_dir / "other.txt", "theirs\n");
  auto theirs = commit_all(colleague.get(), "theirs");
  add_remote(colleague.get(), "origin", origin_path.string());
  auto c = Repository::open(colleague_dir);
  tag_and_push(c, kRun);

  auto r = Repository::open(work);
  auto msg = error_of([&] { tag_and_push(r, kRun); });
  EXPECT_NE(msg.find("rejected tag '" + kRun + "': it already has a tag of that name"), std::string::npos) << msg;
  EXPECT_FALSE(has_tag(repo.get(), kRun));
  EXPECT_EQ(peeled(origin.get(), kRun), theirs);
}

TEST_F(TagTest, TagThatExistsLocallyIsRefused) {
  auto r = Repository::open(work);
  TagOptions local;
  local.push = false;
  tag_and_push(r, kRun, local);
  auto msg = error_of([&] { tag_and_push(r, kRun, local); });
  EXPECT_NE(msg.find("tag '" + kRun + "' already exists in"), std::string::npos) << msg;
}

TEST_F(TagTest, InvalidNameAndNoCommitAreRefused) {
  auto r = Repository::open(work);
  TagOptions local;
  local.push = false;
  EXPECT_NE(error_of([&] { tag_and_push(r, "bad name..lock", local); }).find("not a valid git tag name"),
            std::string::npos);
  auto fresh = init_repo(tmp / "fresh");
  auto f = Repository::open(tmp / "fresh");
  EXPECT_NE(error_of([&] { tag_and_push(f, kRun, local); }).find("has no commit yet"), std::string::npos);
}

}  // namespace
}  // namespace salt::repro::testing
