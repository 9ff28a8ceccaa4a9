#include "data/labeller.h"

#include <map>

#include "core/errors.h"

namespace salt::data {
namespace {

// ftag's `Flavours` (flavours.yaml without its "extended" categories, whose names
// repeat), atlas-ftag-tools 3def74f.
const std::map<std::string, std::vector<std::string>>& flavours() {
  static const std::map<std::string, std::vector<std::string>> table = {
      {"bjets", {"HadronConeExclTruthLabelID == 5"}},
      {"cjets", {"HadronConeExclTruthLabelID == 4"}},
      {"ujets", {"HadronConeExclTruthLabelID == 0"}},
      {"taujets", {"HadronConeExclTruthLabelID == 15"}},
      {"ghostbjets", {"HadronGhostTruthLabelID == 5"}},
      {"ghostcjets", {"HadronGhostTruthLabelID == 4"}},
      {"ghostsjets", {"HadronGhostTruthLabelID == 0", "PartonTruthLabelID == 3"}},
      {"ghostudjets", {"HadronGhostTruthLabelID == 0", "PartonTruthLabelID <= 2"}},
      {"ghostgjets", {"HadronGhostTruthLabelID == 0", "PartonTruthLabelID == 21"}},
      {"ghosttaujets", {"HadronGhostTruthLabelID == 15"}},
      {"hbb", {"R10TruthLabel_R22v1 == 11"}},
      {"hcc", {"R10TruthLabel_R22v1 == 12"}},
      {"top", {"R10TruthLabel_R22v1 in (1,6,7)"}},
      {"qcd", {"R10TruthLabel_R22v1 == 10"}},
      {"qcdbb", {"R10TruthLabel_R22v1 == 10", "GhostBHadronsFinalCount >= 2"}},
      {"qcdnonbb", {"R10TruthLabel_R22v1 == 10", "GhostBHadronsFinalCount < 2"}},
      {"qcdbx", {"R10TruthLabel_R22v1 == 10", "GhostBHadronsFinalCount == 1"}},
      {"qcdcx", {"R10TruthLabel_R22v1 == 10", "GhostCHadronsFinalCount >= 1", "GhostBHadronsFinalCount == 0"}},
      {"qcdll", {"R10TruthLabel_R22v1 == 10", "GhostBHadronsFinalCount == 0", "GhostCHadronsFinalCount == 0"}},
      {"Wqq", {"R10TruthLabel_R22v1 == 2", "GhostBHadronsFinalCount < 2", "GhostCHadronsFinalCount < 2"}},
      {"Wcl", {"R10TruthLabel_R22v1 == 2", "GhostBHadronsFinalCount == 0", "GhostCHadronsFinalCount == 1"}},
      {"Wll", {"R10TruthLabel_R22v1 == 2", "GhostBHadronsFinalCount == 0", "GhostCHadronsFinalCount == 0"}},
      {"htautauel", {"R10TruthLabel_R22v1 == 14"}},
      {"htautaumu", {"R10TruthLabel_R22v1 == 15"}},
      {"htautauhad", {"R10TruthLabel_R22v1 == 16"}},
      {"Zbb", {"R10TruthLabel_R22v1 == 3"}},
      {"Zcc", {"R10TruthLabel_R22v1 == 4"}},
      {"Zqq", {"R10TruthLabel_R22v1 == 5"}},
      {"tqqb", {"R10TruthLabel_R22v1 == 1"}},
      {"wqq_from_t", {"R10TruthLabel_R22v1 == 6"}},
      {"other_from_t", {"R10TruthLabel_R22v1 == 7"}},
      {"upjets", {"PartonTruthLabelID == 1"}},
      {"downjets", {"PartonTruthLabelID == 2"}},
      {"strangejets", {"PartonTruthLabelID == 3"}},
      {"gluonjets", {"HadronConeExclTruthLabelID == 0", "PartonTruthLabelID == 21"}},
      {"lquarkjets", {"HadronConeExclTruthLabelID == 0", "PartonTruthLabelID != 21"}},
      {"hadrbjets", {"HadronConeExclTruthLabelID == 5", "LeptonDecayLabel == 0"}},
      {"lepbjets", {"HadronConeExclTruthLabelID == 5", "LeptonDecayLabel notin (0,-99)"}},
      {"singleebdecay", {"LeptonDecayLabel == 1"}},
      {"singlemubdecay", {"LeptonDecayLabel == 2"}},
      {"singletaubdecay", {"LeptonDecayLabel == 3"}},
      {"D0meson", {"HadronConeExclTruthLabelID == 4", "HadronConeExclTruthLabelPdgId in (421,-421)"}},
      {"nonD0meson", {"HadronConeExclTruthLabelID == 4", "HadronConeExclTruthLabelPdgId notin (421,-421)"}},
      {"Dplusmeson", {"HadronConeExclTruthLabelID == 4", "HadronConeExclTruthLabelPdgId in (411,-411)"}},
      {"Dsplusmeson", {"HadronConeExclTruthLabelID == 4", "HadronConeExclTruthLabelPdgId in (431,-431)"}},
      {"B0meson", {"HadronConeExclTruthLabelID == 5", "HadronConeExclTruthLabelPdgId in (511,-511)"}},
      {"Bplusmeson", {"HadronConeExclTruthLabelID == 5", "HadronConeExclTruthLabelPdgId in (521,-521)"}},
      {"Bs0meson", {"HadronConeExclTruthLabelID == 5", "HadronConeExclTruthLabelPdgId in (531,-531)"}},
      {"elxprompt", {"iffClass in (2,3)"}},
      {"elxnoflip", {"iffClass == 2"}},
      {"elxflip", {"iffClass == 3"}},
      {"elxphconv", {"iffClass == 5"}},
      {"elxnonprompt", {"iffClass notin (2,3,5)"}},
      {"muxprompt", {"iffClass in (4,11)"}},
      {"muxnoflip", {"iffClass == 4"}},
      {"muxflip", {"iffClass == 11"}},
      {"npxall", {"iffClass notin (0,1,2,3,4,11)"}},
      {"npxtau", {"iffClass == 7"}},
      {"npxbjets", {"iffClass == 8"}},
      {"npxcjets", {"iffClass == 9"}},
      {"npxujets", {"iffClass == 10"}},
      {"unclassified", {"iffClass == 1"}},
      {"unknown", {"iffClass == 0"}},
      {"dRMatchedHbb", {"HadronConeExclExtendedTruthLabelID == 55", "n_truth_higgs > 0", "n_truth_top == 0"}},
      {"dRMatchedTop", {"n_truth_higgs == 0", "n_truth_top > 0"}},
      {"dRMatchedQCD", {"n_truth_higgs == 0", "n_truth_top == 0"}},
  };
  return table;
}

std::string known_names() {
  std::string out;
  for (const auto& [name, cuts] : flavours()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

const std::vector<std::string>* flavour_cuts(const std::string& name) {
  auto it = flavours().find(name);
  return it == flavours().end() ? nullptr : &it->second;
}

Labeller::Labeller(std::vector<std::string> class_names, bool require_labels)
    : class_names_(std::move(class_names)), require_labels_(require_labels) {
  // salt's LabellerConfig: use_labeller needs the classes to relabel to.
  if (class_names_.empty())
    throw UsageError("data.labeller_config.class_names: specify the classes to relabel to (use_labeller is true)");
  for (size_t i = 0; i < class_names_.size(); ++i) {
    const auto* cuts = flavour_cuts(class_names_[i]);
    if (!cuts)
      throw UsageError("data.labeller_config.class_names[" + std::to_string(i) + "]: '" + class_names_[i] +
                       "' is not an ftag flavour (known: " + known_names() + ")");
    std::vector<Cut> parsed;
    for (const auto& c : *cuts) parsed.push_back(parse_cut(c));
    cuts_.push_back(std::move(parsed));
  }
}

}  // namespace salt::data
