#include "deploy/ort_runner.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/env_switches.h"
#include "core/errors.h"
#include "core/install_paths.h"
#include "core/run_command.h"

namespace salt::deploy {
namespace fs = std::filesystem;

namespace {

// What a message quotes of a helper's text: at most this many characters.
constexpr size_t kQuotedChars = 200;

std::string clipped_quote(const std::string& text) {
  if (text.size() <= kQuotedChars) return "'" + text + "'";
  return "'" + text.substr(0, kQuotedChars) + "...' (" + std::to_string(text.size()) + " characters)";
}

// Why the runner's answer is not {"jets": [{"<output>": {"dims": [...], "data": [numbers or null]}, ...}, ...]}
// (ort_run.js's OUTPUTS.json), or empty when it is.
std::string answer_shape_problem(const YAML::Node& answer) {
  if (!answer.IsMap()) return "not a JSON object";
  if (!answer["jets"].IsSequence()) return "no list of jets";
  for (const auto& jet : answer["jets"]) {
    if (!jet.IsMap()) return "a jet that is not a mapping of outputs";
    for (const auto& output : jet) {
      const auto name = output.first.Scalar().substr(0, 50);
      if (!output.second.IsMap() || !output.second["data"].IsSequence() || !output.second["dims"].IsSequence())
        return "output '" + name + "' without dims and data";
      const auto data = output.second["data"];
      double value;
      for (const auto& v : data)
        if (!v.IsNull() && !(v.IsScalar() && YAML::convert<double>::decode(v, value)))
          return "a value of '" + name + "' that is not a number";
    }
  }
  return "";
}

// The runner's answer file, parsed and checked; InputError naming the runner and
// quoting at most ~200 characters of the answer when it is not readable.
YAML::Node read_answer(const OrtRunner& runner, const fs::path& outputs_json) {
  std::ifstream in(outputs_json);
  if (!in) throw InputError("the ONNX Runtime runner " + runner.script.string() + " exited 0 but wrote no answer");
  std::stringstream text;
  text << in.rdbuf();
  const auto fail = [&](const std::string& why) {
    throw InputError("the ONNX Runtime runner " + runner.script.string() + " gave an answer salt cannot read (" + why +
                     "): " + clipped_quote(text.str()));
  };
  YAML::Node answer;
  try {
    answer = YAML::Load(text.str());  // JSON is YAML
  } catch (const YAML::Exception& e) {
    fail("not JSON: " + e.msg);
  }
  if (const auto problem = answer_shape_problem(answer); !problem.empty()) fail(problem);
  return answer;
}

}  // namespace

OrtRunner find_ort_runner() {
  OrtRunner r;
  const auto share = share_dir();
  r.script = share / "scripts" / "ort_run.js";
  const char* env = env_value("SALT_ORT_DIR");
  const fs::path dir = env && *env ? fs::path(env) : share / "ort";
  std::error_code ec;
  if (!fs::exists(r.script, ec)) r.missing = r.script.string() + " is missing";
  else if (!fs::exists(dir / "node_modules" / "onnxruntime-node", ec))
    r.missing = "onnxruntime-node is not installed in " + dir.string() + " (run scripts/bootstrap.sh)";
  else if (run_command({"node", "--version"}, {/*stop_with_salt=*/true}).exit_code != 0)
    r.missing = "node (Node.js) is not on PATH";
  return r;
}

YAML::Node run_ort(const OrtRunner& runner, const fs::path& model, const fs::path& inputs_json,
                   const fs::path& outputs_json, int threads, int repeat) {
  // Node dies with salt: on SIGINT/SIGTERM (StopRequested comes out of here) and on SIGKILL.
  auto result =
      run_command({"node", runner.script.string(), model.string(), inputs_json.string(), outputs_json.string(),
                   "--threads", std::to_string(threads), "--repeat", std::to_string(repeat)},
                  {/*stop_with_salt=*/true});
  if (result.exit_code != 0) {
    auto msg = result.output;
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r')) msg.pop_back();
    if (auto nl = msg.rfind('\n'); nl != std::string::npos) msg = msg.substr(nl + 1);
    throw InputError("ONNX Runtime could not run " + model.string() + " (" + runner.script.string() + ", exit " +
                     std::to_string(result.exit_code) + "): " + clipped_quote(msg));
  }
  return read_answer(runner, outputs_json);
}

}  // namespace salt::deploy
