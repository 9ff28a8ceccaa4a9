#include "deploy/compare_models.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/errors.h"
#include "data/cuts.h"
#include "data/h5_file.h"

namespace salt::deploy {
namespace fs = std::filesystem;

namespace {

// The global objects' records of one file, with field access by name.
struct Jets {
  data::h5::CompoundLayout layout;
  std::vector<uint8_t> records;
  int64_t rows = 0;
  std::string where;

  static Jets read(const fs::path& path, int64_t num) {
    auto file = data::h5::File::open_read(path);
    if (!file.has_dataset("jets")) throw InputError("compare_models: no 'jets' dataset in " + path.string());
    auto ds = file.dataset("jets");
    Jets j;
    j.where = ds.where();
    j.layout = ds.layout();
    j.rows = num < 0 ? ds.rows() : std::min(num, ds.rows());
    j.records.resize(static_cast<size_t>(j.rows) * j.layout.record_size);
    ds.read_records(0, j.rows, 1, j.records.data());
    return j;
  }
  const data::h5::Field& field(const std::string& name) const {
    const auto* f = layout.find(name);
    if (!f) throw InputError("compare_models: no field '" + name + "' in " + where);
    return *f;
  }
  double value(const data::h5::Field& f, int64_t row) const {
    const uint8_t* p = records.data() + static_cast<size_t>(row) * layout.record_size + f.offset;
    using data::h5::Kind;
    auto read = [&](auto v) {
      std::memcpy(&v, p, sizeof v);
      return static_cast<double>(v);
    };
    if (f.type.kind == Kind::Float) return f.type.size == 4 ? read(float{}) : f.type.size == 8 ? read(double{}) : data::h5::half_to_float(read(uint16_t{}));
    if (f.type.kind == Kind::UInt) return f.type.size == 1 ? read(uint8_t{}) : f.type.size == 2 ? read(uint16_t{}) : f.type.size == 4 ? read(uint32_t{}) : read(uint64_t{});
    return f.type.size == 1 ? read(int8_t{}) : f.type.size == 2 ? read(int16_t{}) : f.type.size == 4 ? read(int32_t{}) : read(int64_t{});
  }
  data::ColumnKind kind(const data::h5::Field& f) const {
    if (f.type.kind != data::h5::Kind::Float) return data::ColumnKind::Int;
    return f.type.size == 2 ? data::ColumnKind::Half : f.type.size == 4 ? data::ColumnKind::Float : data::ColumnKind::Double;
  }
  // Rows passing every cut, in order.
  std::vector<int64_t> select(const std::vector<data::Cut>& cuts) const {
    std::vector<int64_t> rows_out;
    for (int64_t r = 0; r < rows; ++r) {
      bool pass = true;
      for (const auto& c : cuts) {
        const auto& f = field(c.variable);
        const double v = value(f, r);
        auto x = f.type.is_integer() ? data::CutNumber::of_int(static_cast<int64_t>(v)) : data::CutNumber::of_float(v);
        pass = pass && c.passes(x, kind(f));
      }
      if (pass) rows_out.push_back(r);
    }
    return rows_out;
  }
};

std::vector<double> column(const Jets& j, const std::string& name, const std::vector<int64_t>& rows, const fs::path& file) {
  const auto& f = j.field(name);
  if (f.type != data::h5::kF4)
    throw InputError("compare_models: " + name + " in " + file.string() + " is not float32. Please compare at full precision.");
  std::vector<double> v;
  for (auto r : rows) {
    v.push_back(j.value(f, r));
    if (std::isnan(v.back())) throw InputError("compare_models: " + name + " in " + file.string() + " contains NaNs.");
  }
  return v;
}

}  // namespace

std::vector<VarComparison> compare_models(const CompareOptions& o, std::ostream& out) {
  const auto file_b = o.file_b.value_or(o.file_a);
  const auto tagger_b = o.tagger_b.value_or(o.tagger_a);
  if (fs::absolute(file_b) == fs::absolute(o.file_a) && tagger_b == o.tagger_a)
    throw UsageError("compare_models: attempted to compare the same model (give --file_b or --tagger_b)");
  const auto a = Jets::read(o.file_a, o.num), b = Jets::read(file_b, o.num);
  std::vector<data::Cut> cuts;
  for (const auto& c : o.cuts) {
    data::Cut cut;
    try {
      cut = data::parse_cut(c);
    } catch (const std::invalid_argument& e) {  // the user's --cuts text
      throw UsageError("compare_models: --cuts '" + c + "': " + e.what());
    }
    if (!o.cuts_given && (!a.layout.find(cut.variable) || !b.layout.find(cut.variable))) continue;
    cuts.push_back(cut);
  }
  const auto rows_a = a.select(cuts), rows_b = b.select(cuts);
  if (rows_a.size() != rows_b.size())
    throw InputError("compare_models: " + std::to_string(rows_a.size()) + " jets in " + o.file_a.string() + " but " +
                     std::to_string(rows_b.size()) + " in " + file_b.string() + " (after cuts)");
  if (rows_a.empty())  // "agreement" over nothing would pass any pair of taggers
    throw InputError("compare_models: no jets to compare in " + o.file_a.string() +
                     (cuts.empty() ? std::string(" (the file has none)") : " after the cuts"));
  out << "\nComparing " << rows_a.size() << " jets from \"" << o.file_a.string() << "\" and \"" << file_b.string() << "\"...\n\n";
  std::vector<VarComparison> results;
  for (const auto& v : o.vars) {
    VarComparison c;
    c.var_a = o.tagger_a + (o.gaussian_regression ? "_" : "_p") + v;
    c.var_b = tagger_b + (o.gaussian_regression ? "_" : "_p") + v;
    const auto xa = column(a, c.var_a, rows_a, o.file_a), xb = column(b, c.var_b, rows_b, file_b);
    std::vector<double> diff(xa.size());
    for (size_t i = 0; i < xa.size(); ++i) {
      diff[i] = std::abs(xa[i] - xb[i]);
      c.above_1e6 += diff[i] > 1e-6;
      c.close = c.close && diff[i] <= 1e-6 + 1e-4 * std::abs(xb[i]);
      c.max = std::max(c.max, diff[i]);
      c.mean += diff[i] / static_cast<double>(xa.size());
    }
    out << "Comparing " << c.var_a << " and " << c.var_b << "...\n";
    char line[160];
    for (int e = 7; e >= 2; --e)
      for (double m : {1.0, 5.0}) {
        const double region = m * std::pow(10.0, -e);
        const auto n = std::count_if(diff.begin(), diff.end(), [&](double d) { return d > region; });
        std::snprintf(line, sizeof line, "Differences of %.1e: %.2f%%\n", region, diff.empty() ? 0.0 : 100.0 * n / diff.size());
        out << line;
        if (n == 0) goto done;
      }
  done:
    if (!diff.empty()) {
      std::nth_element(diff.begin(), diff.begin() + diff.size() / 2, diff.end());
      c.median = diff[diff.size() / 2];
    }
    std::snprintf(line, sizeof line, "max %.2e | mean %.2e | median %.2e | above 1e-6: %lld\n\n", c.max, c.mean, c.median,
                  static_cast<long long>(c.above_1e6));
    out << line;
    results.push_back(c);
  }
  for (const auto& c : results)
    if (!c.close)
      throw InputError("compare_models: " + c.var_a + " and " + c.var_b + " differ beyond rtol 1e-4, atol 1e-6 (max " +
                       std::to_string(c.max) + ")");
  return results;
}

}  // namespace salt::deploy
