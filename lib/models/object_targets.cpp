#include "models/object_targets.h"

#include "core/errors.h"

namespace salt::models {
namespace {

const torch::Tensor& label_of(const Labels& labels, const std::string& input, const std::string& name) {
  auto in = labels.find(input);
  if (in == labels.end() || !in->second.count(name))
    throw InputError("data.mf_config: the label '" + name + "' of '" + input + "' is missing from the batch");
  return in->second.at(name);
}

// Mapped classes of raw class values; anything no class lists is null.
torch::Tensor map_classes(const torch::Tensor& raw, const config::MaskformerObjectConfig& o) {
  auto mapped = torch::full_like(raw, o.null_index(), torch::kInt64);
  const auto r = raw.to(torch::kInt64);
  for (const auto& c : o.object_classes)
    for (int64_t v : c.raw) mapped.masked_fill_(r == v, c.mapped);
  return mapped;
}

// Slot values [B, S] in `order` ([B, M] source slots), `keep` false -> fill.
torch::Tensor reorder(const torch::Tensor& t, const torch::Tensor& order, const torch::Tensor& keep) {
  auto out = t.gather(1, order);
  const bool floating = at::isFloatingType(out.scalar_type());
  return out.masked_fill(keep.logical_not(), floating ? NAN : -1.0);
}

}  // namespace

ObjectTargets object_targets(const Labels& labels, const TensorMap& pad_masks, const config::MaskformerConfig& mf,
                             int64_t num_objects) {
  const auto& o = mf.object;
  const auto ids = label_of(labels, "objects", o.id_label).to(torch::kInt64);
  const int64_t b = ids.size(0), slots = ids.size(1);
  auto real = ids != -1;
  if (auto p = pad_masks.find("objects"); p != pad_masks.end()) real = real & p->second.logical_not();
  auto classes = o.class_label ? map_classes(label_of(labels, "objects", *o.class_label), o)
                               : torch::zeros_like(ids);  // without class_label every object is class 0

  // Slot order: pv-class objects, other real objects, empty slots (stable within each).
  auto rank = torch::full_like(ids, 2);
  rank.masked_fill_(real, 1);
  if (o.pv_class) rank.masked_fill_(real & (classes == *o.pv_class), 0);
  auto order = std::get<1>(torch::sort(rank, c10::optional<bool>(true), /*dim=*/1, /*descending=*/false));  // stable
  const int64_t m = std::min(num_objects, slots);
  order = order.narrow(1, 0, m);
  auto keep = real.gather(1, order);
  if (m < num_objects) {  // fewer slots in the file than queries: empty slots after them
    order = torch::cat({order, torch::zeros({b, num_objects - m}, order.options())}, 1);
    keep = torch::cat({keep, torch::zeros({b, num_objects - m}, keep.options())}, 1);
  }

  ObjectTargets t;
  t.object_class = classes.gather(1, order).masked_fill(keep.logical_not(), o.null_index());
  for (const auto& [name, values] : labels.at("objects")) t.labels[name] = reorder(values, order, keep);
  if (o.class_label) t.labels[*o.class_label] = t.object_class;  // salt relabels class_label too

  const auto& cid = label_of(labels, mf.constituent.name, mf.constituent.id_label).to(torch::kInt64);
  auto obj_ids = ids.gather(1, order).masked_fill(keep.logical_not(), -999);
  t.masks = cid.unsqueeze(1) == obj_ids.unsqueeze(2);  // [B, M, L]
  t.masks = t.masks & keep.unsqueeze(2);
  if (auto p = pad_masks.find(mf.constituent.name); p != pad_masks.end())
    t.masks = t.masks & p->second.logical_not().unsqueeze(1);
  return t;
}

}  // namespace salt::models
