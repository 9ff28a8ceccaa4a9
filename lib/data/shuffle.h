// `salt shuffle`: a pre-shuffled copy of one or many preprocessed files.
//
// Why: salt's weak shuffling reads contiguous batches and only shuffles their
// order, so a file written in physics order (one sample or flavour after another)
// gives batches of one kind. Shuffling the rows once, when writing, fixes that.
//
// Out of core, in a bounded memory budget (the data set may be many times the RAM):
//   pass 1 reads the inputs in order, block by block, and deals every jet (all its
//          datasets' rows together) into one of B bucket files on disk; the bucket
//          of each jet is drawn without replacement from B urns of fixed sizes, so
//          every arrangement is equally likely;
//   pass 2 loads one bucket at a time, permutes it (Fisher-Yates) and appends it to
//          the output.
// A uniform bucket assignment followed by uniform in-bucket permutations is a
// uniformly random permutation of all jets. Each bucket is at most half of the
// budget left after the 8 MiB set aside for HDF5; the bucket files need free space next to the output of about the
// uncompressed size of the data. The output is chunked and LZF-compressed like the
// preprocessing's (chunk shape of the first input), written under a temp name and
// renamed; bucket files are removed on every way out.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace salt::data {

struct ShuffleOptions {
  std::vector<std::string> inputs;  // files or wildcard patterns; all with the same datasets
  std::filesystem::path output;
  uint64_t seed = 42;
  int64_t memory_mb = 1024;  // peak growth of resident memory, HDF5's share (8 MiB) included; 10 to 16777216
  bool overwrite = false;    // replace an existing output (never an input)
};

struct ShuffleResult {
  int64_t jets = 0;
  int64_t buckets = 0;
  int64_t bytes_per_jet = 0;  // uncompressed, all datasets
};

// InputError on bad inputs (none matching, different datasets, rows differing between
// a file's datasets, an unwritable output); UsageError for a budget outside 10..16777216
// MiB or a file given twice (by device and inode); StopRequested on SIGINT/SIGTERM.
ShuffleResult shuffle_files(const ShuffleOptions& options);

}  // namespace salt::data
