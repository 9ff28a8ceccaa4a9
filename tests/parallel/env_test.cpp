// Reading the launcher's variables: torchrun-style, Slurm (with its compressed node
// lists), the errors for malformed or inconsistent settings, and the timeout knob.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "core/errors.h"
#include "parallel/backends.h"
#include "parallel/grad_sync.h"
#include "parallel/launch_env.h"
#include "parallel/process_group.h"
#include "parallel/slurm_nodelist.h"

namespace salt::parallel {
namespace {

EnvLookup fake(std::map<std::string, std::string> vars) {
  const auto held = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [held](const char* name) -> const char* {
    auto it = held->find(name);
    return it == held->end() ? nullptr : it->second.c_str();
  };
}

std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

TEST(Nodelist, ExpandsRangesListsAndPadding) {
  EXPECT_EQ(expand_nodelist("node[01-04,07],gpu3"),
            (std::vector<std::string>{"node01", "node02", "node03", "node04", "node07", "gpu3"}));
  EXPECT_EQ(expand_nodelist("n[8-10]"), (std::vector<std::string>{"n8", "n9", "n10"}));
  EXPECT_EQ(expand_nodelist("n[08-10]"), (std::vector<std::string>{"n08", "n09", "n10"}));
  EXPECT_EQ(expand_nodelist("r[1-2]-n[1-2]"), (std::vector<std::string>{"r1-n1", "r1-n2", "r2-n1", "r2-n2"}));
  EXPECT_EQ(expand_nodelist("login1"), (std::vector<std::string>{"login1"}));
  EXPECT_EQ(expand_nodelist("a[1],b[2-3]"), (std::vector<std::string>{"a1", "b2", "b3"}));
}

TEST(Nodelist, FirstHost) {
  EXPECT_EQ(first_host("node[01-04,07],gpu3"), "node01");
  EXPECT_EQ(first_host("gpu3,node[01-04]"), "gpu3");
  EXPECT_EQ(first_host("cn-[100-200]"), "cn-100");
}

TEST(Nodelist, MalformedListsAreInputErrorsNamingTheList) {
  for (const std::string bad : {"node[01-04", "node01-04]", "node[04-01]", "node[a-b]", "node[]", "", "a,,b"}) {
    try {
      expand_nodelist(bad, "SLURM_JOB_NODELIST");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("SLURM_JOB_NODELIST"), std::string::npos) << e.what();
    }
  }
}

TEST(DistEnv, NothingSetIsASingleProcess) {
  auto env = read_dist_env(fake({}));
  EXPECT_EQ(env.launcher, Launcher::kNone);
  EXPECT_EQ(env.world_size, 1);
  EXPECT_FALSE(env.distributed());
  EXPECT_NO_THROW(check_world_size(env, 1, 1));
}

TEST(DistEnv, TorchrunStyle) {
  auto env = read_dist_env(fake({{"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "4"},
                                 {"MASTER_ADDR", "node01"}, {"MASTER_PORT", "29400"}}));
  EXPECT_EQ(env.launcher, Launcher::kTorchrun);
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_world_size, 4);
  EXPECT_EQ(env.num_nodes, 2);
  EXPECT_EQ(env.master_addr, "node01");
  EXPECT_EQ(env.master_port, 29400);
  EXPECT_NO_THROW(check_world_size(env, 4, 2));
  EXPECT_NE(env.describe().find("rank 5 of 8"), std::string::npos);
}

TEST(DistEnv, TorchrunByHandDefaultsTheLocalRank) {
  auto env = read_dist_env(
      fake({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}}));
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 2);
}

TEST(DistEnv, TorchrunStyleWinsOverSlurm) {
  // salt's own workers inside a Slurm allocation carry both.
  auto env = read_dist_env(fake({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1234"},
                                 {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}, {"SLURM_JOB_NODELIST", "n[1-2]"}}));
  EXPECT_EQ(env.launcher, Launcher::kTorchrun);
  EXPECT_EQ(env.rank, 1);
}

TEST(DistEnv, TorchrunErrorsNameTheVariable) {
  EXPECT_NE(usage_error([] { read_dist_env(fake({{"RANK", "0"}})); }).find("WORLD_SIZE is not set"), std::string::npos);
  EXPECT_NE(usage_error([] { read_dist_env(fake({{"RANK", "x"}, {"WORLD_SIZE", "2"}})); }).find("RANK='x'"),
            std::string::npos);
  EXPECT_NE(usage_error([] {
              read_dist_env(fake({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}));
            }).find("RANK=2 is not below WORLD_SIZE=2"),
            std::string::npos);
  EXPECT_NE(usage_error([] { read_dist_env(fake({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}})); })
                .find("MASTER_ADDR is not set"),
            std::string::npos);
  EXPECT_NE(usage_error([] { read_dist_env(fake({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}})); })
                .find("MASTER_PORT is not set"),
            std::string::npos);
  EXPECT_NE(usage_error([] {
              read_dist_env(fake({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"},
                                  {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}));
            }).find("LOCAL_RANK=2"),
            std::string::npos);
}

