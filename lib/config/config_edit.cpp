#include "config/config_edit.h"

#include <charconv>
#include <cmath>

namespace salt::config {

std::optional<LrsField> lrs_field(const std::string& attr_name) {
  if (attr_name == "lrs_config.initial") return LrsField::kInitial;
  if (attr_name == "lrs_config.max") return LrsField::kMax;
  if (attr_name == "lrs_config.end") return LrsField::kEnd;
  return std::nullopt;
}

namespace {

const char* lrs_key(LrsField f) {
  switch (f) {
    case LrsField::kInitial: return "initial";
    case LrsField::kEnd: return "end";
    default: return "max";
  }
}

double& lrs_member(LrsConfig& lrs, LrsField f) {
  switch (f) {
    case LrsField::kInitial: return lrs.initial;
    case LrsField::kEnd: return lrs.end;
    default: return lrs.max;
  }
}

}  // namespace

ConfigEdit ConfigEdit::set_batch_size(int64_t size) {
  ConfigEdit e;
  e.kind = Kind::kBatchSize;
  e.batch_size = size;
  return e;
}

ConfigEdit ConfigEdit::set_learning_rate(LrsField field, double lr) {
  ConfigEdit e;
  e.kind = Kind::kLearningRate;
  e.lrs_field = field;
  e.learning_rate = lr;
  return e;
}

ConfigEdit ConfigEdit::set_ckpt_path(std::string path) {
  ConfigEdit e;
  e.kind = Kind::kCkptPath;
  e.ckpt_path = std::move(path);
  return e;
}

std::string ConfigEdit::key() const {
  switch (kind) {
    case Kind::kBatchSize: return "data.batch_size";
    case Kind::kLearningRate: return std::string("model.lrs_config.") + lrs_key(lrs_field);
    default: return "ckpt_path";
  }
}

std::string yaml11_float_text(double value) {
  if (std::isnan(value)) return ".nan";
  if (std::isinf(value)) return value < 0 ? "-.inf" : ".inf";
  char buf[64];
  const auto end = std::to_chars(buf, buf + sizeof buf, value).ptr;  // the shortest text that reads back
  std::string text(buf, end);
  const auto e = text.find('e');
  if (text.find('.') == std::string::npos) text.insert(e == std::string::npos ? text.size() : e, ".0");
  return text;
}

void apply_edit(RunConfig& run, YAML::Node& recorded, const ConfigEdit& edit) {
  switch (edit.kind) {
    case ConfigEdit::Kind::kBatchSize:
      run.data.batch_size = edit.batch_size;
      recorded["data"]["batch_size"] = edit.batch_size;
      break;
    case ConfigEdit::Kind::kLearningRate:
      lrs_member(run.model.lrs, edit.lrs_field) = edit.learning_rate;
      recorded["model"]["lrs_config"][lrs_key(edit.lrs_field)] = yaml11_float_text(edit.learning_rate);
      break;
    case ConfigEdit::Kind::kCkptPath:
      run.ckpt_path = edit.ckpt_path;
      recorded["ckpt_path"] = edit.ckpt_path;
      break;
  }
}

}  // namespace salt::config
