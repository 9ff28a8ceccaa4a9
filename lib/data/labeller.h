// ftag's Labeller, which salt's data.labeller_config uses: the class label of each
// jet from its truth variables, by the cuts of ftag's flavour definitions
// (ftag/flavours.yaml). Classes are numbered in the order given; a jet matching
// several takes the last (ftag assigns them in turn), and a jet matching none is
// -1 (an error with require_labels).
#pragma once
#include <string>
#include <vector>

#include "data/cuts.h"

namespace salt::data {

// The cut strings defining an ftag flavour (e.g. "hbb"); nullptr if ftag has none.
const std::vector<std::string>* flavour_cuts(const std::string& name);

class Labeller {
 public:
  // Throws UsageError naming data.labeller_config.class_names[i] for a class ftag
  // does not define, or for no classes at all.
  Labeller(std::vector<std::string> class_names, bool require_labels);

  const std::vector<std::string>& class_names() const { return class_names_; }
  bool require_labels() const { return require_labels_; }
  // The parsed cuts of each class, in class order.
  const std::vector<std::vector<Cut>>& class_cuts() const { return cuts_; }

 private:
  std::vector<std::string> class_names_;
  bool require_labels_;
  std::vector<std::vector<Cut>> cuts_;
};

}  // namespace salt::data
