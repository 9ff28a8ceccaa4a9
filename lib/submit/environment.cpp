#include "submit/environment.h"

#include <CLI/CLI.hpp>
#include <filesystem>

#include "core/errors.h"
#include "submit/shell_quote.h"

namespace salt::submit {

void add_environment_options(CLI::App& app, Environment& env, const std::string& image_help,
                             const std::string& bind_help) {
  app.add_option("-e,--environment", env.kind, "Where the job finds salt.")
      ->check(CLI::IsMember(environment_kinds()))
      ->capture_default_str();
  app.add_option("--conda_activate", env.conda_activate, "conda's activate script (-e conda).")->capture_default_str();
  app.add_option("--conda_env", env.conda_env, "conda environment (-e conda).")->capture_default_str();
  app.add_option("--image", env.image, image_help);
  app.add_option("-b,--bind", env.binds, bind_help);
  app.add_option("--salt_binary", env.salt_binary,
                 "salt as the job calls it (default: this binary; 'salt' inside singularity).");
}

void default_salt_binary(Environment& env) {
  if (env.salt_binary.empty()) env.salt_binary = env.kind == "singularity" ? "salt" : current_executable();
}

void check_environment(const Environment& env) {
  if (!env.binds.empty() && env.kind != "singularity")
    throw UsageError("--bind is only allowed with --environment singularity");
  if (env.kind == "singularity" && env.image.empty())
    throw UsageError("--environment singularity needs --image (the salt-cpp image to run, e.g. a .sif file)");
}

std::string environment_setup(const Environment& env) {
  if (env.kind != "conda") return "";
  // Every value quoted, the message too: inside "..." a $(...) in the path would run.
  return "source " + shell_quote(env.conda_activate) + " || { echo " +
         shell_quote("cannot source " + env.conda_activate) + " >&2; exit 1; }\n" + "conda activate " + shell_quote(env.conda_env) + " || exit 1\n" +
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
