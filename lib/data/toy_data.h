// A toy data set in exactly the preprocessing's (UPP) format, for trying salt-cpp
// without ATLAS data and for tests/benchmarks:
//   pp_output_train.h5, pp_output_val.h5, pp_output_test_ttbar.h5 - datasets `jets` (N,)
//   and `tracks` (N, 40), compound, chunked ((100, 40) for tracks, h5py's guess for jets)
//   and LZF-compressed by default; jets carry the `flavour_label` class-name attribute,
//   the root carries UPP's metadata attributes;
//   norm_dict.yaml, class_dict.yaml - computed from the training file like UPP does.
//
// The physics is a caricature that is LEARNABLE: b jets have a displaced secondary
// vertex (several tracks with large positive lifetime-signed IP significance sharing
// a vertex index, origin FromB/FromBC), c jets fewer and less displaced tracks (FromC),
// light jets mostly prompt tracks (Primary) plus pileup and fakes, taus 1-3 displaced
// tracks (FromTau). Fractions ~ b 30%, c 20%, light 45%, tau 5%.
// MaskFormer's objects: `truth_hadrons` (N, 5) holds the b and c hadrons whose decays
// made the displaced tracks (barcode, flavour 5/4, pt, Lxy, deta, dphi, mass, valid),
// and each track's ftagTruthParentBarcode names its hadron (-1: none).
//
// Deterministic from the seed (own RNG draws; no std:: distributions, whose output is
// implementation-defined). Generated and written in blocks, so 10M jets need ~30 MB.
// Every file is written under a temporary name and renamed when complete (for a data
// set: when all of them are).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/h5_file.h"

namespace salt::data {

struct ToyDataOptions {
  std::filesystem::path out_dir;
  int64_t num_train = 100'000;
  int64_t num_val = 20'000;
  int64_t num_test = 20'000;
  uint64_t seed = 42;
  h5::Compression compression = h5::Compression::Lzf;
  bool half_precision = false;  // float fields as f2 (UPP's precision: half)
  int64_t block_jets = 10'000;  // jets generated and written per step
  int max_tracks = 40;          // slots of the tracks dataset

  ToyDataOptions& set_out_dir(std::filesystem::path p) { out_dir = std::move(p); return *this; }
  ToyDataOptions& set_num_train(int64_t n) { num_train = n; return *this; }
  ToyDataOptions& set_num_val(int64_t n) { num_val = n; return *this; }
  ToyDataOptions& set_num_test(int64_t n) { num_test = n; return *this; }
  ToyDataOptions& set_seed(uint64_t s) { seed = s; return *this; }
  ToyDataOptions& set_compression(h5::Compression c) { compression = c; return *this; }
  ToyDataOptions& set_half_precision(bool b) { half_precision = b; return *this; }
};

struct ToyDataFiles {
  std::filesystem::path train, val, test, norm_dict, class_dict;
};

// Writes the five files into out_dir (created if needed); existing files are replaced.
// A count of 0 skips that file. InputError on bad options, on an estimated size beyond
// the free space of out_dir, or on I/O failure ("cannot write <file>: <reason>").
// All files are written under temp names and renamed together at the end; on any
// failure, or StopRequested (polled between blocks, see core/signals.h), the temp
// files are removed and no output file is touched.
ToyDataFiles write_toy_data(const ToyDataOptions& options);

// Checks out_dir and num_train, creates out_dir, and names the five output files
// (shared by write_toy_data and write_schema_toy_data). InputError when it cannot.
ToyDataFiles toy_output_files(const ToyDataOptions& options);

// A low estimate of the bytes write_toy_data writes (for the free-space check).
int64_t estimated_toy_bytes(const ToyDataOptions& options);

// One file with `num_jets` jets; `stream` makes the files of one data set independent.
void write_toy_file(const std::filesystem::path& path, int64_t num_jets, const ToyDataOptions& options,
                    uint64_t stream);

// The variables of the toy files (GN2's 2 jet + 19 track inputs, plus the holes DIPS uses).
const std::vector<std::string>& toy_jet_variables();
const std::vector<std::string>& toy_track_variables();  // GN2's 19
const std::vector<std::string>& toy_track_extra_variables();  // numberOfPixelHoles, numberOfSCTHoles
// Class names, in flavour_label order.
const std::vector<std::string>& toy_flavour_classes();  // bjets, cjets, ujets, taujets

}  // namespace salt::data
