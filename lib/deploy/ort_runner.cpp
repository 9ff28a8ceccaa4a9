#include "deploy/ort_runner.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/errors.h"
#include "core/install_paths.h"
#include "core/run_command.h"

namespace salt::deploy {
namespace fs = std::filesystem;

OrtRunner find_ort_runner() {
  OrtRunner r;
  const auto share = share_dir();
  r.script = share / "scripts" / "ort_run.js";
  const char* env = std::getenv("SALT_ORT_DIR");
  const fs::path dir = env && *env ? fs::path(env) : share / "ort";
  std::error_code ec;
  if (!fs::exists(r.script, ec)) r.missing = r.script.string() + " is missing";
  else if (!fs::exists(dir / "node_modules" / "onnxruntime-node", ec))
    r.missing = "onnxruntime-node is not installed in " + dir.string() + " (run scripts/bootstrap.sh)";
  else if (run_command({"node", "--version"}).exit_code != 0)
    r.missing = "node (Node.js) is not on PATH";
  return r;
}

YAML::Node run_ort(const OrtRunner& runner, const fs::path& model, const fs::path& inputs_json,
                   const fs::path& outputs_json, int threads, int repeat) {
  auto result = run_command({"node", runner.script.string(), model.string(), inputs_json.string(),
                                     outputs_json.string(), "--threads", std::to_string(threads), "--repeat",
                                     std::to_string(repeat)});
  if (result.exit_code != 0) {
    auto msg = result.output;
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r')) msg.pop_back();
    if (auto nl = msg.rfind('\n'); nl != std::string::npos) msg = msg.substr(nl + 1);
    throw InputError("ONNX Runtime could not run " + model.string() + ": " + msg);
  }
  std::ifstream in(outputs_json);
  std::stringstream text;
  text << in.rdbuf();
  return YAML::Load(text.str());  // JSON is YAML
}

}  // namespace salt::deploy
