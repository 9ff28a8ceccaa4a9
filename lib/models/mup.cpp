#include "models/mup.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <set>
#include <sstream>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "models/salt_wrapper.h"

namespace salt::models {
namespace {

std::string shape_text(const std::vector<std::optional<int64_t>>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + (dims[i] ? std::to_string(*dims[i]) : "null");
  return s + "]";
}

}  // namespace

BaseShapes make_base_shapes(const torch::OrderedDict<std::string, torch::Tensor>& base,
                            const torch::OrderedDict<std::string, torch::Tensor>& delta) {
  BaseShapes out;
  for (const auto& item : base) {
    const auto* d = delta.find(item.key());
    if (!d)
      throw UsageError("salt mup: parameter '" + item.key() +
                       "' of the base model is missing from the delta model (a width may only change sizes)");
    if (d->dim() != item.value().dim())
      throw UsageError("salt mup: parameter '" + item.key() + "' has another rank in the delta model");
    std::vector<std::optional<int64_t>> dims;
    for (int64_t i = 0; i < item.value().dim(); ++i) {
      const int64_t b = item.value().size(i);
      dims.push_back(b == d->size(i) ? std::nullopt : std::optional<int64_t>(b));
    }
    out.emplace_back(item.key(), std::move(dims));
  }
  if (delta.size() != base.size())
    throw UsageError("salt mup: the delta model has " + std::to_string(delta.size()) + " parameters, the base model " +
                     std::to_string(base.size()) + " (a width may only change sizes)");
  return out;
}

void write_base_shapes(const std::filesystem::path& file, const BaseShapes& shapes) {
  std::ostringstream s;
  s << "# This is a base shape file encoded in yaml\n"
       "# - `null` indicates a dimension is \"finite\", i.e. a non-\"width\" dimension\n"
       "# - a number indicates the base dimension of an \"infinite\" dimension, i.e. some notion of \"width\"\n";
  for (const auto& [name, dims] : shapes) {
    s << name << ":\n";
    for (const auto& d : dims) s << "- " << (d ? std::to_string(*d) : "null") << "\n";
  }
  if (file.has_parent_path()) create_directories_or_fail(file.parent_path(), "muP shape directory (model.mup_config.shape_path)");
  write_file_atomic(file, s.str());
}

BaseShapes read_base_shapes(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw UsageError("model.mup_config.shape_path: no base shapes file " + file.string() +
                     " (write it with `salt mup` on the same config first)");
  YAML::Node root;
  try {
    root = YAML::LoadFile(file.string());
  } catch (const YAML::Exception& e) {
    throw UsageError(file.string() + ": not a muP base shapes file (" + e.msg + ")");
  }
  if (!root.IsMap()) throw UsageError(file.string() + ": not a muP base shapes file (expected `name: [dims]` entries)");
  BaseShapes out;
  for (const auto& kv : root) {
    if (!kv.second.IsSequence())
      throw UsageError(file.string() + ": '" + kv.first.Scalar() + "' is not a list of dimensions");
    std::vector<std::optional<int64_t>> dims;
    for (const auto& d : kv.second) {
      if (d.IsNull() || d.Scalar() == "null") {
        dims.emplace_back();
        continue;
      }
      try {
        dims.emplace_back(d.as<int64_t>());
      } catch (const YAML::Exception&) {
        throw UsageError(file.string() + ": '" + kv.first.Scalar() + "' has a dimension that is neither null nor a size");
      }
    }
    out.emplace_back(kv.first.Scalar(), std::move(dims));
  }
  return out;
}

int InfShape::ninf() const {
  int n = 0;
  for (const auto& b : base) n += b.has_value();
  return n;
}

double InfShape::dim_mult(size_t i) const {
  return base[i] ? static_cast<double>(dims[i]) / static_cast<double>(*base[i]) : 1.0;
}

double InfShape::width_mult() const {
  for (size_t i = base.size(); i-- > 0;)
    if (base[i]) return dim_mult(i);
  return 1.0;
}

namespace {

// zip_infshape: a base size equal to the model's size is a fixed dimension.
InfShape infshape(const torch::Tensor& p, const std::vector<std::optional<int64_t>>& base) {
  InfShape s;
  for (int64_t i = 0; i < p.dim(); ++i) {
    s.dims.push_back(p.size(i));
    const auto& b = base[static_cast<size_t>(i)];
    s.base.push_back(b && *b != p.size(i) ? b : std::nullopt);
  }
  return s;
}

std::map<std::string, InfShape> match_shapes(const torch::OrderedDict<std::string, torch::Tensor>& params,
                                             const BaseShapes& shapes, const std::string& file) {
  const std::string where = "model.mup_config: the base shapes in " + file + " do not match the model: ";
  std::map<std::string, const std::vector<std::optional<int64_t>>*> by_name;
  for (const auto& [name, dims] : shapes) by_name[name] = &dims;
  std::map<std::string, InfShape> out;
  for (const auto& item : params) {
    auto it = by_name.find(item.key());
    if (it == by_name.end())
      throw UsageError(where + "no entry for the parameter '" + item.key() + "' (written for another model? run salt mup again)");
    if (static_cast<int64_t>(it->second->size()) != item.value().dim())
      throw UsageError(where + "'" + item.key() + "' is " + shape_text(*it->second) + " in the file, the model's has " +
                       std::to_string(item.value().dim()) + " dimensions");
    out[item.key()] = infshape(item.value(), *it->second);
    by_name.erase(it);
  }
  if (!by_name.empty())
    for (const auto& [name, _] : shapes)  // the first in the file's order
      if (by_name.count(name))
        throw UsageError(where + "'" + name + "' is not a parameter of the model (written for another model? run salt "
                         "mup again)");
  return out;
}

}  // namespace

void apply_base_shapes(SaltWrapperImpl& wrapper, const BaseShapes& shapes, const std::string& file) {
  auto& model = *wrapper.model;
  const auto shapes_of = match_shapes(model.named_parameters(), shapes, file);
  torch::nn::LinearImpl* readout = nullptr;
  if (model.encoder && model.encoder->options().mup() && model.encoder->out_proj) readout = model.encoder->out_proj.get();

  torch::NoGradGuard no_grad;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    auto* linear = dynamic_cast<torch::nn::LinearImpl*>(item.value().get());
    if (!linear) continue;
    const auto& w = shapes_of.at(item.key() + ".weight");
    const bool fanin_inf = w.base[1].has_value(), fanout_inf = w.base[0].has_value();
    if (linear == readout) {
      const double m = w.width_mult();
      linear->weight.mul_(std::sqrt(m));
      if (linear->bias.defined()) linear->bias.mul_(std::sqrt(m));
      model.encoder->out_proj_input_scale = 1.0 / m;
      continue;
    }
    if (fanin_inf && !fanout_inf)
      throw UsageError("model.mup_config: '" + item.key() +
                       "' goes from a width to a fixed size but is not a muP readout (only the encoder's out_proj "
                       "with encoder mup: true is)");
    if (linear->bias.defined()) linear->bias.mul_(std::sqrt(w.dim_mult(1)));
  }
  wrapper.mup_width_mults.clear();
  for (const auto& [name, s] : shapes_of) {
    if (s.ninf() > 2) throw UsageError("model.mup_config: '" + name + "' has more than two width dimensions");
    if (s.ninf() == 2) wrapper.mup_width_mults["model." + name] = s.width_mult();
  }
}

}  // namespace salt::models
