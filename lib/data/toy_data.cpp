#include "data/toy_data.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <tuple>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/memory.h"
#include "core/signals.h"
#include "data/toy_support.h"

namespace salt::data {

namespace fs = std::filesystem;
using h5::FieldType;

namespace {

using toy::Rng;
using toy::splitmix64;
using toy::Moments;
using toy::BlockMoments;
using toy::PendingFiles;
using toy::yaml_number;
using toy::class_weights_yaml;


// --- the schema ------------------------------------------------------------------------------------

enum Origin : int8_t { Pileup = 0, Fake = 1, Primary = 2, FromB = 3, FromBC = 4, FromC = 5, FromTau = 6, OtherSecondary = 7 };

constexpr int kNumTrackFloats = 10;
constexpr int kNumTrackHits = 11;
const char* const kTrackFloats[kNumTrackFloats] = {
    "d0", "z0SinTheta", "dphi", "deta", "qOverP", "IP3D_signed_d0_significance", "IP3D_signed_z0_significance",
    "phiUncertainty", "thetaUncertainty", "qOverPUncertainty"};
const char* const kTrackHits[kNumTrackHits] = {
    "numberOfPixelHits", "numberOfSCTHits", "numberOfInnermostPixelLayerHits",
    "numberOfNextToInnermostPixelLayerHits", "numberOfInnermostPixelLayerSharedHits",
    "numberOfInnermostPixelLayerSplitHits", "numberOfPixelSharedHits", "numberOfPixelSplitHits",
    "numberOfSCTSharedHits", "numberOfPixelHoles", "numberOfSCTHoles"};

struct Track {
  float f[kNumTrackFloats];
  uint8_t hits[kNumTrackHits];
  int8_t origin;
  int8_t vertex;
};

struct Jet {
  float pt, eta;
  int32_t flavour, hadron_id;
  int64_t event;
  std::vector<Track> tracks;
};

// Field positions in the packed records of both datasets.
struct Layouts {
  FieldType ftype;  // float type of track inputs (f4 or f2)
  h5::CompoundBuilder jets, tracks, hadrons;
  size_t jet_size = 0, track_size = 0, hadron_size = 0;
  size_t t_parent, h_barcode, h_flavour, h_pt, h_lxy, h_deta, h_dphi, h_mass, h_valid;
  size_t j_pt, j_eta, j_hadron, j_event, j_flavour;
  size_t t_float[kNumTrackFloats], t_hits[kNumTrackHits], t_origin, t_vertex, t_valid;