TEST(DistEnv, SlurmSrunStep) {
  auto env = read_dist_env(fake({{"SLURM_PROCID", "6"}, {"SLURM_LOCALID", "2"}, {"SLURM_NTASKS", "8"},
                                 {"SLURM_NTASKS_PER_NODE", "4(x2)"}, {"SLURM_NNODES", "2"},
                                 {"SLURM_JOB_NODELIST", "gpu[07-08]"}, {"SLURM_JOB_ID", "4567891"}}));
  EXPECT_EQ(env.launcher, Launcher::kSlurm);
  EXPECT_EQ(env.rank, 6);
  EXPECT_EQ(env.local_rank, 2);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_world_size, 4);
  EXPECT_EQ(env.num_nodes, 2);
  EXPECT_EQ(env.master_addr, "gpu07");
  EXPECT_EQ(env.master_port, 15000 + 7891);  // Lightning's default from the job id
  EXPECT_NO_THROW(check_world_size(env, 4, 2));
}

TEST(DistEnv, SlurmStepVariablesAndExplicitMaster) {
  auto env = read_dist_env(fake({{"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "1"}, {"SLURM_NTASKS", "16"},
                                 {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_STEP_NUM_NODES", "1"},
                                 {"SLURM_STEP_NODELIST", "node[3,5]"}, {"SLURM_JOB_NODELIST", "node[1-9]"},
                                 {"MASTER_PORT", "40000"}}));
  EXPECT_EQ(env.world_size, 2);
  EXPECT_EQ(env.local_world_size, 2);
  EXPECT_EQ(env.master_addr, "node3");
  EXPECT_EQ(env.master_port, 40000);
  auto with_addr = read_dist_env(fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"MASTER_ADDR", "10.0.0.1"},
                                       {"MASTER_PORT", "1"}}));
  EXPECT_EQ(with_addr.master_addr, "10.0.0.1");
}

TEST(DistEnv, SlurmWithOneTaskIsNotALaunch) {
  // An salloc shell or a batch script without srun: `salt fit` launches its own workers.
  auto env = read_dist_env(fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_JOB_ID", "12"}}));
  EXPECT_EQ(env.launcher, Launcher::kNone);
}

TEST(DistEnv, SlurmErrors) {
  EXPECT_NE(usage_error([] {
              read_dist_env(fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n1"}}));
            }).find("neither MASTER_PORT nor SLURM_JOB_ID"),
            std::string::npos);
  EXPECT_NE(usage_error([] { read_dist_env(fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "1"}})); })
                .find("SLURM_JOB_NODELIST"),
            std::string::npos);
  EXPECT_NE(usage_error([] {
              read_dist_env(fake({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}, {"SLURM_JOB_NODELIST", "n1"},
                                  {"SLURM_JOB_ID", "1"}}));
            }).find("SLURM_PROCID=4 is not below SLURM_NTASKS=4"),
            std::string::npos);
  EXPECT_THROW(read_dist_env(fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n[1-"},
                                   {"SLURM_JOB_ID", "1"}})),
               InputError);
}

TEST(DistEnv, WorldSizeMustMatchTheConfig) {
  auto env = read_dist_env(fake({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}));
  auto msg = usage_error([&] { check_world_size(env, 2, 1); });
  EXPECT_NE(msg.find("started 4 process(es) but trainer.devices=2 x trainer.num_nodes=1 = 2"), std::string::npos) << msg;
  EXPECT_NO_THROW(check_world_size(env, 2, 2));
  EXPECT_NO_THROW(check_world_size(env, 4, 1));

  auto slurm = read_dist_env(fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}, {"SLURM_NTASKS_PER_NODE", "2"},
                                   {"SLURM_NNODES", "4"}, {"SLURM_JOB_NODELIST", "n[1-4]"}, {"SLURM_JOB_ID", "9"}}));
  msg = usage_error([&] { check_world_size(slurm, 4, 2); });  // 8 = 4 x 2, but 2 tasks per node
  EXPECT_NE(msg.find("2 task(s) per node but trainer.devices=4"), std::string::npos) << msg;
  EXPECT_NO_THROW(check_world_size(slurm, 2, 4));

  // A torchrun-style WORLD_SIZE=1 is deliberate: devices=2 then is a mismatch.
  auto one = read_dist_env(fake({{"RANK", "0"}, {"WORLD_SIZE", "1"}}));
  EXPECT_THROW(check_world_size(one, 2, 1), UsageError);
}

