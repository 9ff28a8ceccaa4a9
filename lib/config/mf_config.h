// salt's data.mf_config (MaskformerConfig): which dataset holds the objects a
// MaskFormer reconstructs (truth hadrons / vertices), the label that identifies each
// object and the one that classifies it, and the constituent label that links each
// constituent (track) to its object. The targets built from it: models/maskformer/object_targets.h.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/bind.h"

namespace salt::config {

// One entry of object_classes: raw values of the class label -> the class index.
struct ObjectClass {
  std::string name;
  std::vector<int64_t> raw;  // empty: no raw value (salt's null class may omit it)
  int64_t mapped = 0;
  double weight = 1.0;
};

// salt's ObjectCut: an object is kept when min <= field <= max (NaN fails).
struct ObjectCut {
  std::string field;
  std::optional<double> min, max;
};

struct MaskformerObjectConfig {
  std::string name;      // the objects' dataset (data.input_map.objects)
  std::string id_label;  // per object; -1 = no object
  std::optional<std::string> class_label;
  std::vector<ObjectClass> object_classes;  // in mapped order, null last
  std::optional<int64_t> max_objects;       // keep this many slots (default: mask_decoder.num_objects)
  std::optional<int64_t> pv_class = 0;      // mapped class kept first, exempt from cuts and sorting
  std::vector<ObjectCut> cuts;              // objects failing one are dropped (their slot freed)
  std::optional<std::string> sort_by;       // the other objects sorted by this field
  bool sort_descending = true;
  std::optional<double> max_lxy_mm;         // objects beyond |lxy_field| relabelled null (slot kept)
  std::string lxy_field = "Lxy";

  // The objects' fields the selection reads (cuts, sort_by, lxy_field).
  std::vector<std::string> selection_fields() const;

  int64_t null_index() const { return static_cast<int64_t>(object_classes.size()) - 1; }
  // The class weights salt passes to MaskFormerLoss (object_classes' `weight`, 1 by default).
  std::vector<double> object_weights() const;
};

struct MaskformerConstituentConfig {
  std::string name;      // the constituent input whose embeddings the masks cover
  std::string id_label;  // its label holding the id of the object each constituent belongs to
};

struct MaskformerConfig {
  MaskformerObjectConfig object;
  MaskformerConstituentConfig constituent;
};

const Binding<MaskformerConfig>& mf_config_binding();

}  // namespace salt::config