  explicit Layouts(bool half) : ftype(half ? h5::kF2 : h5::kF4) {
    // Jet kinematics stay f4 even in half precision (UPP keeps pt in full precision:
    // MeV values overflow float16). Field order is UPP-like, not the model's order.
    jets.add("eventNumber", h5::kI8)
        .add("pt_btagJes", h5::kF4)
        .add("eta_btagJes", h5::kF4)
        .add("HadronConeExclTruthLabelID", h5::kI4)
        .add("flavour_label", h5::kI4);  // UPP appends flavour_label last
    h5::CompoundLayout jl = jets.layout();
    jet_size = jl.record_size;
    j_event = jl.find("eventNumber")->offset;
    j_pt = jl.find("pt_btagJes")->offset;
    j_eta = jl.find("eta_btagJes")->offset;
    j_hadron = jl.find("HadronConeExclTruthLabelID")->offset;
    j_flavour = jl.find("flavour_label")->offset;

    for (const char* name : kTrackFloats) tracks.add(name, ftype);
    tracks.add("ftagTruthOriginLabel", h5::kI1).add("ftagTruthVertexIndex", h5::kI1);
    tracks.add("ftagTruthParentBarcode", h5::kI4);
    for (const char* name : kTrackHits) tracks.add(name, h5::kU1);
    tracks.add("valid", h5::kBool);
    h5::CompoundLayout tl = tracks.layout();
    track_size = tl.record_size;
    for (int i = 0; i < kNumTrackFloats; ++i) t_float[i] = tl.find(kTrackFloats[i])->offset;
    for (int i = 0; i < kNumTrackHits; ++i) t_hits[i] = tl.find(kTrackHits[i])->offset;
    t_origin = tl.find("ftagTruthOriginLabel")->offset;
    t_vertex = tl.find("ftagTruthVertexIndex")->offset;
    t_valid = tl.find("valid")->offset;
    t_parent = tl.find("ftagTruthParentBarcode")->offset;

    hadrons.add("barcode", h5::kI4).add("flavour", h5::kI4);
    for (const char* name : {"pt", "Lxy", "deta", "dphi", "mass"}) hadrons.add(name, h5::kF4);
    hadrons.add("valid", h5::kBool);
    h5::CompoundLayout hl = hadrons.layout();
    hadron_size = hl.record_size;
    h_barcode = hl.find("barcode")->offset;
    h_flavour = hl.find("flavour")->offset;
    h_pt = hl.find("pt")->offset;
    h_lxy = hl.find("Lxy")->offset;
    h_deta = hl.find("deta")->offset;
    h_dphi = hl.find("dphi")->offset;
    h_mass = hl.find("mass")->offset;
    h_valid = hl.find("valid")->offset;
  }
};

// --- the physics caricature ---------------------------------------------------------------------

// Adds one track of the given origin. `ip` is the true transverse impact parameter (mm)
// of displaced tracks, `frac_pt` the track's share of the jet pt.
void add_track(Rng& rng, Jet& jet, Origin origin, int8_t vertex, double ip, double frac_pt) {
  Track t{};
  const double jet_pt_gev = jet.pt / 1000.0;
  const bool fake = origin == Fake;
  const bool displaced = origin >= FromB && origin <= OtherSecondary;
  double pt_gev = std::max(0.5, frac_pt * jet_pt_gev);
  double eta = jet.eta;
  // Resolution improves with momentum; fakes are poorly measured.
  double sigma_d0 = std::sqrt(0.010 * 0.010 + std::pow(0.08 / pt_gev, 2)) * (fake ? 3.0 : 1.0);
  double sigma_z0 = 1.5 * sigma_d0 * std::cosh(eta) * 0.6;

  double d0, z0, sd0_sign;
  if (displaced) {
    // Lifetime sign: positive when the track crosses the jet axis in front of the PV.
    sd0_sign = rng.bernoulli(0.92) ? 1.0 : -1.0;
    double d0_abs = std::abs(ip + rng.normal(0.0, sigma_d0));
    d0 = (rng.bernoulli(0.5) ? 1.0 : -1.0) * d0_abs;
    const double z0_smear = rng.normal(0.0, sigma_z0);  // drawn first (see add_displaced_track)
    z0 = z0_smear + (rng.bernoulli(0.5) ? 1 : -1) * 0.7 * ip;
  } else if (origin == Pileup) {
    d0 = rng.normal(0.0, sigma_d0 * 1.5);
    z0 = rng.normal(0.0, 1.5);  // another vertex along the beam
    sd0_sign = rng.bernoulli(0.5) ? 1.0 : -1.0;
  } else if (fake) {
    d0 = rng.normal(0.0, 0.3);
    z0 = rng.normal(0.0, 0.8);
    sd0_sign = rng.bernoulli(0.5) ? 1.0 : -1.0;
  } else {  // Primary
    d0 = rng.normal(0.0, sigma_d0);
    z0 = rng.normal(0.0, sigma_z0);
    sd0_sign = rng.bernoulli(0.5) ? 1.0 : -1.0;
  }
  double z0_sin_theta = z0 / std::cosh(eta);
  double sz0_sign = rng.bernoulli(displaced ? 0.8 : 0.5) ? 1.0 : -1.0;

  double spread = (origin == Pileup || fake) ? 0.25 : 0.12 * std::sqrt(50.0 / std::max(20.0, jet_pt_gev));
  if (displaced) spread *= 0.6;
  double dphi = std::clamp(rng.normal(0.0, spread), -0.4, 0.4);
  double deta = std::clamp(rng.normal(0.0, spread), -0.4, 0.4);
  double p_mev = pt_gev * 1000.0 * std::cosh(eta + deta);
  double charge = rng.bernoulli(0.5) ? 1.0 : -1.0;
  double qoverp = charge / p_mev;

  t.f[0] = static_cast<float>(d0);
  t.f[1] = static_cast<float>(z0_sin_theta);
  t.f[2] = static_cast<float>(dphi);
  t.f[3] = static_cast<float>(deta);
  t.f[4] = static_cast<float>(qoverp);
  t.f[5] = static_cast<float>(sd0_sign * std::abs(d0) / sigma_d0);
  t.f[6] = static_cast<float>(sz0_sign * std::abs(z0_sin_theta) / (sigma_z0 / std::cosh(eta)));
  t.f[7] = static_cast<float>(sigma_d0 * 0.012 * rng.uniform(0.8, 1.2));
  t.f[8] = static_cast<float>(sigma_z0 * 0.002 * rng.uniform(0.8, 1.2));
  t.f[9] = static_cast<float>(std::abs(qoverp) * (fake ? 0.08 : 0.02) * rng.uniform(0.7, 1.3));

  // Hits: displaced decays beyond the innermost layer miss it; fakes have few hits,
  // more holes; dense b-jet cores share more pixel hits.
  const bool beyond_ibl = displaced && ip > 0.3 && rng.bernoulli(std::min(0.8, ip / 2.0));
  const double dense = (origin == FromB || origin == FromBC) ? 0.12 : 0.04;
  int ibl = beyond_ibl ? 0 : (rng.bernoulli(0.97) ? 1 : 0);
  int nibl = rng.bernoulli(beyond_ibl ? 0.6 : 0.95) ? 1 : 0;
  const int extra_pix = rng.bernoulli(0.3) ? 1 : 0;  // each draw its own statement: see add_displaced_track
  const int lost_pix = fake && rng.bernoulli(0.5) ? 1 : 0;
  int pix = ibl + nibl + 2 + extra_pix - lost_pix;
  const int sct_hits = rng.poisson(1.2);
  int sct = 7 + sct_hits - (fake ? rng.poisson(1.5) : 0);
  t.hits[0] = static_cast<uint8_t>(std::max(0, pix));
  t.hits[1] = static_cast<uint8_t>(std::max(0, sct));
  t.hits[2] = static_cast<uint8_t>(ibl);
  t.hits[3] = static_cast<uint8_t>(nibl);
  t.hits[4] = static_cast<uint8_t>(ibl && rng.bernoulli(dense) ? 1 : 0);
  t.hits[5] = static_cast<uint8_t>(ibl && rng.bernoulli(dense * 0.8) ? 1 : 0);
  t.hits[6] = static_cast<uint8_t>(rng.bernoulli(dense) ? 1 + rng.poisson(0.3) : 0);
  t.hits[7] = static_cast<uint8_t>(rng.bernoulli(dense * 0.8) ? 1 : 0);
  t.hits[8] = static_cast<uint8_t>(rng.bernoulli(fake ? 0.2 : 0.03) ? 1 : 0);
  t.hits[9] = static_cast<uint8_t>(rng.bernoulli(fake ? 0.3 : 0.03) ? 1 : 0);
  t.hits[10] = static_cast<uint8_t>(rng.bernoulli(fake ? 0.4 : 0.05) ? 1 : 0);
  t.origin = origin;
  t.vertex = vertex;
  jet.tracks.push_back(t);
}

// A track of a displaced vertex: pT fraction frac_min + Exp(frac_scale), impact
// parameter Exp(ip_scale). The two used to be drawn inside one call's arguments,
// whose order C++ leaves to the compiler (GCC drew the last argument first, clang
// the first), so one seed gave two data sets; drawn here in GCC's order, data
// written before stay the same.
void add_displaced_track(Rng& rng, Jet& jet, Origin origin, int8_t vertex, double ip_scale, double frac_min,
                         double frac_scale) {
  const double frac = frac_min + rng.exponential(frac_scale);
  const double ip = rng.exponential(ip_scale);
  add_track(rng, jet, origin, vertex, ip, frac);
}

Jet make_jet(Rng& rng, int64_t event) {
  Jet jet;
  jet.event = event;
  double u = rng.uniform();
  jet.flavour = u < 0.30 ? 0 : u < 0.50 ? 1 : u < 0.95 ? 2 : 3;
  static const int32_t kHadron[] = {5, 4, 0, 15};
  jet.hadron_id = kHadron[jet.flavour];
  // Same kinematics for every flavour, as after UPP's resampling.
  double pt_gev = 20.0 + rng.exponential(60.0);
  jet.pt = static_cast<float>(std::min(pt_gev, 3000.0) * 1000.0);
  jet.eta = static_cast<float>(rng.uniform(-2.5, 2.5));
  const double jpt = jet.pt / 1000.0;

  // Fragmentation tracks from the primary vertex (vertex index 0), pileup (-2), fakes (-1).
  int n_primary = 1 + rng.poisson(3.0 + std::min(jpt, 400.0) / 60.0);
  for (int i = 0; i < n_primary; ++i) add_track(rng, jet, Primary, 0, 0.0, rng.exponential(0.04));
  for (int i = 0, n = rng.poisson(0.8); i < n; ++i) add_track(rng, jet, Pileup, -2, 0.0, rng.exponential(0.02));
  for (int i = 0, n = rng.poisson(0.25); i < n; ++i) add_track(rng, jet, Fake, -1, 0.0, rng.exponential(0.03));

  // Heavy-flavour decays: boosted flight -> displaced tracks sharing a vertex index.
  const double boost = std::min(1.0 + jpt / 60.0, 6.0);
  switch (jet.flavour) {
    case 0: {  // b: B vertex (index 1), often a cascade C vertex (index 2)
      for (int i = 0, n = 2 + rng.poisson(1.2); i < n; ++i)
        add_displaced_track(rng, jet, FromB, 1, 0.18 * boost, 0.05, 0.08);
      if (rng.bernoulli(0.75))
        for (int i = 0, n = 1 + rng.poisson(0.8); i < n; ++i)
          add_displaced_track(rng, jet, FromBC, 2, 0.25 * boost, 0.04, 0.06);
      break;
    }
    case 1:  // c: one less displaced vertex
      for (int i = 0, n = 1 + rng.poisson(0.9); i < n; ++i)
        add_displaced_track(rng, jet, FromC, 1, 0.08 * boost, 0.05, 0.08);
      break;
    case 3:  // tau: 1 or 3 prongs, mildly displaced
      for (int i = 0, n = rng.bernoulli(0.75) ? 1 : 3; i < n; ++i)
        add_displaced_track(rng, jet, FromTau, 1, 0.05 * boost, 0.15, 0.15);
      break;
    default:  // light: occasionally a material interaction / long-lived light hadron
      if (rng.bernoulli(0.08))
        for (int i = 0; i < 2; ++i) add_displaced_track(rng, jet, OtherSecondary, 1, 1.0, 0.0, 0.05);
      break;
  }
  // Like the track dumper: highest |d0 significance| first.
  std::stable_sort(jet.tracks.begin(), jet.tracks.end(),
                   [](const Track& a, const Track& b) { return std::abs(a.f[5]) > std::abs(b.f[5]); });
  return jet;
}

// --- truth hadrons (MaskFormer's objects) -----------------------------------------------------------
// The b and c hadrons whose decays made the displaced tracks: the B of a b jet (its
// FromB tracks), the cascade C of a b jet (FromBC) and the C of a c jet (FromC).
// Their kinematics follow from their tracks (no further random draws, so adding them
// left every other value of the toy files unchanged): pt the tracks' summed pt, deta
// and dphi their mean direction, Lxy ten times their mean |d0|, the mass the hadron's.

constexpr int kMaxHadrons = 5;  // slots of truth_hadrons (salt's MaskFormer: 5 queries)

struct Hadron {
  int32_t barcode = -1, flavour = -1;
  float pt = 0, lxy = 0, deta = 0, dphi = 0, mass = 0;
  int ntracks = 0;
};

// The parent hadron's barcode of a track of a jet of this flavour (-1: none).
int32_t parent_barcode(int32_t jet_flavour, int8_t origin) {
  if (jet_flavour == 0 && origin == FromB) return 1001;
  if (jet_flavour == 0 && origin == FromBC) return 1002;
  if (jet_flavour == 1 && origin == FromC) return 1001;
  return -1;
}

std::vector<Hadron> truth_hadrons(const Jet& jet) {
  std::vector<Hadron> out;
  for (const auto& t : jet.tracks) {
    const int32_t bc = parent_barcode(jet.flavour, t.origin);
    if (bc < 0) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const Hadron& h) { return h.barcode == bc; });
    if (it == out.end()) {
      Hadron h;
      h.barcode = bc;
      h.flavour = t.origin == FromB ? 5 : 4;
      h.mass = t.origin == FromB ? 5279.f : 1865.f;
      out.push_back(h);
      it = out.end() - 1;
    }
    const double p = 1.0 / std::max(1e-9, static_cast<double>(std::abs(t.f[4])));
    // cosh in double: glibc 2.41 rounds coshf correctly where 2.36 does not, and
    // the same seed must give the same data on every machine.
    it->pt += static_cast<float>(p / std::cosh(static_cast<double>(jet.eta + t.f[3])));
    it->deta += t.f[3];
    it->dphi += t.f[2];
    it->lxy += 10.f * std::abs(t.f[0]);
    ++it->ntracks;
  }
  for (auto& h : out) {
    h.deta /= static_cast<float>(h.ntracks);
    h.dphi /= static_cast<float>(h.ntracks);
    h.lxy /= static_cast<float>(h.ntracks);
  }
  return out;
}

