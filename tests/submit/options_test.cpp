// submit_slurm's command line: salt's options (multi-letter short ones too),
// the passthroughs, and the #SBATCH lines they become.
#include "core/errors.h"
#include "submit/arg_prepass.h"
#include "submit/submit_slurm.h"
#include "submit_support.h"

namespace salt::testing {
namespace {

using submit::Directive;

std::string directive(const std::vector<Directive>& ds, const std::string& key) {
  for (const auto& d : ds)
    if (d.first == key) return d.second.value_or("<flag>");
  return "<absent>";
}

TEST(SubmitArgs, SplitsPassthroughsAndExpandsMultiLetterShortOptions) {
  auto s = submit::split_args({"-cn", "a100", "-cpt=4", "--slurm.mail-user=me@x", "--config.trainer.max_epochs=3",
                               "--slurm.exclusive", "--config.force", "-c", "x.yaml"},
                              {{"-cn", "--constraint"}, {"-cpt", "--cpus_per_task"}}, "slurm");
  EXPECT_EQ(s.args, (std::vector<std::string>{"--constraint", "a100", "--cpus_per_task=4", "-c", "x.yaml"}));
  ASSERT_EQ(s.batch.size(), 2u);
  EXPECT_EQ(s.batch[0].key, "mail-user");
  EXPECT_EQ(*s.batch[0].value, "me@x");
  EXPECT_FALSE(s.batch[1].value);
  ASSERT_EQ(s.config.size(), 2u);
  EXPECT_EQ(submit::salt_flag(s.config[0]), "--trainer.max_epochs=3");
  EXPECT_EQ(submit::salt_flag(s.config[1]), "--force");
  EXPECT_THROW(submit::split_args({"--slurm.=3"}, {}, "slurm"), UsageError);
}

TEST_F(SubmitTest, EverySaltOptionParses) {
  auto o = slurm({"-p", "gpu", "-cn", "a100", "-a", "atlas", "-q", "high", "-e", "local", "-n", "1", "-g", "2", "-gt",
                  "v100", "-cpt", "4", "-m", "40G", "-ex", "-ti", "24:00:00", "-f", "-r", "-s", "SIGUSR1@120", "-sls",
                  "mine"});
  EXPECT_EQ(o.configs.size(), 2u);
  EXPECT_EQ(o.tag, "test");
  EXPECT_EQ(o.partition, "gpu");
  EXPECT_EQ(o.constraint, "a100");
  EXPECT_EQ(o.account, "atlas");
  EXPECT_EQ(o.qos, "high");
  EXPECT_EQ(*o.request.nodes, 1);
  EXPECT_EQ(*o.request.gpus_per_node, 2);
  EXPECT_EQ(*o.request.cpus_per_task, 4);
  EXPECT_EQ(o.gpu_type, "v100");
  EXPECT_EQ(o.memory, "40G");
  EXPECT_TRUE(o.exclusive && o.force && o.requeue);
  EXPECT_EQ(o.time, "24:00:00");
  EXPECT_EQ(o.signal, "SIGUSR1@120");
  EXPECT_EQ(o.salt_log_suffix, "mine");

  auto d = slurm();
  EXPECT_FALSE(d.request.nodes || d.request.gpus_per_node || d.request.cpus_per_task);  // from the config
  EXPECT_EQ(d.env.kind, "local");
  EXPECT_EQ(d.signal, "SIGUSR1@90");
  EXPECT_EQ(d.memory, "100G");
  EXPECT_FALSE(d.env.salt_binary.empty());
}

TEST_F(SubmitTest, BadOptionsAreOneLineUsageErrors) {
  EXPECT_THROW(slurm({"--gpus", "2"}), UsageError);
  EXPECT_THROW(slurm({"-e", "docker"}), UsageError);
  EXPECT_THROW(submit::parse_slurm_options({"-t", "x"}), UsageError);  // --config is required
  EXPECT_TRUE(submit::parse_slurm_options({"--help"}).help);
  EXPECT_TRUE(contains(submit::slurm_help(), "--gpus_per_node"));
  try {
    slurm({"--nodez", "2"});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

TEST_F(SubmitTest, OptionsBecomeSbatchLines) {
  auto o = slurm({"-p", "gpu", "-cn", "a100", "-a", "atlas", "-q", "high", "-g", "2", "-gt", "v100", "-cpt", "4",
                  "-m", "40G", "-ex", "-ti", "1:00:00", "-r", "-s", "SIGUSR2@30", "--slurm.mail-type=END",
                  "--slurm.time=2:00:00", "--slurm.hint"});
  submit::Resources r;
  r.nodes = 3;
  r.gpus_per_node = 2;
  r.cpus_per_task = 4;
  auto d = submit::slurm_directives(o, r, "/w/slurm/batch_logs", 0);
  EXPECT_EQ(d.front().first, "job-name");
  EXPECT_EQ(directive(d, "job-name"), "test");
  EXPECT_EQ(directive(d, "partition"), "gpu");
  EXPECT_EQ(directive(d, "constraint"), "a100");
  EXPECT_EQ(directive(d, "account"), "atlas");
  EXPECT_EQ(directive(d, "qos"), "high");
  EXPECT_EQ(directive(d, "nodes"), "3");
  EXPECT_EQ(directive(d, "gres"), "gpu:v100:2");
  EXPECT_EQ(directive(d, "ntasks-per-node"), "2");
  EXPECT_EQ(directive(d, "cpus-per-task"), "4");
  EXPECT_EQ(directive(d, "mem"), "40G");
  EXPECT_EQ(directive(d, "exclusive"), "<flag>");
  EXPECT_EQ(directive(d, "export"), "ALL");
  EXPECT_EQ(directive(d, "output"), "/w/slurm/batch_logs/slurm-%j.out");
  EXPECT_EQ(directive(d, "error"), "/w/slurm/batch_logs/slurm-%j.err");
  EXPECT_EQ(directive(d, "time"), "2:00:00");  // the passthrough replaces -ti in place
  EXPECT_EQ(directive(d, "requeue"), "<flag>");
  EXPECT_EQ(directive(d, "signal"), "B:USR2@30");
  EXPECT_EQ(directive(d, "open-mode"), "append");
  EXPECT_EQ(directive(d, "mail-type"), "END");
  EXPECT_EQ(directive(d, "hint"), "<flag>");
  EXPECT_EQ(directive(d, "array"), "<absent>");

  // Without the options: no optional lines; a CPU job has no gres; arrays log per task.
  r.gpus_per_node = 0;
  auto plain = submit::slurm_directives(slurm({"-m", "none"}), r, "/w/l", 4);
  for (const auto* key : {"partition", "constraint", "account", "qos", "gres", "mem", "exclusive", "time", "requeue",
                          "signal", "open-mode"})
    EXPECT_EQ(directive(plain, key), "<absent>") << key;
  EXPECT_EQ(directive(plain, "ntasks-per-node"), "1");
  EXPECT_EQ(directive(plain, "array"), "0-3");
  EXPECT_EQ(directive(plain, "output"), "/w/l/slurm-%A_%a.out");
}

TEST(SubmitSignal, ParsesSaltsSpelling) {
  EXPECT_EQ(submit::parse_signal("SIGUSR1@90").name, "USR1");
  EXPECT_EQ(submit::parse_signal("SIGUSR1@90").seconds, 90);
  EXPECT_EQ(submit::parse_signal("USR2@30").name, "USR2");
  EXPECT_EQ(submit::parse_signal("B:USR1@5").seconds, 5);
  EXPECT_THROW(submit::parse_signal("SIGUSR1"), UsageError);
  EXPECT_THROW(submit::parse_signal("USR1@soon"), UsageError);
}

TEST(SubmitSbatch, JobIdFromItsOutput) {
  EXPECT_EQ(*submit::parse_sbatch_job_id("Submitted batch job 4711\n"), "4711");
  EXPECT_FALSE(submit::parse_sbatch_job_id("sbatch: error: invalid partition"));
}

}  // namespace
}  // namespace salt::testing
