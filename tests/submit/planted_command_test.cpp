// Nothing a user passes to the submit helpers runs as a command when the job
// starts: every option that takes text gets values that would run `touch planted`
// in any shell context (unquoted, in single quotes, in double quotes), and the job
// script each run writes is executed for real (stand-ins for srun, salt, conda and
// singularity). A value the helper refuses is safe too; `planted` must never appear.
#include <sys/stat.h>

#include "core/errors.h"
#include "submit/submit_htcondor.h"
#include "submit/submit_slurm.h"
#include "submit_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kPayloads = {
    "$(touch planted)",
    "x`touch planted`",
    "x;touch planted;'; touch planted; '\"; touch planted; \"",
};

// Options that take text, "@" standing for the payload. The ones that pick an
// environment come with what that environment needs.
const std::vector<std::vector<std::string>> kCommon = {
    {"-t", "@"},
    {"--salt_log_suffix", "@"},
    {"--config.name=@"},
    {"--config.tag=@"},
    {"-e", "conda", "--conda_activate", "@"},
    {"-e", "conda", "--conda_activate", "ACTIVATE", "--conda_env", "@"},
    {"-e", "singularity", "--image", "@"},
    {"-e", "singularity", "--image", "i.sif", "-b", "@"},
    {"--salt_binary", "@"},
};
const std::vector<std::vector<std::string>> kSlurmOnly = {
    {"-p", "@"}, {"--constraint", "@"}, {"-a", "@"},      {"-q", "@"},          {"--gpu_type", "@"},
    {"-m", "@"}, {"--time", "@"},       {"-r", "-s", "@"}, {"--slurm.mail-user=@"},
};
const std::vector<std::vector<std::string>> kCondorOnly = {
    {"--jobflavour", "@"}, {"--project", "@"}, {"--requirements", "@"}, {"--memory", "@"}, {"--condor.getenv=@"},
};

class PlantedCommand : public SubmitTest {
 protected:
  void SetUp() override {
    bin_ = work() / "planted_bin";
    fs::create_directories(bin_);
    auto exe = [&](const std::string& name, const std::string& body) {
      write_file(bin_ / name, "#!/bin/bash\n" + body);
      chmod((bin_ / name).c_str(), 0755);
    };
    exe("srun", "while [[ $1 == -* ]]; do shift; done\nexec \"$@\"\n");
    exe("salt", "exit 0\n");
    exe("singularity", "exit 0\n");
    write_file(bin_ / "activate", "conda() { :; }\n");
  }

  // The arguments of one case: the payload in place of "@", the stand-ins named.
  std::vector<std::string> args_of(const std::vector<std::string>& c, const std::string& payload) const {
    std::vector<std::string> out;
    bool binary = false;
    for (auto a : c) {
      if (a == "--salt_binary") binary = true;
      if (a == "ACTIVATE") a = (bin_ / "activate").string();
      if (auto at = a.find('@'); at != std::string::npos) a.replace(at, 1, payload);
      out.push_back(a);
    }
    if (!binary) out.insert(out.end(), {"--salt_binary", (bin_ / "salt").string()});
    return out;
  }

  // Runs the job script as the batch system would (cwd: the work dir).
  void run_script(const std::string& text, const std::string& what) {
    write_file(bin_ / "job.sh", text);
    BackgroundProcess job({"bash", (bin_ / "job.sh").string()}, work(),
                          {"PATH=" + bin_.string() + ":" + std::getenv("PATH")});
    job.wait();
    ++scripts_run_;
    EXPECT_FALSE(fs::exists(work() / "planted")) << what << "\n" << text;
    std::error_code ec;
    fs::remove(work() / "planted", ec);
  }

  template <class Prepare>
  void plant_everywhere(const std::vector<std::vector<std::string>>& cases, Prepare prepare) {
    for (const auto& c : cases)
      for (const auto& payload : kPayloads) {
        const auto args = args_of(c, payload);
        std::string what;
        for (const auto& a : args) what += a + " ";
        try {
          run_script(prepare(args), what);
        } catch (const std::exception&) {  // UsageError, or CLI11's own refusal of the value
          ++refused_;  // refused with a message: nothing written, nothing run
        }
        EXPECT_FALSE(fs::exists(work() / "planted")) << what;  // not while preparing either
      }
  }

  // A helper's arguments: the demo GN2 config (a job with a tag), then `args`.
  static std::vector<std::string> with_configs(const std::vector<std::string>& args) {
    std::vector<std::string> all{"-c", cfg("GN2.yaml"), "-c", cfg("GN2_cpu.yaml"), "-t", "planted_test"};
    all.insert(all.end(), args.begin(), args.end());
    return all;
  }

  fs::path bin_;
  int scripts_run_ = 0, refused_ = 0;
};

TEST_F(PlantedCommand, NoSlurmOptionRunsACommand) {
  auto cases = kCommon;
  cases.insert(cases.end(), kSlurmOnly.begin(), kSlurmOnly.end());
  plant_everywhere(cases, [&](const std::vector<std::string>& args) {
    return submit::prepare_slurm_job(submit::parse_slurm_options(with_configs(args)), work()).script_text;
  });
  // Most values must reach a script, or the test would prove nothing.
  EXPECT_GE(scripts_run_, 20) << refused_ << " refused";
}

TEST_F(PlantedCommand, NoCondorOptionRunsACommand) {
  auto cases = kCommon;
  cases.insert(cases.end(), kCondorOnly.begin(), kCondorOnly.end());
  plant_everywhere(cases, [&](const std::vector<std::string>& args) {
    return submit::prepare_condor_job(submit::parse_condor_options(with_configs(args)), work()).script_text;
  });
  EXPECT_GE(scripts_run_, 15) << refused_ << " refused";
}

}  // namespace
}  // namespace salt::testing
