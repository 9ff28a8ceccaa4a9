#include "submit/environment.h"

#include <filesystem>

#include "core/errors.h"
#include "submit/shell_quote.h"

namespace salt::submit {

void check_environment(const Environment& env) {
  if (!env.binds.empty() && env.kind != "singularity")
    throw UsageError("--bind is only allowed with --environment singularity");
  if (env.kind == "singularity" && env.image.empty())
    throw UsageError("--environment singularity needs --image (the salt-cpp image to run, e.g. a .sif file)");
}

std::string environment_setup(const Environment& env) {
  if (env.kind != "conda") return "";
  return "source " + shell_quote(env.conda_activate) + " || { echo \"cannot source " + env.conda_activate +
         "\" >&2; exit 1; }\n" + "conda activate " + shell_quote(env.conda_env) + " || exit 1\n" +
         "echo \"activated environment ${CONDA_DEFAULT_ENV:-}\"\n";
}

std::vector<std::string> salt_launcher(const Environment& env, bool gpus, const std::string& workdir) {
  if (env.kind != "singularity") return {env.salt_binary};
  std::vector<std::string> words{"singularity", "exec", "-e"};
  if (gpus) words.push_back("--nv");
  for (const auto& b : env.binds) words.insert(words.end(), {"--bind", b});
  words.insert(words.end(), {"--home", workdir, "--pwd", workdir, env.image, env.salt_binary});
  return words;
}

std::string current_executable() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("salt") : exe.string();
}

}  // namespace salt::submit
