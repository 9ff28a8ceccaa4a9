// Many preprocessed files read as one: a wildcard in data.train_file / val_file /
// test_file (salt: `pp_output_train_*.h5`) becomes an HDF5 virtual dataset (VDS)
// file whose datasets concatenate the matching files' rows in sorted name order.
// The reader and the weak-shuffling sampler then see one file.
//
// Why checks of our own: HDF5 reads a VDS member that is missing as fill values
// (zeros), silently. So members are checked whenever a VDS is opened (virtual_members),
// and a run pins them like any input file.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace salt::data {

// salt's test: a '*', '?' or '[' in the file name (not in the directories).
bool has_wildcard(const std::string& path);

// The files matching `pattern` (glob in the file name), sorted by name. InputError
// "no files match <pattern>" when none does.
std::vector<std::filesystem::path> match_files(const std::string& pattern);

// salt's default place for the VDS of `pattern`: a folder next to the files named
// after the pattern with '*' -> "vds" and without ".h5", holding vds.h5
// (dir/pp_train_*.h5 -> dir/pp_train_vds/vds.h5).
std::filesystem::path default_virtual_path(const std::string& pattern);

struct VirtualMember {
  std::filesystem::path file;
  int64_t rows = 0;  // of the dataset asked about (jets for the global object)
};

// Writes (atomically: temp name, then rename; serialised across processes by a lock
// on the directory) a VDS file at `out` over every file matching `pattern`, or
// reuses `out` when it was built from the same files, unchanged since (path, size,
// modification time of each, recorded in the file). Every top-level dataset of the
// first file must exist in each other file with the same element type and the same
// shape after the first axis: InputError naming the first file that differs and
// how. Root and dataset attributes are copied from the first file.
std::filesystem::path build_virtual_file(const std::string& pattern, const std::filesystem::path& out);

// The top-level datasets of the first file, after checking that every other file has
// each with the same element type and shape after the first axis (InputError naming
// the first file that differs and how).
std::vector<std::string> same_datasets(const std::vector<std::filesystem::path>& files);

// The same over an explicit, ordered list of files (e.g. temp copies of the members).
void write_virtual_file(const std::vector<std::filesystem::path>& files, const std::filesystem::path& out,
                        const std::string& source_description);

// The member files of `dataset` in `file` with their rows, in order; empty when the
// dataset is not virtual. Checked before anything is read, since HDF5 reads what a
// mapping lacks as fill values (zeros) and recurses without end through a mapping
// onto itself: InputError naming the member when it is missing, lacks the source
// dataset or one of its fields, has fewer rows than the mapping reads, or when the
// mappings (through virtual sources too) lead back to a dataset being resolved.
std::vector<VirtualMember> virtual_members(const std::filesystem::path& file, const std::string& dataset);

}  // namespace salt::data
