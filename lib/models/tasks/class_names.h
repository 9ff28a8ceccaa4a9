// Class names and the output column names salt writes for them.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace salt::models {

// salt.utils.class_names.CLASS_NAMES: the classes of the track truth labels
// (ftagTruthOriginLabel, ftagTruthTypeLabel, ftagTruthSourceLabel); nullopt otherwise.
std::optional<std::vector<std::string>> default_class_names(const std::string& label);

// The probability suffix of a class as salt writes it: ftag's short name for a
// known flavour ("bjets" -> "pb", "taujets" -> "ptau", "hbb" -> "phbb"), else
// "p" + class name ("Pileup" -> "pPileup").
std::string probability_name(const std::string& class_name);

}  // namespace salt::models
