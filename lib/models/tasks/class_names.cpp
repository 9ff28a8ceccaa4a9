#include "models/tasks/class_names.h"

#include <map>
#include <set>

namespace salt::models {

std::optional<std::vector<std::string>> default_class_names(const std::string& label) {
  static const std::map<std::string, std::vector<std::string>> names = {
      {"ftagTruthOriginLabel",
       {"Pileup", "Fake", "Primary", "FromB", "FromBC", "FromC", "FromTau", "OtherSecondary"}},
      {"ftagTruthTypeLabel", {"NoTruth", "Other", "Pion", "Kaon", "Electron", "Muon"}},
      {"ftagTruthSourceLabel",
       {"NoTruth", "NotSecondary", "HadronicInteraction", "StrangeMesonDecay", "StrangeBaryonDecay",
        "GammaConversion", "Other"}},
  };
  auto it = names.find(label);
  if (it == names.end()) return std::nullopt;
  return it->second;
}

std::string probability_name(const std::string& class_name) {
  // The flavours defined by ftag (atlas-ftag-tools flavours.yaml); their px is
  // "p" + the name without a trailing "jets".
  static const std::set<std::string> flavours = {
      "bjets", "cjets", "ujets", "taujets", "singlebjets", "bcjets", "bbjets", "singlecjets", "ccjets",
      "hbb", "hcc", "top", "qcd", "tqqb", "wqq_from_t", "other_from_t", "upjets", "downjets", "strangejets",
      "gluonjets", "lquarkjets", "hadrbjets", "lepbjets", "singleebdecay", "singlemubdecay", "singletaubdecay",
      "D0cjets", "nonD0cjets", "Dpluscjets", "elxprompt", "elxflip", "muxprompt", "muxflip", "elxphconv",
      "elxfrommu", "npxall", "npxtau", "npxbjets", "npxcjets", "npxujets", "unclassified", "unknown"};
  std::string n = class_name;
  const std::string suffix = "jets";
  if (flavours.count(n) && n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
    n = n.substr(0, n.size() - suffix.size());
  return "p" + n;
}

}  // namespace salt::models