// --- statistics for norm_dict / class_dict ---------------------------------------------------------


struct Stats {
  Moments jet[2];                                 // pt, eta
  Moments track[kNumTrackFloats + kNumTrackHits];  // GN2 inputs + holes, valid tracks only
  std::map<int64_t, int64_t> flavour, hadron, origin;
};

// The value as stored in the file (float16-rounded in half precision).
float stored(float v, bool half) { return half ? h5::half_to_float(h5::float_to_half(v)) : v; }

void put_float(uint8_t* p, float v, FieldType t) {
  if (t.size == 2) {
    uint16_t h = h5::float_to_half(v);
    std::memcpy(p, &h, 2);
  } else {
    std::memcpy(p, &v, 4);
  }
}


// The jet's truth hadrons into its kMaxHadrons slots (empty slots: barcode and
// flavour -1, NaN kinematics, valid false).
void write_hadrons(const Jet& jet, const Layouts& lay, uint8_t* slots) {
  const auto hadrons = truth_hadrons(jet);
  for (int k = 0; k < kMaxHadrons; ++k) {
    uint8_t* r = slots + static_cast<size_t>(k) * lay.hadron_size;
    Hadron h;
    if (k < static_cast<int>(hadrons.size())) h = hadrons[static_cast<size_t>(k)];
    const bool real = h.barcode >= 0;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float values[] = {real ? h.pt : nan, real ? h.lxy : nan, real ? h.deta : nan, real ? h.dphi : nan,
                            real ? h.mass : nan};
    const size_t offsets[] = {lay.h_pt, lay.h_lxy, lay.h_deta, lay.h_dphi, lay.h_mass};
    std::memcpy(r + lay.h_barcode, &h.barcode, 4);
    std::memcpy(r + lay.h_flavour, &h.flavour, 4);
    for (int v = 0; v < 5; ++v) std::memcpy(r + offsets[v], &values[v], 4);
    r[lay.h_valid] = real ? 1 : 0;
  }
}

