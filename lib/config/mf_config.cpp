#include "config/mf_config.h"

#include <algorithm>
#include <set>

#include "core/errors.h"

namespace salt::config {
namespace {

using O = MaskformerObjectConfig;

const Binding<ObjectCut>& cut_binding() {
  static const Binding<ObjectCut> b = [] {
    Binding<ObjectCut> c{ObjectCut{}};
    c.required("field", SALT_FIELD(field), "The objects' field to cut on.")
        .arg("min", SALT_FIELD(min), "Inclusive lower bound (null: none).")
        .arg("max", SALT_FIELD(max), "Inclusive upper bound (null: none).")
        .finally([](ObjectCut& c) {
          if (!c.min && !c.max)
            throw UsageError("data.mf_config.object.cuts: the cut on '" + c.field + "' must set min, max or both");
        });
    return c;
  }();
  return b;
}

// object_classes: {name: {raw: int | [int], mapped: int, weight: float}}, salt's checks.
void read_object_classes(O& o, const YAML::Node& n) {
  o.object_classes.clear();
  if (!n.IsDefined() || n.IsNull()) return;
  const std::string key = "data.mf_config.object.object_classes";
  for (const auto& kv : n) {
    ObjectClass c;
    // YAML's `null:` key is the null class (jsonargparse reads it as None, salt renames it).
    const std::string k = kv.first.IsNull() ? "" : kv.first.Scalar();
    c.name = k.empty() || k == "~" || k == "Null" || k == "NULL" ? "null" : k;
    const auto& v = kv.second;
    if (!v.IsMap() || !v["mapped"]) throw UsageError(key + "." + c.name + ": give {raw, mapped}");
    c.mapped = v["mapped"].as<int64_t>();
    if (const auto raw = v["raw"]; raw && !raw.IsNull()) {
      if (raw.IsSequence())
        for (const auto& r : raw) c.raw.push_back(static_cast<int64_t>(r.as<double>()));
      else
        c.raw.push_back(static_cast<int64_t>(raw.as<double>()));
    }
    if (v["weight"]) c.weight = v["weight"].as<double>();
    o.object_classes.push_back(c);
  }
  auto null = std::find_if(o.object_classes.begin(), o.object_classes.end(), [](auto& c) { return c.name == "null"; });
  if (null == o.object_classes.end()) throw UsageError(key + ": the null class must be present");
  const auto n_classes = static_cast<int64_t>(o.object_classes.size());
  if (null->mapped != n_classes - 1) throw UsageError(key + ".null.mapped: the null class must be last (" +
                                                      std::to_string(n_classes - 1) + ")");
  std::set<int64_t> mapped;
  for (const auto& c : o.object_classes) mapped.insert(c.mapped);
  if (static_cast<int64_t>(mapped.size()) != n_classes || *mapped.begin() != 0 || *mapped.rbegin() != n_classes - 1)
    throw UsageError(key + ": the mapped values must be 0.." + std::to_string(n_classes - 1) + ", each once");
  std::sort(o.object_classes.begin(), o.object_classes.end(), [](auto& a, auto& b) { return a.mapped < b.mapped; });
}

const Binding<O>& object_binding() {
  static const Binding<O> b = [] {
    Binding<O> o{O{}};
    o.required("name", SALT_FIELD(name), "The objects' dataset, e.g. truth_hadrons.")
        .required("id_label", SALT_FIELD(id_label), "Object id (e.g. barcode); -1 marks an empty slot.")
        .arg("class_label", SALT_FIELD(class_label), "Object class variable (e.g. flavour), mapped by object_classes.")
        .custom(field_null("object_classes", t_optional(t_dict(t_any())),
                           "{class: {raw: value(s) of class_label, mapped: index, weight: 1}}, the null class last."),
                read_object_classes)
        .arg("max_objects", SALT_FIELD(max_objects),
             "Keep this many object slots per jet (null: mask_decoder.num_objects).", t_optional(at_least(t_int(), 1)))
        .custom(field_null("num_objects", t_optional(at_least(t_int(), 1)), "Deprecated alias of max_objects."),
                [](O& c, const YAML::Node& n) {
                  if (n.IsDefined() && !n.IsNull() && !c.max_objects) c.max_objects = n.as<int64_t>();
                })
        .arg("pv_class", SALT_FIELD(pv_class), "Mapped class kept first when slots are truncated (null: none).",
             t_optional(t_int()))
        .custom(field_null("cuts", t_optional(t_list(cut_binding().type())),
                           "[{field, min, max}]: objects failing a cut are dropped (pv_class exempt)."),
                [](O& c, const YAML::Node& n) {
                  c.cuts.clear();
                  if (n.IsDefined() && n.IsSequence())
                    for (const auto& e : n) c.cuts.push_back(cut_binding().read(e));
                })
        .arg("sort_by", SALT_FIELD(sort_by), "Sort the objects (but pv_class) by this field before truncating.")
        .arg("sort_descending", SALT_FIELD(sort_descending), "Largest sort_by first.")
        .arg("max_lxy_mm", SALT_FIELD(max_lxy_mm), "Objects with |lxy_field| beyond this are relabelled null (slot kept).")
        .arg("lxy_field", SALT_FIELD(lxy_field), "The field max_lxy_mm reads.")
        .finally([](O& c) {
          if (c.pv_class && !c.object_classes.empty() && (*c.pv_class < 0 || *c.pv_class >= c.null_index()))
            throw UsageError("data.mf_config.object.pv_class: " + std::to_string(*c.pv_class) + " must be in [0, " +
                             std::to_string(c.null_index() - 1) + "] (a class that is not null)");
          if (c.object_classes.empty()) throw UsageError("data.mf_config.object.object_classes: give the object classes");
        });
    return o;
  }();
  return b;
}

const Binding<MaskformerConstituentConfig>& constituent_binding() {
  static const Binding<MaskformerConstituentConfig> b = [] {
    Binding<MaskformerConstituentConfig> c{MaskformerConstituentConfig{}};
    c.required("name", SALT_FIELD(name), "The constituent input the masks cover, e.g. tracks.")
        .required("id_label", SALT_FIELD(id_label), "Its label holding the id of its object, e.g. ftagTruthParentBarcode.");
    // salt types the constituent as an object config too, so the config.yaml salt
    // saves lists every object key here at its default; salt reads name and id_label.
    for (auto f : object_binding().fields())
      if (f.name != "name" && f.name != "id_label")
        c.unbound(std::move(f)).ignored("salt reads only the constituent's name and id_label");
    return c;
  }();
  return b;
}

}  // namespace

std::vector<std::string> MaskformerObjectConfig::selection_fields() const {
  std::vector<std::string> out;
  auto add = [&](const std::string& f) {
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  };
  for (const auto& c : cuts) add(c.field);
  if (sort_by) add(*sort_by);
  if (max_lxy_mm) add(lxy_field);
  return out;
}

std::vector<double> MaskformerObjectConfig::object_weights() const {
  std::vector<double> w;
  for (const auto& c : object_classes) w.push_back(c.weight);
  return w;
}

const Binding<MaskformerConfig>& mf_config_binding() {
  static const Binding<MaskformerConfig> b = [] {
    Binding<MaskformerConfig> m{MaskformerConfig{}};
    m.required_struct("object", SALT_FIELD(object), object_binding(), "The objects to reconstruct.")
        .required_struct("constituent", SALT_FIELD(constituent), constituent_binding(),
                         "The constituents the objects are made of.");
    return m;
  }();
  return b;
}

}  // namespace salt::config
