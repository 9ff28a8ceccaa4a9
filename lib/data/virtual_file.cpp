#include "data/virtual_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fnmatch.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "data/h5_file.h"
#include "data/h5_internal.h"

namespace salt::data {
namespace fs = std::filesystem;
using h5::Guard;
using h5::Id;

namespace {

constexpr const char* kSourcesAttr = "salt_vds_sources";  // what the file was built from

// One line per file: path, size, modification time; equal lines = the same inputs.
std::string describe_sources(const std::vector<fs::path>& files) {
  std::string out;
  for (const auto& f : files) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    const auto mtime = fs::last_write_time(f, ec).time_since_epoch();
    out += fmt::format("{}\t{}\t{}\n", f.string(), size,
                       std::chrono::duration_cast<std::chrono::nanoseconds>(mtime).count());
  }
  return out;
}

std::string recorded_sources(const fs::path& file) {
  try {
    auto attrs = h5::File::open_read(file).attributes();
    return attrs[kSourcesAttr] ? attrs[kSourcesAttr].as<std::string>() : "";
  } catch (const std::exception&) {
    return "";  // unreadable or not ours: rebuild
  }
}

// In VDS source file names '%' starts a printf-like pattern; a literal one is "%%".
std::string escape_percent(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '%' ? std::string("%%") : std::string(1, c);
  return out;
}

std::string unescape_percent(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '%' && i + 1 < s.size() && s[i + 1] == '%') ++i;
  }
  return out;
}

struct DatasetShape {
  Id type;
  std::vector<hsize_t> dims;
};

DatasetShape shape_of(const h5::Dataset& ds) { return {ds.file_type(), ds.shape()}; }

std::string dims_text(const std::vector<hsize_t>& dims) {
  std::string out;
  for (size_t i = 1; i < dims.size(); ++i) out += fmt::format("{}{}", out.empty() ? "" : ", ", dims[i]);
  return "(N" + (out.empty() ? "" : ", " + out) + ")";
}

// Why `theirs` differs from `ours` (both compound): the first field missing, extra or retyped.
std::string field_difference(const h5::Dataset& ours, const h5::Dataset& theirs) {
  if (!ours.is_compound() || !theirs.is_compound()) return "another element type";
  // reads as: "in dataset 'jets', field 'pt' is f2, not f4"
  const auto &a = ours.layout(), &b = theirs.layout();
  for (const auto& f : a.fields) {
    const auto* g = b.find(f.name);
    if (!g) return fmt::format("no field '{}'", f.name);
    if (g->type != f.type) return fmt::format("field '{}' is {}, not {}", f.name, g->type.str(), f.type.str());
  }
  for (const auto& g : b.fields)
    if (!a.find(g.name)) return fmt::format("an extra field '{}'", g.name);
  return "the same fields in another order or layout";
}

}  // namespace

std::vector<std::string> same_datasets(const std::vector<fs::path>& files) {
  const auto first = h5::File::open_read(files.front());
  std::vector<std::string> names;
  for (const auto& n : first.names())
    if (first.has_dataset(n)) names.push_back(n);
  if (names.empty()) throw InputError(files.front().string() + ": no datasets to combine");
  for (size_t i = 1; i < files.size(); ++i) {
    const auto other = h5::File::open_read(files[i]);
    for (const auto& n : names) {
      if (!other.has_dataset(n))
        throw InputError(fmt::format("{} differs from {}: no dataset '{}'", files[i].string(), files.front().string(), n));
      const auto ours = first.dataset(n), theirs = other.dataset(n);
      const auto a = shape_of(ours), b = shape_of(theirs);
      if (H5Tequal(a.type.get(), b.type.get()) <= 0)
        throw InputError(fmt::format("{} differs from {}: in dataset '{}', {}", files[i].string(),
                                     files.front().string(), n, field_difference(ours, theirs)));
      if (a.dims.size() != b.dims.size() || !std::equal(a.dims.begin() + 1, a.dims.end(), b.dims.begin() + 1))
        throw InputError(fmt::format("{} differs from {}: in dataset '{}', shape {}, not {}", files[i].string(),
                                     files.front().string(), n, dims_text(b.dims), dims_text(a.dims)));
    }
  }
  return names;
}