// Writes `num_jets` jets to `tmp`; `shown` (the final name) is what messages name.
void write_toy_file_impl(const fs::path& tmp, const fs::path& shown, int64_t num_jets, const ToyDataOptions& o,
                         uint64_t stream, Stats* stats) {
  if (num_jets <= 0) throw InputError(fmt::format("Toy data: number of jets must be positive, got {}", num_jets));
  if (o.max_tracks < 1 || o.max_tracks > 127) throw InputError("Toy data: max_tracks must be in 1..127");
  const Layouts lay(o.half_precision);
  const int64_t L = o.max_tracks;
  const int64_t block = std::max<int64_t>(1, o.block_jets);

  h5::File file = h5::File::create(tmp, shown);
  {  // the datasets close before the file (H5Fclose only reports errors of the last close)
    h5::Id jet_type = lay.jets.build();
    h5::Id track_type = lay.tracks.build();
    h5::DatasetSpec jspec;
    jspec.shape = {static_cast<hsize_t>(num_jets)};
    jspec.compression = o.compression;
    h5::DatasetSpec tspec;
    tspec.shape = {static_cast<hsize_t>(num_jets), static_cast<hsize_t>(L)};
    tspec.chunk = {100, static_cast<hsize_t>(L)};  // UPP's H5Writer: (100,) + shape[1:]
    tspec.compression = o.compression;
    h5::Dataset jets = h5::create_dataset(file, "jets", jet_type.get(), jspec, lay.jet_size);
    h5::Dataset tracks = h5::create_dataset(file, "tracks", track_type.get(), tspec, lay.track_size);
    h5::Id hadron_type = lay.hadrons.build();
    h5::DatasetSpec hspec = tspec;
    hspec.shape = {static_cast<hsize_t>(num_jets), static_cast<hsize_t>(kMaxHadrons)};
    hspec.chunk = {100, static_cast<hsize_t>(kMaxHadrons)};
    h5::Dataset hadrons = h5::create_dataset(file, "truth_hadrons", hadron_type.get(), hspec, lay.hadron_size);

    std::vector<uint8_t> jbuf, tbuf, hbuf;
    std::map<int64_t, int64_t> flavour_counts;
    BlockMoments jet_bm[2];
    BlockMoments trk_bm[kNumTrackFloats + kNumTrackHits];
    for (int64_t first = 0, b = 0; first < num_jets; first += block, ++b) {
      // SIGINT/SIGTERM (with install_stop_handlers): stop between blocks; the callers'
      // PendingFiles remove the temp files while the exception unwinds.
      if (int sig = stop_signal()) throw StopRequested{sig};
      const int64_t n = std::min(block, num_jets - first);
      Rng rng(splitmix64(splitmix64(o.seed) ^ splitmix64(stream * 0x100000001b3ull + static_cast<uint64_t>(b))));
      jbuf.assign(static_cast<size_t>(n) * lay.jet_size, 0);
      tbuf.assign(static_cast<size_t>(n * L) * lay.track_size, 0);  // padding: zeros, valid = FALSE
      hbuf.assign(static_cast<size_t>(n * kMaxHadrons) * lay.hadron_size, 0);
      for (int64_t i = 0; i < n; ++i) {
        Jet jet = make_jet(rng, static_cast<int64_t>(stream) * 1'000'000'000LL + first + i);
        uint8_t* jr = jbuf.data() + static_cast<size_t>(i) * lay.jet_size;
        std::memcpy(jr + lay.j_event, &jet.event, 8);
        std::memcpy(jr + lay.j_pt, &jet.pt, 4);
        std::memcpy(jr + lay.j_eta, &jet.eta, 4);
        std::memcpy(jr + lay.j_hadron, &jet.hadron_id, 4);
        std::memcpy(jr + lay.j_flavour, &jet.flavour, 4);
        ++flavour_counts[jet.flavour];
        if (stats) {
          jet_bm[0].add(jet.pt);
          jet_bm[1].add(jet.eta);
          ++stats->flavour[jet.flavour];
          ++stats->hadron[jet.hadron_id];
        }
        write_hadrons(jet, lay, hbuf.data() + static_cast<size_t>(i * kMaxHadrons) * lay.hadron_size);
        const int64_t nt = std::min<int64_t>(L, static_cast<int64_t>(jet.tracks.size()));
        for (int64_t k = 0; k < nt; ++k) {
          const Track& t = jet.tracks[static_cast<size_t>(k)];
          uint8_t* tr = tbuf.data() + static_cast<size_t>(i * L + k) * lay.track_size;
          for (int f = 0; f < kNumTrackFloats; ++f) put_float(tr + lay.t_float[f], t.f[f], lay.ftype);
          for (int h = 0; h < kNumTrackHits; ++h) tr[lay.t_hits[h]] = t.hits[h];
          std::memcpy(tr + lay.t_origin, &t.origin, 1);
          std::memcpy(tr + lay.t_vertex, &t.vertex, 1);
          const int32_t parent = parent_barcode(jet.flavour, t.origin);
          std::memcpy(tr + lay.t_parent, &parent, 4);
          tr[lay.t_valid] = 1;
          if (stats) {
            for (int f = 0; f < kNumTrackFloats; ++f) trk_bm[f].add(stored(t.f[f], o.half_precision));
            for (int h = 0; h < kNumTrackHits; ++h) trk_bm[kNumTrackFloats + h].add(t.hits[h]);
            ++stats->origin[t.origin];
          }
        }
      }
      jets.write_records(first, n, jbuf.data());
      tracks.write_records(first, n, tbuf.data());
      hadrons.write_records(first, n, hbuf.data());
      if (stats) {
        for (int v = 0; v < 2; ++v) jet_bm[v].flush_into(stats->jet[v]);
        for (int v = 0; v < kNumTrackFloats + kNumTrackHits; ++v) trk_bm[v].flush_into(stats->track[v]);
      }
    }

    // Metadata as UPP's merging stage writes it.
    h5::write_attr(jets.id(), "flavour_label", toy_flavour_classes());
    std::string counts = "{";
    for (size_t c = 0; c < toy_flavour_classes().size(); ++c)
      counts += fmt::format("{}\"{}\": {}", c ? ", " : "", toy_flavour_classes()[c],
                            flavour_counts[static_cast<int64_t>(c)]);
    counts += "}";
    h5::write_attr(file.id(), "writer_version", std::string("salt-cpp toy_data"));
    h5::write_attr(file.id(), "num_jets", num_jets);
    h5::write_attr(file.id(), "unique_jets", num_jets);
    h5::write_attr(file.id(), "jet_counts", counts);
    h5::write_attr(file.id(), "dsids", std::string("[999999]"));
    h5::write_attr(file.id(), "config",
                   fmt::format("{{\"generator\": \"salt-cpp toy_data\", \"seed\": {}, \"stream\": {}, \"num_jets\": {}, "
                               "\"compression\": \"{}\", \"precision\": \"{}\", \"max_tracks\": {}}}",
                               o.seed, stream, num_jets, h5::to_string(o.compression),
                               o.half_precision ? "half" : "full", L));
    h5::write_attr(file.id(), "upp_hash", std::string("toy"));
    h5::write_attr(file.id(), "resampling_method", std::string("none"));
    file.flush();  // HDF5 writes most cached chunks only here: a full disk shows up now
  }
  file.close();  // checked, and fsync'ed
}

}  // namespace

