// submit_htcondor: the .sh and .job it writes and its call of condor_submit.
// HTCondor is not packaged in Debian 12, so condor_submit here is a stand-in
// on PATH that records its arguments and answers like the real one.
#include "core/errors.h"
#include "submit/submit_htcondor.h"
#include "submit_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

submit::CondorOptions condor(std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"-c", SubmitTest::cfg("GN2.yaml"), "-c", SubmitTest::cfg("GN2_cpu.yaml"), "-t", "ctest"};
  args.insert(args.end(), extra.begin(), extra.end());
  return submit::parse_condor_options(args);
}

TEST_F(SubmitTest, CondorFilesCarryTheJobParameters) {
  auto s = submit::prepare_condor_job(
      condor({"--gpus", "2", "--cpus", "4", "--memory", "40 GB", "--runtime", "3600", "--jobflavour", "tomorrow",
              "--project", "af-atlas", "--requirements", "(OpSysAndVer =?= \"AlmaLinux9\")", "--condor.getenv=True",
              "--config.trainer.max_epochs=3", "-f"}),
      work());
  const auto& j = s.job_text;
  EXPECT_EQ(s.job_file, work() / "condor" / "batch" / "batch_ctest.job");
  EXPECT_EQ(s.script, work() / "condor" / "batch" / "batch_ctest.sh");
  EXPECT_TRUE(contains(j, "Universe = vanilla\n")) << j;
  EXPECT_TRUE(contains(j, "Executable = " + s.script.string() + "\n"));
  EXPECT_TRUE(contains(j, "request_GPUs = 2\n"));
  EXPECT_TRUE(contains(j, "request_CPUs = 4\n"));
  EXPECT_TRUE(contains(j, "request_memory = 40 GB\n"));
  EXPECT_TRUE(contains(j, "+MaxRuntime = 3600\n"));
  EXPECT_TRUE(contains(j, "+RequestRuntime = 3600\n"));
  EXPECT_TRUE(contains(j, "+JobFlavour = \"tomorrow\"\n"));
  EXPECT_TRUE(contains(j, "+MyProject = \"af-atlas\"\n"));
  EXPECT_TRUE(contains(j, "Requirements = (OpSysAndVer =?= \"AlmaLinux9\")\n"));
  EXPECT_TRUE(contains(j, "getenv = True\n"));
  EXPECT_TRUE(contains(j, "Output = " + (work() / "condor/batch_logs/stdout_ctest_$(ClusterId).txt").string()));
  EXPECT_TRUE(contains(j, "Error = " + (work() / "condor/batch_logs/stderr_ctest_$(ClusterId).txt").string()));
  EXPECT_TRUE(contains(j, "Log = " + (work() / "condor/batch_logs/batch_ctest_$(ClusterId).log").string()));
  EXPECT_TRUE(contains(j, "\nqueue\n"));
  const auto& sh = s.script_text;
  EXPECT_TRUE(contains(sh, "cd " + work().string() + " ||"));
  EXPECT_TRUE(contains(sh, "--trainer.devices=2")) << sh;
  EXPECT_TRUE(contains(sh, "--data.num_workers=4"));
  EXPECT_TRUE(contains(sh, "--trainer.max_epochs=3"));
  EXPECT_TRUE(contains(sh, "--force"));
}

TEST_F(SubmitTest, CondorEnvironmentsAndCpuJobs) {
  auto cpu = submit::prepare_condor_job(condor({"--cpu"}), work());
  EXPECT_FALSE(contains(cpu.job_text, "request_GPUs"));
  EXPECT_TRUE(contains(cpu.script_text, "--trainer.accelerator=cpu"));
  auto conda = submit::prepare_condor_job(condor({"-e", "conda"}), work());
  EXPECT_TRUE(contains(conda.script_text, "conda activate salt"));
  auto sing = submit::prepare_condor_job(condor({"-e", "singularity", "--image", "/i/salt.sif", "-b", "/eos"}), work());
  EXPECT_TRUE(contains(sing.job_text, "+MySingularityImage = \"/i/salt.sif\"\n"));
  EXPECT_TRUE(contains(sing.job_text, "+MySingularityArgs = \"--nv --bind /eos\"\n"));
  EXPECT_TRUE(contains(sing.script_text, "exec salt fit "));  // HTCondor starts the container
  EXPECT_THROW(submit::prepare_condor_job(condor({"--config.trainer.num_nodes=2"}), work()), UsageError);
  EXPECT_THROW(submit::prepare_condor_job(condor({"--gpus", "2", "--config.trainer.devices=1"}), work()), UsageError);
}

TEST_F(SubmitTest, CondorSubmitIsCalledOnTheJobFile) {
  stand_in("condor_submit", "Submitting job(s).\n1 job(s) submitted to cluster 9876.");
  std::ostringstream out;
  EXPECT_EQ(submit::submit_htcondor(condor(), out), 0);
  auto job = work() / "condor" / "batch" / "batch_ctest.job";
  ASSERT_TRUE(fs::exists(job));
  EXPECT_TRUE(fs::exists(work() / "condor" / "batch" / "batch_ctest.sh"));
  EXPECT_TRUE(fs::exists(work() / "condor" / "batch_logs"));
  EXPECT_EQ(read_file(work() / "bin" / "condor_submit.args"), job.string() + "\n");
  EXPECT_TRUE(contains(out.str(), "submitted cluster 9876")) << out.str();
  EXPECT_TRUE(contains(out.str(), "stdout_ctest_9876.txt")) << out.str();
  fs::remove(work() / "bin" / "condor_submit.args");
}

TEST_F(SubmitTest, CondorTypoWritesNothing) {
  stand_in("condor_submit", "1 job(s) submitted to cluster 1.");
  std::ostringstream out;
  EXPECT_THROW(submit::submit_htcondor(condor({"--config.model.lrs_config.maxx=1"}), out), UsageError);
  EXPECT_FALSE(fs::exists(work() / "condor"));
  EXPECT_FALSE(fs::exists(work() / "bin" / "condor_submit.args"));
}

}  // namespace
}  // namespace salt::testing
