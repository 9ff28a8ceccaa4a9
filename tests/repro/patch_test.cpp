// uncommitted.patch: applied to a clean checkout of HEAD it must give back the
// dirty tree exactly (content, new and deleted files, exec bits, binaries).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/errors.h"
#include "git_fixture.h"
#include "core/atomic_file.h"
#include "repro/patch.h"

namespace salt::repro::testing {
namespace {

template <size_t N>
std::string bytes(const char (&s)[N]) {
  return std::string(s, N - 1);  // keeps embedded NULs, drops the terminator
}

class PatchTest : public GitFixture {
 protected:
  void SetUp() override {
    GitFixture::SetUp();
    repo = init_repo(work);
    write(work / ".gitignore", "*.log\n");
    write(work / "modified.txt", "one\ntwo\nthree\n");
    write(work / "staged.yaml", "a: 1\n");
    write(work / "staged_then_edited.txt", "v1\n");
    write(work / "deleted.txt", "gone soon\n");
    write(work / "staged_deleted.txt", "gone too\n");
    write(work / "no_newline.txt", "last line");
    write(work / "script.sh", "#!/bin/sh\necho hi\n");
    write(work / "data.bin", bytes("\0\1\2\3binary\0\xff\xfe"));
    write(work / "sub" / "dir" / "kept.cpp", "int x = 1;\n");
    commit_all(repo.get(), "base");
  }

  // Every kind of change the patch must carry.
  void make_dirty() {
    write(work / "modified.txt", "one\n2\nthree\nfour\n");                       // unstaged edit
    write(work / "staged.yaml", "a: 2\nb: [1, 2]\n");                            // staged edit
    stage(repo.get(), "staged.yaml");
    write(work / "staged_then_edited.txt", "v2\n");                               // staged, then
    stage(repo.get(), "staged_then_edited.txt");
    write(work / "staged_then_edited.txt", "v3\n");                               // edited again
    fs::remove(work / "deleted.txt");                                             // unstaged deletion
    fs::remove(work / "staged_deleted.txt");                                      // staged deletion
    stage_removal(repo.get(), "staged_deleted.txt");
    write(work / "no_newline.txt", "last line, still no newline");
    fs::permissions(work / "script.sh", fs::perms::owner_exec, fs::perm_options::add);  // mode change
    write(work / "data.bin", bytes("\0\1\2\3BINARY!\0\xff\xfe\x80"));  // binary edit
    write(work / "new_staged.txt", "staged new file\n");                          // staged new file
    stage(repo.get(), "new_staged.txt");
    write(work / "notes" / "deep" / "untracked.md", "# notes\n");                 // untracked, new dirs
    write(work / "untracked.bin", bytes("\0\0\x01zz"));                  // untracked binary
    write(work / "empty_untracked", "");                                          // untracked, empty
    write(work / "ignored.log", "must not be in the patch\n");                    // ignored
  }

  // A fresh clone of `work` with HEAD checked out.
  RepositoryPtr clone_head(const fs::path& dest) {
    git_clone_options opts;
    git_clone_options_init(&opts, GIT_CLONE_OPTIONS_VERSION);
    git_repository* raw = nullptr;
    ok(git_clone(&raw, work.c_str(), dest.c_str(), &opts), "clone");
    RepositoryPtr clone(raw);
    EXPECT_EQ(head_id(clone.get()), head_id(repo.get()));
    return clone;
  }

  RepositoryPtr repo;
};

TEST_F(PatchTest, CleanTreeGivesEmptyPatchAndNoFile) {
  auto r = Repository::open(work);
  EXPECT_EQ(uncommitted_patch(r), "");
  fs::create_directories(tmp / "run");
  EXPECT_FALSE(save_uncommitted_patch(r, tmp / "run").has_value());
  EXPECT_FALSE(fs::exists(tmp / "run" / "uncommitted.patch"));
}

TEST_F(PatchTest, LibgitApplyOnCleanCheckoutReproducesDirtyTree) {
  make_dirty();
  auto r = Repository::open(work);
  fs::create_directories(tmp / "run");
  auto saved = save_uncommitted_patch(r, tmp / "run");
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->path, tmp / "run" / "uncommitted.patch");
  EXPECT_TRUE(saved->omitted.empty());
  std::string patch = salt::testing::read_file(saved->path);
  EXPECT_EQ(patch, uncommitted_patch(r));
  EXPECT_EQ(patch.find("ignored.log"), std::string::npos);
  EXPECT_NE(patch.find("GIT binary patch"), std::string::npos);
  // No temp file left next to it.
  size_t entries = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(tmp / "run")) ++entries;
  EXPECT_EQ(entries, 1u);

  auto clone = clone_head(tmp / "restored");
  git_diff* raw = nullptr;
  ok(git_diff_from_buffer(&raw, patch.data(), patch.size()), "parse patch");
  DiffPtr diff(raw);
  ok(git_apply(clone.get(), diff.get(), GIT_APPLY_LOCATION_WORKDIR, nullptr), "apply");