const std::vector<std::string>& toy_jet_variables() {
  static const std::vector<std::string> v = {"pt_btagJes", "eta_btagJes"};
  return v;
}

const std::vector<std::string>& toy_track_variables() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out(kTrackFloats, kTrackFloats + kNumTrackFloats);
    for (int i = 0; i < 9; ++i) out.emplace_back(kTrackHits[i]);  // holes are not GN2 inputs
    return out;
  }();
  return all;
}

const std::vector<std::string>& toy_track_extra_variables() {
  static const std::vector<std::string> v = {kTrackHits[9], kTrackHits[10]};
  return v;
}

const std::vector<std::string>& toy_flavour_classes() {
  static const std::vector<std::string> v = {"bjets", "cjets", "ujets", "taujets"};
  return v;
}

void write_toy_file(const fs::path& path, int64_t num_jets, const ToyDataOptions& options, uint64_t stream) {
  PendingFiles pending;
  write_toy_file_impl(pending.add(path), path, num_jets, options, stream, nullptr);
  pending.commit();
}

int64_t estimated_toy_bytes(const ToyDataOptions& o) {
  const Layouts lay(o.half_precision);
  // truth_hadrons is left out: mostly empty slots, it compresses to almost nothing.
  const double per_jet = static_cast<double>(lay.jet_size) + static_cast<double>(o.max_tracks * lay.track_size);
  // Measured: LZF and gzip keep 15-20% of the raw bytes (padded track slots are zeros).
  // The low end, so that only sizes that cannot fit are refused.
  const double kept = o.compression == h5::Compression::None ? 1.0 : 0.15;
  double jets = 0;
  for (int64_t n : {o.num_train, o.num_val, o.num_test}) jets += static_cast<double>(std::max<int64_t>(0, n));
  return static_cast<int64_t>(std::min(jets * per_jet * kept, 9e18));
}