namespace {

// One virtual dataset: the members' rows one after another.
void write_virtual_dataset(const h5::File& out, const std::string& name, const std::vector<fs::path>& files) {
  std::vector<h5::File> inputs;
  std::vector<std::vector<hsize_t>> dims;
  for (const auto& f : files) {
    inputs.push_back(h5::File::open_read(f));
    dims.push_back(inputs.back().dataset(name).shape());
  }
  std::vector<hsize_t> total = dims.front();
  total[0] = 0;
  for (const auto& d : dims) total[0] += d[0];
  const int rank = static_cast<int>(total.size());
  Id vspace(H5Screate_simple(rank, total.data(), nullptr), H5Sclose);
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  hsize_t offset = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    std::vector<hsize_t> start(total.size(), 0);
    start[0] = offset;
    Id src(H5Screate_simple(rank, dims[i].data(), nullptr), H5Sclose);
    if (dims[i][0] > 0) {  // an empty member contributes nothing (an empty selection is refused)
      H5Sselect_hyperslab(vspace.get(), H5S_SELECT_SET, start.data(), nullptr, dims[i].data(), nullptr);
      if (H5Pset_virtual(dcpl.get(), vspace.get(), escape_percent(fs::absolute(files[i]).string()).c_str(),
                         name.c_str(), src.get()) < 0)
        h5::detail::fail(fmt::format("cannot map {} into {}", files[i].string(), out.shown().string()));
    }
    offset += dims[i][0];
  }
  H5Sselect_all(vspace.get());
  const auto first = inputs.front().dataset(name);
  const auto type = first.file_type();
  Id ds(H5Dcreate2(out.id(), name.c_str(), type.get(), vspace.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) h5::detail::fail(fmt::format("cannot write {}", out.shown().string()));
  h5::copy_attributes(first.id(), ds.get());
}

// Holds an exclusive lock on a directory while alive (no lock file left behind).
class DirLock {
 public:
  explicit DirLock(const fs::path& dir) : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~DirLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_;
};

}  // namespace

bool has_wildcard(const std::string& path) {
  const auto name = fs::path(path).filename().string();
  return name.find_first_of("*?[") != std::string::npos;
}

std::vector<fs::path> match_files(const std::string& pattern) {
  const fs::path p(pattern);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string name = p.filename().string();
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (fnmatch(name.c_str(), it->path().filename().c_str(), 0) != 0) continue;
    // Its own error code: a failed status() must not end the listing (the
    // files after it were dropped silently).
    std::error_code status_ec;
    const auto status = fs::status(it->path(), status_ec);
    if (!fs::exists(status)) {
      std::error_code link_ec;
      if (fs::is_symlink(fs::symlink_status(it->path(), link_ec)))
        throw InputError(fmt::format("{} matches {}, a symbolic link that leads to no file ({})", pattern,
                                     it->path().string(), status_ec ? status_ec.message() : "dangling"));
      continue;
    }
    if (fs::is_regular_file(status)) out.push_back(p.has_parent_path() ? dir / it->path().filename() : it->path().filename());
  }
  if (out.empty())
    throw InputError(fmt::format("no files match {}{}", pattern,
                                 fs::is_directory(dir, ec) ? "" : " (no directory " + dir.string() + ")"));
  std::sort(out.begin(), out.end());
  return out;
}

fs::path default_virtual_path(const std::string& pattern) {
  const fs::path p(pattern);
  std::string name = p.filename().string();
  for (size_t at; (at = name.find('*')) != std::string::npos;) name.replace(at, 1, "vds");
  if (name.size() > 3 && name.compare(name.size() - 3, 3, ".h5") == 0) name.resize(name.size() - 3);
  return p.parent_path() / name / "vds.h5";
}

void write_virtual_file(const std::vector<fs::path>& files, const fs::path& out, const std::string& sources) {
  const auto names = same_datasets(files);
  write_via_temp(out, [&](const fs::path& tmp) {
    Guard guard;
    auto file = h5::File::create(tmp, out);
    for (const auto& n : names) write_virtual_dataset(file, n, files);
    h5::copy_attributes(h5::File::open_read(files.front()).id(), file.id());
    h5::write_attr(file.id(), kSourcesAttr, sources);
    file.flush();
    file.close();
  });
}

