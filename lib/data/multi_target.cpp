#include "data/multi_target.h"

#include <algorithm>

#include "core/errors.h"

namespace salt::data {

namespace {

void add_unique(std::vector<std::string>& list, const std::string& label) {
  if (std::find(list.begin(), list.end(), label) == list.end()) list.push_back(label);
}

torch::Tensor selection_mask(const torch::Tensor& x, const std::string& opp, double value) {
  if (opp == "==") return x.eq(value);
  if (opp == "!=") return x.ne(value);
  if (opp == ">=") return x.ge(value);
  if (opp == "<=") return x.le(value);
  if (opp == ">") return x.gt(value);
  if (opp == "<") return x.lt(value);
  throw UsageError("data.multi_target: unknown comparison '" + opp + "'");  // the schema allows only these
}

}  // namespace

void add_multi_target_labels(VarMap& labels, const std::vector<config::MultiTarget>& entries) {
  for (const auto& e : entries) {
    auto& list = labels[e.input_name];
    add_unique(list, e.sel_label);
    add_unique(list, e.source);
    if (e.target) add_unique(list, *e.target);
  }
}

bool is_custom_target(const std::vector<config::MultiTarget>& entries, const std::string& input,
                      const std::string& label) {
  return std::any_of(entries.begin(), entries.end(), [&](const config::MultiTarget& e) {
    return e.input_name == input && e.custom_target && *e.custom_target == label;
  });
}

void apply_multi_targets(Batch& batch, const std::vector<config::MultiTarget>& entries) {
  for (const auto& e : entries) {
    auto& labels = batch.labels[e.input_name];
    const torch::Tensor& source = labels.at(e.source);
    if (e.custom_target && !labels.count(*e.custom_target))
      labels[*e.custom_target] = source.is_floating_point() ? torch::full_like(source, NAN) : torch::full_like(source, -1);
  }
  for (const auto& e : entries) {
    auto& labels = batch.labels[e.input_name];
    torch::Tensor& target = labels.at(e.target_label());
    const auto mask = selection_mask(labels.at(e.sel_label), e.opp, e.value);
    target = torch::where(mask, labels.at(e.source).to(target.scalar_type()), target);
  }
}

}  // namespace salt::data
