// salt's MaskFormer.yaml (our equivalent at test sizes) on the toy data: it fits,
// `salt test` writes the objects, and the trained model finds the truth hadrons'
// vertices better than chance. Bad MaskFormer inputs are one line each and leave
// no run behind.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "training/fit_support.h"

namespace salt::testing {
namespace {

class MaskFormerFit : public FitTest {
 protected:
  void SetUp() override { make_toy_data(8000, 1000, 1000); }

  static std::vector<std::string> small(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"-c", (source_dir() / "tests/fixtures/maskformer/MaskFormer_small.yaml").string(),
                                  "--data.batch_size", "250", "--data.num_workers", "1",
                                  "--trainer.enable_progress_bar", "false"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
};

// salt's loose vertex criterion (recall >= 0.5 and purity >= 0.5, mask_utils.py's
// reco_metrics) recomputed from the prediction file, for the model and for chance:
// the true assignment of tracks to hadrons permuted among each jet's tracks (the
// right number of hadrons with the right number of tracks each, but random tracks). Also checks the file's layout and that each
// track's MaskIndex is the last object whose mask holds it.
const char* kVertexCheck = R"(
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
o, m, t = f["truth_hadrons"][:], f["object_masks"], f["tracks"]
assert o.shape == (1000, 5) and m.shape == (1000, 5, 40), (o.shape, m.shape)
assert m.dtype.names == ("truth_mask", "mask_logits") and m.dtype["truth_mask"] == np.int64, m.dtype  # as salt's
# salt's writer: the objects under the file's name, its fields first (floats as f4), then
# the object tasks' outputs, the class probabilities and class_label (int64)
with h5py.File(sys.argv[2], "r") as test:
    source = test["truth_hadrons"][:1000]
fields = source.dtype.names
names = o.dtype.names
assert names[:len(fields)] == fields, names
assert names[-4:] == ("MaskFormer_pb", "MaskFormer_pc", "MaskFormer_pnull", "class_label"), names
assert all(n.startswith("MaskFormer_") for n in names[len(fields):-1]) and len(names) > len(fields) + 4, names
assert o.dtype["class_label"] == np.int64 and all(o.dtype[n] == np.float32 for n in names[len(fields):-1]), o.dtype

def select_objects(batch, n_out, pv_raw, class_field, id_field, null_raw):
    # salt's _select_objects (salt/data/datasets.py) without cuts or sort_by, transcribed
    keep = batch["valid"].astype(bool)
    pv = np.isin(batch[class_field], list(pv_raw)) & keep
    out = np.zeros((batch.shape[0], n_out), dtype=batch.dtype)
    for j in range(batch.shape[0]):
        chosen = np.concatenate([np.where(pv[j])[0], np.where(keep[j] & ~pv[j])[0]])[:n_out]
        out[j, :len(chosen)] = batch[j][chosen]
    pad = ~out["valid"].astype(bool)
    out[id_field][pad] = -1
    out[class_field][pad] = null_raw
    return out

# pv_class 0 (salt's default) is b, raw 5: b hadrons first; the null class's raw -1
want = select_objects(source, 5, [5], "flavour", "barcode", -1)
for n in fields:
    a, b = o[n], want[n].astype(o.dtype[n])
    same = np.array_equal(a, b, equal_nan=True) if a.dtype.kind == "f" else np.array_equal(a, b)
    assert same, (n, np.argwhere(a != b)[:5])
probs = np.stack([o["MaskFormer_pb"], o["MaskFormer_pc"], o["MaskFormer_pnull"]], -1)
assert np.allclose(probs.sum(-1), 1, atol=1e-5)
pred_cls, tgt_cls = probs.argmax(-1), o["class_label"]
assert set(np.unique(tgt_cls)) <= {0, 1, 2}
pad = t["mask"]
truth = m["truth_mask"] > 0.5
held = 1 / (1 + np.exp(-m["mask_logits"].astype(np.float64))) > 0.5
index = np.full(pad.shape, -2)
for k in range(5):
    index[held[:, k]] = k
for s in range(0, len(index), 250):  # salt's indices_from_mask: shifted by each test batch's smallest index
    b = index[s:s + 250]
    if (b >= 0).any():
        b[b >= 0] -= b[b >= 0].min()
index[pad] = -1
assert (index == t["MaskFormer_MaskIndex"]).all()
# the truth: each hadron's mask is its tracks (ftagTruthParentBarcode == barcode)
bc, parent = o["barcode"], t["ftagTruthParentBarcode"]
want = (parent[:, None, :] == bc[:, :, None]) & (bc[:, :, None] != -1) & ~pad[:, None, :]
assert (want == truth).all()

def loose_eff(pred):
    both, npred, ntrue = (pred & truth).sum(-1), pred.sum(-1), truth.sum(-1)
    with np.errstate(all="ignore"):
        ok = (both / ntrue >= 0.5) & (both / npred >= 0.5) & (npred > 0)
    return ok[ntrue > 0].mean()

model = held & ~pad[:, None, :] & (pred_cls != 2)[:, :, None]
# chance: the true track-to-hadron assignment permuted at random among each jet's
# valid tracks (every hadron keeps its number of tracks, the tracks are random)
owner = np.where(truth.any(1), truth.argmax(1), -1)
rng = np.random.default_rng(7)
effs = []
for _ in range(20):
    shuffled = owner.copy()
    for j in range(len(owner)):
        valid = np.flatnonzero(~pad[j])
        shuffled[j, valid] = rng.permutation(owner[j, valid])
    chance = (shuffled[:, None, :] == np.arange(5)[None, :, None]) & ~pad[:, None, :]
    effs.append(loose_eff(chance))
print(loose_eff(model), np.mean(effs), int((truth.sum(-1) > 0).sum()))
)";

// salt's writer (predictionwriter.py) takes each track's MaskIndex from
// indices_from_mask on the whole batch's masks, which shifts them so that the batch's
// smallest index is 0. With one jet per batch the shift shows: each jet whose object 0
// holds no track starts from 0 all the same. Prints how many jets were shifted.
const char* kBatchShiftCheck = R"(
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
m, t = f["object_masks"], f["tracks"]
pad = t["mask"]
held = 1 / (1 + np.exp(-m["mask_logits"].astype(np.float64))) > 0.5
index = np.full(pad.shape, -2)
for k in range(held.shape[1]):
    index[held[:, k]] = k
shifted = 0
for j in range(len(index)):
    ok = index[j] >= 0
    if ok.any() and index[j][ok].min() > 0:
        shifted += 1
        index[j][ok] -= index[j][ok].min()
index[pad] = -1
assert (index == t["MaskFormer_MaskIndex"]).all(), np.argwhere(index != t["MaskFormer_MaskIndex"])[:5]
print(shifted)
)";

// The exported MaskFormer (salt to_onnx -mf hadron) run in ONNX Runtime on the
// first 300 test jets, one jet per call as Athena does, against salt's
// get_maskformer_outputs and indices_from_mask (transcribed) applied to salt test's
// prediction file: the leading hadron's regression values and each track's hadron
// index. The objects' order in the file does not matter: both sort them by pt.
// (salt's eager-only branch for a jet without null objects is counted, not used:
// its traced graph, like ours, has no such branch.)
const char* kOnnxObjectCheck = R"(
import sys, json, subprocess, tempfile, os, h5py, numpy as np, torch, yaml
onnx, pred, test, config, source = sys.argv[1:6]
cfg = yaml.safe_load(open(config))
jv, tv = cfg["data"]["variables"]["jets"], cfg["data"]["variables"]["tracks"]
targets = ["pt", "Lxy", "deta", "dphi", "mass"]
N = 300
with h5py.File(test) as f:
    jets, tracks = f["jets"][:N], f["tracks"][:N]
valid = tracks["valid"].astype(bool)
feeds = []
for j in range(N):
    jet = np.array([[jets[v][j] for v in jv]], dtype=np.float32)
    trk = np.stack([tracks[v][j][valid[j]] for v in tv], -1).astype(np.float32).reshape(-1, len(tv))
    feeds.append({"jet_features": {"dims": list(jet.shape), "data": [float(x) for x in jet.flatten()]},
                  "track_features": {"dims": list(trk.shape), "data": [float(x) for x in trk.flatten()]}})
work = tempfile.mkdtemp()
json.dump({"jets": feeds}, open(os.path.join(work, "in.json"), "w"))
subprocess.run(["node", os.path.join(source, "scripts", "ort_run.js"), onnx, os.path.join(work, "in.json"),
                os.path.join(work, "out.json")], check=True)
got = json.load(open(os.path.join(work, "out.json")))["jets"]

def indices_from_mask(mask, noindex=-2):
    indices = torch.ones((mask.shape[0], mask.shape[-1]), dtype=torch.long) * noindex
    nz = torch.where(mask)
    indices[nz[0], nz[2]] = nz[1]
    return indices

eager_branch = 0
def get_maskformer_outputs(masks, class_probs, regression, max_null=0.5):
    global eager_branch
    null_preds = class_probs[:, :, -1] > max_null
    if not null_preds.any():
        eager_branch += 1
    masks = masks.sigmoid() > 0.5
    expanded_null = null_preds.unsqueeze(-1).expand(-1, -1, masks.size(-1))
    masks[expanded_null] = torch.zeros_like(masks)[expanded_null]
    regression[null_preds] = -torch.inf
    order = torch.argsort(regression[:, :, 0], descending=True)
    regression[null_preds] = torch.nan
    masks = torch.gather(masks, 1, order.unsqueeze(-1).expand(-1, -1, masks.size(-1)))
    regression = torch.gather(regression, 1, order.unsqueeze(-1).expand(-1, -1, regression.size(-1)))
    return regression[:, 0], indices_from_mask(masks)

with h5py.File(pred) as f:
    o, logits = f["truth_hadrons"][:N], f["object_masks"]["mask_logits"][:N]
probs = torch.tensor(np.stack([o["MaskFormer_pb"], o["MaskFormer_pc"], o["MaskFormer_pnull"]], -1))
reg = torch.tensor(np.stack([o["MaskFormer_" + t] for t in targets], -1))
names = [f"MaskFormer_leading_hadron_{t}" for t in targets]
worst, index_diff, with_leading, assigned, tracks_total = 0.0, 0, 0, 0, 0
for j in range(N):
    m = torch.tensor(logits[j][:, valid[j]]).unsqueeze(0)
    lead, idx = get_maskformer_outputs(m, probs[j:j+1].clone(), reg[j:j+1].clone())
    onnx_lead = [got[j][n]["data"][0] for n in names]
    for want, have in zip(lead[0].tolist(), onnx_lead):
        if np.isnan(want) or have is None:
            assert np.isnan(want) and have is None, (j, want, have)
            continue
        worst = max(worst, abs(have - want) / max(1.0, abs(want)))
    with_leading += not np.isnan(lead[0, 0].item())
    have_idx = got[j]["MaskFormer_hadronIndex"]
    assert got[j]["MaskFormer_hadronIndex"]["type"] == "int8"
    index_diff += int((torch.tensor(have_idx["data"]) != idx[0]).sum())
    assigned += int((idx[0] >= 0).sum())
    tracks_total += idx.shape[1]
print(worst, index_diff, with_leading, assigned, tracks_total, eager_branch)
)";