namespace {

// Whether every mapping of a file we wrote still finds its rows: a member replaced
// by another of the same size and time (so the same recorded sources) may not.
bool mappings_hold(const fs::path& vds) {
  try {
    const auto f = h5::File::open_read(vds);
    for (const auto& n : f.names())
      if (f.has_dataset(n)) (void)virtual_members(vds, n);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

fs::path build_virtual_file(const std::string& pattern, const fs::path& out) {
  auto files = match_files(pattern);
  std::error_code ec;
  // A VDS path inside the matched directory must not become its own member.
  files.erase(std::remove_if(files.begin(), files.end(),
                             [&](const fs::path& f) { return fs::exists(out, ec) && fs::equivalent(f, out, ec); }),
              files.end());
  if (files.empty()) throw InputError(fmt::format("no files match {} (besides the virtual file {})", pattern, out.string()));
  const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  const bool made_dir = !fs::exists(dir, ec);
  create_directories_or_fail(dir, fmt::format("directory for the virtual dataset of {}", pattern));
  try {
    DirLock lock(dir);  // ranks and simultaneous runs: one writes, the others reuse
    const std::string sources = describe_sources(files);
    if (fs::exists(out, ec) && recorded_sources(out) == sources && mappings_hold(out)) return out;
    write_virtual_file(files, out, sources);
  } catch (...) {
    if (made_dir) fs::remove(dir, ec);  // only if still empty
    throw;
  }
  return out;
}

namespace {

using Trail = std::vector<std::pair<std::string, std::string>>;  // (file, dataset) being resolved

std::string canonical_text(const fs::path& p) {
  std::error_code ec;
  const auto c = fs::weakly_canonical(p, ec);
  return (ec ? p : c).string();
}

// Mapping i's member file as HDF5 finds it: "." is the file itself, and a relative
// name is looked for next to the virtual file first.
fs::path member_file(const fs::path& file, hid_t dcpl, size_t i) {
  std::string name(static_cast<size_t>(std::max<ssize_t>(0, H5Pget_virtual_filename(dcpl, i, nullptr, 0))), '\0');
  H5Pget_virtual_filename(dcpl, i, name.data(), name.size() + 1);
  fs::path member = unescape_percent(name);
  if (member == ".") return file;
  if (member.is_relative() && fs::exists(file.parent_path() / member)) member = file.parent_path() / member;
  return member;
}

std::string source_dataset(hid_t dcpl, size_t i) {
  std::string name(static_cast<size_t>(std::max<ssize_t>(0, H5Pget_virtual_dsetname(dcpl, i, nullptr, 0))), '\0');
  H5Pget_virtual_dsetname(dcpl, i, name.data(), name.size() + 1);
  return name;
}

// The rows (first axis) a selection spans, or -1 where it has no bounds (unlimited).
int64_t selected_end(hid_t space) {
  std::vector<hsize_t> start(static_cast<size_t>(std::max(1, H5Sget_simple_extent_ndims(space)))), end(start.size());
  if (H5Sget_select_npoints(space) <= 0 || H5Sget_select_bounds(space, start.data(), end.data()) < 0) return -1;
  return static_cast<int64_t>(end[0] + 1);
}

// What HDF5 would silently fill with the fill value (zeros): a source dataset that
// is not there, fields the source lacks, rows the source no longer has.
void check_source(const fs::path& file, const std::string& dataset, const h5::Dataset& vds, const fs::path& member,
                  const std::string& source, hid_t dcpl, size_t i, int64_t mapped_rows) {
  const auto where = fmt::format("{}: member file {} of dataset '{}'", file.string(), member.string(), dataset);
  const auto m = h5::File::open_read(member);
  if (!m.has_dataset(source))
    throw InputError(fmt::format("{} has no dataset '{}' (HDF5 would read zeros for its rows)", where, source));
  const auto src = m.dataset(source);
  const auto ours = vds.file_type(), theirs = src.file_type();
  if (H5Tequal(ours.get(), theirs.get()) <= 0) {
    if (!vds.is_compound() || !src.is_compound())
      throw InputError(fmt::format("{}: its '{}' has {}", where, source, field_difference(vds, src)));
    for (const auto& f : vds.layout().fields)
      if (!src.layout().find(f.name))
        throw InputError(fmt::format("{}: its '{}' has no field '{}' (HDF5 would read zeros for it)", where, source,
                                     f.name));
  }
  Id sspace(H5Pget_virtual_srcspace(dcpl, i), H5Sclose);
  // "All of the source" (h5py's VirtualSource without a slice) is as many rows as
  // the mapping's share of the virtual dataset: a shorter source fails at read.
  const int64_t needed = H5Sget_select_type(sspace.get()) == H5S_SEL_ALL ? mapped_rows : selected_end(sspace.get());
  const auto rows = src.shape().empty() ? int64_t{0} : static_cast<int64_t>(src.shape()[0]);
  if (needed > rows)
    throw InputError(fmt::format("{}: its '{}' has {} rows, the virtual dataset reads {} (the member changed after "
                                 "the virtual file was written: write it again)",
                                 where, source, rows, needed));
}

// Rows no mapping fills read as the fill value (zeros): the virtual dataset is
// larger than its members (a member gone from the list, a wrong shape).
void check_rows_mapped(const fs::path& file, const std::string& dataset, int64_t rows,
                       std::vector<std::pair<int64_t, int64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  int64_t filled = 0;
  for (const auto& [begin, end] : spans) {
    if (begin > filled) break;
    filled = std::max(filled, end);
  }
  if (filled >= rows) return;
  int64_t gap_end = rows;
  for (const auto& [begin, end] : spans)
    if (begin > filled) gap_end = std::min(gap_end, begin);
  throw InputError(fmt::format("{}: rows {}..{} of dataset '{}' map to no member file (HDF5 would read its fill "
                               "value for them): write the virtual file again",
                               file.string(), filled, gap_end, dataset));
}

std::vector<VirtualMember> checked_members(const fs::path& file, const std::string& dataset, Trail& trail) {
  const auto f = h5::File::open_read(file);
  const auto ds = f.dataset(dataset);
  Guard guard;
  Id dcpl(H5Dget_create_plist(ds.id()), H5Pclose);
  std::vector<VirtualMember> out;
  if (H5Pget_layout(dcpl.get()) != H5D_VIRTUAL) return out;
  trail.emplace_back(canonical_text(file), dataset);
  std::vector<std::pair<int64_t, int64_t>> spans;  // the virtual rows [begin, end) each mapping fills
  bool bounded = true;
  size_t count = 0;
  H5Pget_virtual_count(dcpl.get(), &count);
  for (size_t i = 0; i < count; ++i) {
    const auto member = member_file(file, dcpl.get(), i);
    const auto source = source_dataset(dcpl.get(), i);
    std::error_code ec;
    if (!fs::is_regular_file(member, ec))
      throw InputError(fmt::format("{}: member file {} of dataset '{}' is missing (HDF5 would read zeros for its "
                                   "rows)",
                                   file.string(), member.string(), dataset));
    if (std::find(trail.begin(), trail.end(), std::pair{canonical_text(member), source}) != trail.end())
      throw InputError(fmt::format("{}: dataset '{}' is a virtual dataset that maps onto itself (through {} '{}'); "
                                   "HDF5 cannot read it",
                                   file.string(), dataset, member.string(), source));
    Id vspace(H5Pget_virtual_vspace(dcpl.get(), i), H5Sclose);
    std::vector<hsize_t> start(static_cast<size_t>(std::max(1, H5Sget_simple_extent_ndims(vspace.get())))),
        end(start.size());
    if (H5Sget_select_bounds(vspace.get(), start.data(), end.data()) < 0) bounded = false;
    const auto rows = static_cast<int64_t>(end[0] - start[0] + 1);
    check_source(file, dataset, ds, member, source, dcpl.get(), i, rows);
    checked_members(member, source, trail);  // a virtual source: its own members and cycles
    spans.emplace_back(static_cast<int64_t>(start[0]), static_cast<int64_t>(end[0]) + 1);
    out.push_back({member, rows});
  }
  if (bounded) check_rows_mapped(file, dataset, ds.rows(), spans);
  trail.pop_back();
  return out;
}

}  // namespace

std::vector<VirtualMember> virtual_members(const fs::path& file, const std::string& dataset) {
  Trail trail;
  return checked_members(file, dataset, trail);
}

}  // namespace salt::data