  auto expected = snapshot(work, repo.get());
  auto restored = snapshot(tmp / "restored");
  EXPECT_EQ(expected.count("ignored.log"), 0u);
  EXPECT_EQ(expected.count("deleted.txt"), 0u);
  EXPECT_EQ(restored.count("deleted.txt"), 0u);
  EXPECT_EQ(restored.count("staged_deleted.txt"), 0u);
  ASSERT_EQ(restored.size(), expected.size());
  for (const auto& [path, info] : expected) {
    ASSERT_TRUE(restored.count(path)) << path;
    EXPECT_TRUE(restored[path] == info) << path;
  }
  EXPECT_TRUE(restored["script.sh"].executable);
}

TEST_F(PatchTest, GitCliApplyAgreesAsCrossCheck) {
  auto which = salt::testing::run_process({"/bin/sh", "-c", "command -v git"});
  SALT_REQUIRE(which.exit_code == 0, "the git CLI, for the cross-check");
  make_dirty();
  write(work / "big.h5", std::string(5000, 'h'));  // left out: the header line must not bother git apply
  auto r = Repository::open(work);
  auto patch_path = tmp / "uncommitted.patch";
  PatchOptions opts;
  opts.max_file_bytes = 1000;
  write_file_atomic(patch_path, uncommitted_patch(r, opts));
  clone_head(tmp / "restored_cli");
  // HOME and the config variables point away from the user's configuration.
  auto res = salt::testing::run_process({"git", "apply", "--whitespace=nowarn", patch_path.string()},
                                        tmp / "restored_cli",
                                        {"HOME=" + tmp.path().string(), "GIT_CONFIG_NOSYSTEM=1",
                                         "XDG_CONFIG_HOME=" + tmp.path().string()});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  auto expected = snapshot(work, repo.get());
  expected.erase("big.h5");
  EXPECT_EQ(snapshot(tmp / "restored_cli"), expected);
}

TEST_F(PatchTest, ExcludedAndOversizedFilesAreLeftOutAndNamed) {
  make_dirty();
  write(work / "logs" / "run" / "ckpts" / "e.ckpt", std::string(3000, 'w'));
  write(work / "big.h5", std::string(5000, 'h'));
  auto r = Repository::open(work);
  PatchOptions opts;
  opts.exclude = {work / "logs"};
  opts.max_file_bytes = 1000;
  auto patch = make_uncommitted_patch(r, opts);
  EXPECT_EQ(patch.omitted, std::vector<std::string>{"big.h5"});
  EXPECT_EQ(patch.text.rfind("# salt-cpp: left out of this patch (larger than 1000 bytes): big.h5\n", 0), 0u)
      << patch.text.substr(0, 200);
  EXPECT_EQ(patch.text.find("e.ckpt"), std::string::npos);
  EXPECT_EQ(patch.text.find("diff --git a/big.h5"), std::string::npos);

  // The header line does not stop libgit2 from applying the rest.
  git_clone_options copts;
  git_clone_options_init(&copts, GIT_CLONE_OPTIONS_VERSION);
  git_repository* raw = nullptr;
  ok(git_clone(&raw, work.c_str(), (tmp / "restored").c_str(), &copts), "clone");
  RepositoryPtr clone(raw);
  git_diff* draw = nullptr;
  ok(git_diff_from_buffer(&draw, patch.text.data(), patch.text.size()), "parse patch");
  DiffPtr diff(draw);
  ok(git_apply(clone.get(), diff.get(), GIT_APPLY_LOCATION_WORKDIR, nullptr), "apply");
  auto expected = snapshot(work, repo.get());
  expected.erase("big.h5");
  expected.erase("logs/run/ckpts/e.ckpt");
  EXPECT_EQ(snapshot(tmp / "restored"), expected);
}

TEST_F(PatchTest, UnbornHeadPatchCreatesEveryFile) {
  auto fresh_repo = init_repo(tmp / "fresh");
  write(tmp / "fresh" / "first.txt", "hello\n");
  auto r = Repository::open(tmp / "fresh");
  auto patch = uncommitted_patch(r);
  EXPECT_NE(patch.find("new file mode 100644"), std::string::npos) << patch;
  EXPECT_NE(patch.find("+hello"), std::string::npos) << patch;
}

TEST_F(PatchTest, WriteFileAtomicReplacesWholeFile) {
  auto path = tmp / "f.txt";
  write_file_atomic(path, "first version, longer\n");
  write_file_atomic(path, "second\n");
  EXPECT_EQ(salt::testing::read_file(path), "second\n");
  EXPECT_THROW(write_file_atomic(tmp / "no" / "such" / "dir" / "f.txt", "x"), InputError);
}

}  // namespace
}  // namespace salt::repro::testing
