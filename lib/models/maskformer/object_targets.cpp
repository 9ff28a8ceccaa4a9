#include "models/maskformer/object_targets.h"

#include <limits>

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

  // salt's _select_objects: objects failing a cut are dropped (pv_class exempt);
  // slot order: pv-class objects in file order, then the others (by sort_by, else in
  // file order), then dropped and empty slots; the first num_objects slots are kept.
  auto pv = o.pv_class ? real & (classes == *o.pv_class) : torch::zeros_like(real);
  auto kept = real;
  for (const auto& cut : o.cuts) {
    const auto v = label_of(labels, "objects", cut.field).to(torch::kDouble);
    auto ok = v.isnan().logical_not();
    if (cut.min) ok = ok & (v >= *cut.min);
    if (cut.max) ok = ok & (v <= *cut.max);
    kept = kept & (ok | pv);
  }
  auto rank = torch::full_like(ids, 2);
  rank.masked_fill_(kept, 1);
  rank.masked_fill_(pv, 0);
  const auto stable_order = [](const torch::Tensor& key) {
    return std::get<1>(torch::sort(key, c10::optional<bool>(true), /*dim=*/1, /*descending=*/false));
  };
  torch::Tensor order;
  if (o.sort_by) {
    auto key = label_of(labels, "objects", *o.sort_by).to(torch::kDouble);
    if (o.sort_descending) key = -key;
    key = key.nan_to_num(std::numeric_limits<double>::infinity());  // NaN last
    // pv-class objects keep their file order: their key is their slot.
    key = torch::where(pv, torch::arange(slots, key.options()).expand_as(key), key);
    const auto by_key = stable_order(key);
    order = by_key.gather(1, stable_order(rank.gather(1, by_key)));
  } else {
    order = stable_order(rank);
  }
  const int64_t m = std::min(num_objects, slots);
  order = order.narrow(1, 0, m);
  auto keep = (rank < 2).gather(1, order);
  if (m < num_objects) {  // fewer slots in the file than queries: empty slots after them
    order = torch::cat({order, torch::zeros({b, num_objects - m}, order.options())}, 1);
    keep = torch::cat({keep, torch::zeros({b, num_objects - m}, keep.options())}, 1);
  }

  ObjectTargets t;
  t.object_class = classes.gather(1, order).masked_fill(keep.logical_not(), o.null_index());
  if (o.max_lxy_mm) {  // beyond the tracker: still an object slot, but of the null class (salt's relabelling)
    const auto lxy = label_of(labels, "objects", o.lxy_field).gather(1, order).to(torch::kDouble);
    t.object_class.masked_fill_(keep & (lxy.abs() > *o.max_lxy_mm), o.null_index());
  }
  t.source_slot = order.masked_fill(keep.logical_not(), -1);
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