TEST(DistEnv, Timeout) {
  EXPECT_EQ(dist_timeout(fake({})), std::chrono::seconds(60));
  EXPECT_EQ(dist_timeout(fake({{"SALT_DIST_TIMEOUT", "2.5"}})), std::chrono::milliseconds(2500));
  EXPECT_THROW(dist_timeout(fake({{"SALT_DIST_TIMEOUT", "0"}})), UsageError);
  EXPECT_THROW(dist_timeout(fake({{"SALT_DIST_TIMEOUT", "soon"}})), UsageError);
  const auto e = usage_error([] { dist_timeout(fake({{"SALT_DIST_TIMEOUT", "1e9"}})); });
  EXPECT_EQ(e, "SALT_DIST_TIMEOUT=1e9: expected a number of seconds from 0.001 to 10000000");
}

TEST(GroupOptions, BackendFromTheEnvironment) {
  EXPECT_EQ(GroupOptions::from_environment(fake({})).backend, "");
  EXPECT_EQ(GroupOptions::from_environment(fake({{"SALT_DIST_BACKEND", "gloo"}})).backend, "gloo");
  EXPECT_EQ(GroupOptions::from_environment(fake({{"SALT_DIST_BACKEND", "nccl"}})).backend, "nccl");
  const auto e = usage_error([] { GroupOptions::from_environment(fake({{"SALT_DIST_BACKEND", "mpi"}})); });
  EXPECT_NE(e.find("SALT_DIST_BACKEND=mpi"), std::string::npos) << e;
  EXPECT_NE(e.find("gloo"), std::string::npos) << e;
}

// The gradient sync's switches follow every SALT_* switch's rule: 0 or 1, a number in
// its range (before: any value but 0 or false meant on, and 1e300 "must be positive").
TEST(GradSyncOptions, SwitchesTakeTheirValuesAndRefuseTheRest) {
  EXPECT_TRUE(GradSyncOptions::from_environment(fake({})).overlap);
  EXPECT_FALSE(GradSyncOptions::from_environment(fake({{"SALT_DIST_OVERLAP", "0"}})).overlap);
  EXPECT_TRUE(GradSyncOptions::from_environment(fake({{"SALT_DIST_OVERLAP", "1"}})).overlap);
  const auto off = usage_error([] { GradSyncOptions::from_environment(fake({{"SALT_DIST_OVERLAP", "off"}})); });
  EXPECT_NE(off.find("SALT_DIST_OVERLAP=off: expected 0 (all-reduce after backward) or 1"), std::string::npos) << off;
  EXPECT_EQ(GradSyncOptions::from_environment(fake({{"SALT_DIST_BUCKET_MB", "0.5"}})).bucket_bytes, 1 << 19);
  for (const char* bad : {"1e300", "0", "-1", "12abc", "nan", "inf"}) {
    const auto e = usage_error([&] { GradSyncOptions::from_environment(fake({{"SALT_DIST_BUCKET_MB", bad}})); });
    EXPECT_NE(e.find(std::string("SALT_DIST_BUCKET_MB=") + bad + ": expected a bucket size in MiB"), std::string::npos) << e;
  }
}

// A build without Gloo (pip's LibTorch ships no gloo/ headers) refuses what needs Gloo
// in one line that says why (the headers were missing at build time) and how to build
// with them. The suite's builds all have Gloo, so the line itself is what is checked here.
TEST(GroupOptions, NoGlooMessageSaysHowToBuildWithGloo) {
  const auto m = no_gloo_message("SALT_DIST_BACKEND=gloo");
  EXPECT_EQ(m.rfind("SALT_DIST_BACKEND=gloo needs Gloo", 0), 0u) << m;
  EXPECT_NE(m.find("headers (gloo/algorithm.h) were missing when it was compiled"), std::string::npos) << m;
  EXPECT_NE(m.find("-DSALT_GLOO_INCLUDE_DIR="), std::string::npos) << m;
  EXPECT_NE(m.find("scripts/gloo_headers.sh"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_TRUE(built_backends().gloo) << "Debian's LibTorch brings Gloo's headers";
}

}  // namespace
}  // namespace salt::parallel