ToyDataFiles toy_output_files(const ToyDataOptions& o) {
  if (o.out_dir.empty()) throw InputError("Toy data: no output directory given");
  if (o.num_train <= 0) throw InputError(fmt::format("Toy data: num_train must be positive, got {}", o.num_train));
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (!fs::is_directory(o.out_dir))
    throw InputError(fmt::format("Cannot create output directory {}: {}", o.out_dir.string(), ec.message()));
  return {o.out_dir / "pp_output_train.h5", o.out_dir / "pp_output_val.h5", o.out_dir / "pp_output_test_ttbar.h5",
          o.out_dir / "norm_dict.yaml", o.out_dir / "class_dict.yaml"};
}

ToyDataFiles write_toy_data(const ToyDataOptions& o) {
  const ToyDataFiles files = toy_output_files(o);
  std::error_code ec;
  int leftovers = 0;  // of a toydata killed before it could clean up (SIGKILL, a crash)
  for (const auto& f : {files.train, files.val, files.test, files.norm_dict, files.class_dict})
    leftovers += remove_dead_leftovers_of(f);
  if (leftovers > 0)
    spdlog::info("removed {} temp file(s) left in {} by killed processes", leftovers, o.out_dir.string());

  // A file this run writes none of, left from an earlier data set (another seed, other
  // sizes), would be read with the new ones as one set: refused, nothing replaced.
  for (const auto& [count, file, flag] : {std::tuple{o.num_val, files.val, "--num_val"}, {o.num_test, files.test, "--num_test"}})
    if (count <= 0 && fs::exists(fs::symlink_status(file, ec)))
      throw InputError(fmt::format("toydata: {} is left from an earlier data set and {} 0 writes none, so the new set "
                                   "would be read with it; remove it or choose another --output_dir",
                                   file.string(), flag));

  // Refuse up front what cannot fit, rather than fill the disk first.
  const fs::space_info space = fs::space(o.out_dir, ec);
  const int64_t estimate = estimated_toy_bytes(o);
  if (!ec && static_cast<uintmax_t>(estimate) > space.available)
    throw InputError(fmt::format("the toy data set needs about {} but {} has only {} free", bytes_text(estimate),
                                 o.out_dir.string(), bytes_text(static_cast<double>(space.available))));

  // Everything under temp names first, renamed together at the end: a failure or a
  // stop (SIGINT/SIGTERM) leaves no partial data set.
  PendingFiles pending;
  Stats stats;
  write_toy_file_impl(pending.add(files.train), files.train, o.num_train, o, 1, &stats);
  if (o.num_val > 0) write_toy_file_impl(pending.add(files.val), files.val, o.num_val, o, 2, nullptr);
  if (o.num_test > 0) write_toy_file_impl(pending.add(files.test), files.test, o.num_test, o, 3, nullptr);

  // norm_dict: mean/std of every input over all jets / all valid tracks of the training file.
  std::string norm = "jets:\n";
  for (int v = 0; v < 2; ++v)
    norm += fmt::format("  {}:\n    mean: {}\n    std: {}\n", toy_jet_variables()[static_cast<size_t>(v)],
                        yaml_number(stats.jet[v].mean), yaml_number(stats.jet[v].std()));
  norm += "tracks:\n";
  for (int v = 0; v < kNumTrackFloats + kNumTrackHits; ++v) {
    const char* name = v < kNumTrackFloats ? kTrackFloats[v] : kTrackHits[v - kNumTrackFloats];
    norm += fmt::format("  {}:\n    mean: {}\n    std: {}\n", name, yaml_number(stats.track[v].mean),
                        yaml_number(stats.track[v].std()));
  }
  write_file_synced(pending.add(files.norm_dict), norm, files.norm_dict);

  // class_dict: integer labels, except vertex indices (UPP skips *VertexIndex*).
  std::string cls = "jets:\n  flavour_label:\n" + class_weights_yaml(stats.flavour) +
                    "  HadronConeExclTruthLabelID:\n" + class_weights_yaml(stats.hadron) +
                    "tracks:\n  ftagTruthOriginLabel:\n" + class_weights_yaml(stats.origin);
  write_file_synced(pending.add(files.class_dict), cls, files.class_dict);
  if (int sig = stop_signal()) throw StopRequested{sig};
  pending.commit();
  return files;
}

}  // namespace salt::data
