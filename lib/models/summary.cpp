#include "models/summary.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

namespace salt::models {

ParamCounts count_parameters(const torch::nn::Module& module) {
  ParamCounts c;
  for (const auto& p : module.parameters(true)) (p.requires_grad() ? c.trainable : c.non_trainable) += p.numel();
  return c;
}

std::string human_count(int64_t n) {
  const char* units[] = {"", " K", " M", " B", " T"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 999.5 && u < 4) {
    v /= 1000.0;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  else
    std::snprintf(buf, sizeof buf, "%.1f%s", v, units[u]);
  return buf;
}

namespace {
// "salt::models::SaltModelImpl" or a name given to the Module constructor -> "SaltModel".
std::string type_name(const torch::nn::Module& m) {
  std::string n = m.name();
  auto pos = n.rfind("::");
  if (pos != std::string::npos) n = n.substr(pos + 2);
  if (n.size() > 4 && n.compare(n.size() - 4, 4, "Impl") == 0) n = n.substr(0, n.size() - 4);
  return n;
}
}  // namespace

std::string model_summary(const torch::nn::Module& module, int max_depth) {
  struct Row {
    std::string name, type, params;
  };
  std::vector<Row> rows;
  for (const auto& item : module.named_modules("", /*include_self=*/false)) {
    const auto& key = item.key();
    const int depth = 1 + static_cast<int>(std::count(key.begin(), key.end(), '.'));
    if (depth > max_depth) continue;
    rows.push_back({key, type_name(*item.value()), human_count(count_parameters(*item.value()).trainable +
                                                               count_parameters(*item.value()).non_trainable)});
  }
  size_t wi = std::to_string(rows.size()).size(), wn = 4, wt = 4, wp = 6;
  for (const auto& r : rows) {
    wn = std::max(wn, r.name.size());
    wt = std::max(wt, r.type.size());
    wp = std::max(wp, r.params.size());
  }
  auto pad = [](const std::string& s, size_t w) { return s + std::string(w > s.size() ? w - s.size() : 0, ' '); };
  std::ostringstream out;
  const std::string header = pad("", wi) + " | " + pad("Name", wn) + " | " + pad("Type", wt) + " | " + pad("Params", wp);
  const std::string rule(header.size(), '-');
  out << header << "\n" << rule << "\n";
  for (size_t i = 0; i < rows.size(); ++i)
    out << pad(std::to_string(i), wi) << " | " << pad(rows[i].name, wn) << " | " << pad(rows[i].type, wt) << " | "
        << pad(rows[i].params, wp) << "\n";
  out << rule << "\n";
  const auto c = count_parameters(module);
  char buf[64];
  auto line = [&](int64_t n, const char* what) {
    out << pad(human_count(n), 10) << what << " (" << n << ")\n";
  };
  line(c.trainable, "Trainable params");
  line(c.non_trainable, "Non-trainable params");
  line(c.trainable + c.non_trainable, "Total params");
  std::snprintf(buf, sizeof buf, "%-10.3fTotal estimated model params size (MB)\n",
                static_cast<double>(c.trainable + c.non_trainable) * 4.0 / 1e6);
  out << buf;
  return out.str();
}

}  // namespace salt::models