TEST_F(MaskFormerFit, FindsVerticesBetterThanChance) {
  // 160 steps: a larger peak learning rate than salt's 5e-4 (tuned for 40 epochs of
  // ATLAS data) lets the queries leave "no object" within them.
  auto fit = salt("fit", small({"--trainer.max_epochs", "5", "--model.lrs_config.max", "2e-3"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  ASSERT_EQ(runs().size(), 1u);
  const auto run = runs()[0];
  const auto rows = read_metrics(run / "metrics.csv");
  std::map<std::string, double> last;
  for (const auto& r : rows)
    if (r.count("val/query_loose_match_eff")) last = r;
  ASSERT_FALSE(last.empty()) << "MaskformerMetrics logged nothing";
  for (const char* k : {"val/object_class_ce_loss", "val/mask_ce_loss", "val/mask_dice_loss", "val/regression_loss",
                        "val/notnull_eff", "val/query_perfect_match_eff", "val/query_pt_mae"})
    EXPECT_TRUE(last.count(k)) << k;

  // MaskformerConfusionMatrix: its picture, and its slot accuracy equals MaskformerMetrics'.
  EXPECT_TRUE(std::filesystem::exists(run / "confusion_matrix" / "objects_epoch=004.png"));
  const std::regex line("MaskformerConfusionMatrix epoch=004: ([0-9]+) of ([0-9]+) object slots classified right");
  std::smatch m;
  const std::string log = fit.out + fit.err;
  ASSERT_TRUE(std::regex_search(log, m, line)) << log;
  EXPECT_EQ(std::stoll(m[2]), 1000 * 5);
  EXPECT_NEAR(std::stod(m[1]) / std::stod(m[2]), last["val/class_accuracy_micro"], 1e-6);

  auto test = salt("test", {"--config", (run / "config.yaml").string(), "--data.num_workers", "0"});
  ASSERT_EQ(test.exit_code, 0) << test.err;
  std::filesystem::path pred;
  for (const auto& e : std::filesystem::directory_iterator(run / "ckpts"))
    if (e.path().extension() == ".h5") pred = e.path();
  ASSERT_FALSE(pred.empty());
  const auto py = run_python(kVertexCheck, {pred.string(), (dir.path() / "data" / "toy" / "pp_output_test_ttbar.h5").string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  std::istringstream values(py.out);
  double model = 0, chance = 0, vertices = 0;
  values >> model >> chance >> vertices;
  RecordProperty("loose_match_eff_model", std::to_string(model));
  RecordProperty("loose_match_eff_chance", std::to_string(chance));
  std::cout << "loose vertex match efficiency on " << vertices << " test vertices: trained " << model << ", chance "
            << chance << ", val (MaskformerMetrics) " << last["val/query_loose_match_eff"] << "\n";
  EXPECT_GT(vertices, 300);
  // Measured (with salt's matcher rule, issue 56): trained 0.576 after 5 epochs (val 0.558), chance 0.304.
  EXPECT_GT(model, chance + 0.15);
  EXPECT_GT(last["val/query_loose_match_eff"], chance + 0.15);

  auto one = salt("test", {"--config", (run / "config.yaml").string(), "--data.num_workers", "0", "--data.batch_size",
                           "1", "--data.num_test", "100", "--data.test_suff", "b1"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  std::filesystem::path pred_b1;
  for (const auto& e : std::filesystem::directory_iterator(run / "ckpts"))
    if (e.path().extension() == ".h5" && e.path().stem().string().size() > 2 &&
        e.path().stem().string().substr(e.path().stem().string().size() - 2) == "b1")
      pred_b1 = e.path();
  ASSERT_FALSE(pred_b1.empty()) << one.err;
  const auto shift = run_python(kBatchShiftCheck, {pred_b1.string()});
  ASSERT_EQ(shift.exit_code, 0) << shift.err;
  EXPECT_GT(std::stoi(shift.out), 0) << "no jet of the 100 left object 0 empty: the shift went untested";

  // Export with salt's -mf flag: checked against salt-cpp inside to_onnx, then here
  // against salt's own post-processing of the prediction file.
  // The checkpoint salt test used: the prediction file is named after it.
  const std::string stem = pred.string().substr(0, pred.string().rfind("__test"));
  const std::filesystem::path ckpt = stem + ".ckpt";
  ASSERT_TRUE(std::filesystem::exists(ckpt)) << ckpt;
  auto exported = salt("to_onnx", {"--ckpt_path", ckpt.string(), "-mf", "hadron", "--require_check", "--force"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.err.find("ONNX Runtime vs salt-cpp on 253 test jets"), std::string::npos) << exported.err;
  auto meta = salt("get_onnx_metadata", {(run / "network.onnx").string()});
  ASSERT_EQ(meta.exit_code, 0) << meta.err;
  for (const char* name : {"MaskFormer_pb", "MaskFormer_leading_hadron_pt",
                           "MaskFormer_leading_hadron_mass", "MaskFormer_hadronIndex"})
    EXPECT_NE(meta.out.find(name), std::string::npos) << name << " not among the outputs:\n" << meta.out;
  const auto check = run_python(kOnnxObjectCheck, {(run / "network.onnx").string(), pred.string(), (dir.path() / "data" / "toy" / "pp_output_test_ttbar.h5").string(),
                                                   (run / "config.yaml").string(), source_dir().string()});
  ASSERT_EQ(check.exit_code, 0) << check.err;
  std::istringstream got(check.out);
  double worst = 1, index_diff = -1, with_leading = 0, assigned = 0, tracks = 0, eager = -1;
  got >> worst >> index_diff >> with_leading >> assigned >> tracks >> eager;
  std::cout << "ONNX objects vs salt's get_maskformer_outputs on 300 test jets: leading values max relative diff " << worst
            << ", " << index_diff << " of " << tracks << " track indices differ; " << with_leading
            << " jets with a leading hadron, " << assigned << " tracks assigned to one\n";
  EXPECT_LE(worst, 1e-4);
  EXPECT_EQ(index_diff, 0);
  EXPECT_EQ(eager, 0) << "a jet took salt's eager-only branch";
  EXPECT_GT(with_leading, 90);  // the trained model finds hadrons in most of these jets
  EXPECT_GT(assigned, 300);
}

// salt's MaskFormer.yaml trains with precision 16-mixed, which is bf16 autocast on
// the CPU: padded constituents get bfloat16's lowest value, not float's.
TEST_F(MaskFormerFit, TrainsUnderMixedPrecision) {
  auto fit = salt("fit", small({"--trainer.max_epochs", "1", "--trainer.precision", "16-mixed", "--data.num_train", "2000",
                                "--data.num_val", "500"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  ASSERT_EQ(runs().size(), 1u);
  const auto rows = read_metrics(runs()[0] / "metrics.csv");
  double val = NAN;
  for (const auto& r : rows)
    if (r.count("val/mask_ce_loss")) val = r.at("val/mask_ce_loss");
  EXPECT_TRUE(std::isfinite(val)) << "val/mask_ce_loss " << val;
}

TEST_F(MaskFormerFit, BadInputsAreOneLineAndLeaveNothing) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--data.mf_config.object.name", "vertices"}, "vertices"},
      {{"--model.model.init_args.mask_decoder.init_args.num_objects", "1000"}, "num_objects: 1000 queries exceed"},
      {{"--model.model.init_args.mask_decoder.init_args.class_net.init_args.output_size", "5"},
       "must be num_classes + 1 = 3"},
      {{"--data.mf_config.constituent.id_label", "parentBarcode"}, "parentBarcode"},
  };
  for (const auto& c : cases) {
    auto args = small({"--trainer.max_epochs", "1"});
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = salt("fit", args);
    EXPECT_NE(r.exit_code, 0) << c.says;
    EXPECT_EQ(error_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_TRUE(runs().empty()) << c.says << ": a run directory was left behind";
  }
}

// Object data as real files can have it, written by h5py from the toy training file:
// no object in any jet (a light-jet-only sample), a class no object_classes entry
// lists, and an objects dataset with no slots.
const char* kObjectVariants = R"(
import sys, h5py, numpy as np
src, out, kind = sys.argv[1], sys.argv[2], sys.argv[3]
with h5py.File(src) as f, h5py.File(out, "w") as g:
    g.attrs.update(f.attrs)
    for name, ds in f.items():
        data = ds[:]
        if name == "truth_hadrons":
            if kind == "none":
                data["valid"], data["barcode"], data["flavour"] = False, -1, -1
            elif kind == "unlisted":
                row, slot = np.argwhere(data["valid"] & (data["barcode"] != -1))[3]
                data["flavour"][row, slot] = 15
                print(row, slot)
            elif kind == "no_slots":
                data = data[:, :0]
        g.create_dataset(name, data=data, compression="lzf").attrs.update(ds.attrs)
)";

TEST_F(MaskFormerFit, ObjectDataWithNoObjectsAnUnlistedClassOrNoSlots) {
  const auto train = dir / "data" / "toy" / "pp_output_train.h5";
  auto variant = [&](const std::string& kind) {
    const auto file = dir / (kind + ".h5");
    auto py = run_python(kObjectVariants, {train.string(), file.string(), kind});
    EXPECT_EQ(py.exit_code, 0) << py.err;
    return std::make_pair(file.string(), py.out);
  };
  auto one_epoch = [&](const std::string& file, const std::string& suffix) {
    return salt("fit", small({"--trainer.max_epochs", "1", "--data.num_train", "1000", "--data.num_val", "500",
                              "--trainer.log_every_n_steps", "1", "--data.train_file", file, "-ls", suffix}));
  };
  // Before: 'train/loss is not finite' at step 0 (0 x the padded logits' -inf).
  const auto [none, unused] = variant("none");
  auto r = one_epoch(none, "none");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto rows = read_metrics(dir / "logs" / "MaskFormer_none" / "metrics.csv");
  bool logged = false;
  for (const auto& row : rows)
    if (row.count("train/mask_ce_loss")) {
      EXPECT_EQ(row.at("train/mask_ce_loss"), 0.0);
      logged = true;
    }
  EXPECT_TRUE(logged) << "no train/mask_ce_loss in metrics.csv";

  // Before: trained silently with the object as the null class.
  const auto [unlisted, where] = variant("unlisted");
  r = one_epoch(unlisted, "unlisted");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::istringstream at(where);
  int64_t row = -1, slot = -1;
  at >> row >> slot;
  const std::string warning = "warning: truth_hadrons.flavour = 15 in row " + std::to_string(row) + " (slot " +
                              std::to_string(slot) + ") of dataset 'truth_hadrons' in " + unlisted +
                              " is none of the values data.mf_config.object.object_classes lists (5, 4, -1): such "
                              "objects are taken as the null class 'null' (said once per file)";
  EXPECT_NE(r.err.find(warning), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("is none of the values"), r.err.rfind("is none of the values")) << r.err;

  // Before: 'index 0 is out of bounds for dimension 1 with size 0', naming nothing.
  const auto [no_slots, unused2] = variant("no_slots");
  r = one_epoch(no_slots, "no_slots");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("The constituents dataset 'truth_hadrons' in " + no_slots +
                       " have 0 slots per jet (shape (8000, 0)): 'objects' needs at least one"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace salt::testing
