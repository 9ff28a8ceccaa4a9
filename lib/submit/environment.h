// Where the job finds salt: `local` (the binary that wrote the job, or
// --salt_binary), `conda` (activate an environment first) or `singularity`
// (run salt inside an image, with --bind mounts). Shared by Slurm and HTCondor.
#pragma once
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace salt::submit {

struct Environment {
  std::string kind = "local";                       // local | conda | singularity
  std::string conda_activate = "conda/bin/activate";  // salt's layout: conda installed in the working dir
  std::string conda_env = "salt";
  std::string image;                                // singularity image (required for singularity)
  std::vector<std::string> binds;                   // singularity --bind
  std::string salt_binary;                          // how the job calls salt
};

inline const std::vector<std::string>& environment_kinds() {
  static const std::vector<std::string> kinds{"conda", "singularity", "local"};
  return kinds;
}

// The options both submit commands share: -e/--environment, --conda_activate,
// --conda_env, --image, -b/--bind, --salt_binary. The help of --image and --bind
// names what they become in that batch system's files.
void add_environment_options(CLI::App& app, Environment& env, const std::string& image_help,
                             const std::string& bind_help);

// After parsing: the job calls `salt` inside singularity, else this binary.
void default_salt_binary(Environment& env);

// Throws UsageError: --bind without singularity, singularity without --image.
void check_environment(const Environment& env);

// Lines run before salt (conda activation), each ending in a newline; empty for the others.
std::string environment_setup(const Environment& env);

// The words before `fit`: [singularity exec ... image] salt. `gpus` adds --nv.
std::vector<std::string> salt_launcher(const Environment& env, bool gpus, const std::string& workdir);

// The binary running now (/proc/self/exe), for the job scripts of `local` and `conda`.
std::string current_executable();

}  // namespace salt::submit
