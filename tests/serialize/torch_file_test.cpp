// torch.save's format both ways against Debian's real Python torch: what Python
// writes (every pickle protocol, the value kinds checkpoints hold, tensors of
// every dtype with offsets, strides and shared storages, objects of unknown
// classes) reads back here; what salt-cpp writes, torch.load(weights_only=True)
// reads; damaged input is refused in one line.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/errors.h"
#include "serialize/torch_file.h"
#include "serialize/unpickler.h"
#include "support/test_support.h"

namespace salt::testing {
namespace {

using serialize::PyValue;

PyValue load(const std::filesystem::path& path) { return serialize::load_torch_file(read_file(path), path.string()); }

void need_torch() { ASSERT_TRUE(have_python_module("torch")) << "python3-torch is missing (scripts/bootstrap.sh installs it)"; }

// Everything a Lightning checkpoint may hold, saved by Python's torch.save.
const char* kWriteValues = R"(
import collections, sys, torch, types

def home(cls, module):  # pickle names a class by its module, which must import
    parts = module.split(".")
    for i in range(1, len(parts) + 1):
        sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
    setattr(sys.modules[module], cls.__name__, cls)
    cls.__module__ = module

class AttributeDict(dict):  # as Lightning's: a dict subclass
    pass
home(AttributeDict, "lightning.fabric.utilities.data")

class Opaque:  # a class salt-cpp has never heard of, with state
    def __init__(self): self.x = [1, 2]
home(Opaque, "somewhere.unknown")

base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
shared = [7, 8]
od = collections.OrderedDict([("b", 1), ("a", 2)])
od._metadata = {"": {"version": 1}}  # as module.state_dict() has
hp = AttributeDict(lr=0.5, name="GN2")
value = {
    "ints": [0, 1, 255, 256, 65535, 65536, -1, -300, -70000, 2**31, -2**40, 2**62, 2**100, -2**70],
    "float": -1.25e-7, "str": "jet \u00e9\u2192", "bytes": b"\x00\xff", "none": None, "flags": (True, False),
    "set": {3}, "frozen": frozenset({4}), "od": od, "hp": hp, "opaque": Opaque(), "dtype": torch.float16,
    "twice": (shared, shared),
    "f32": base, "t": base.t(), "tail": base.view(-1)[5:9], "scalar": torch.tensor(2.5, dtype=torch.float64),
    "empty": torch.zeros(0, 3), "param": torch.nn.Parameter(torch.ones(2)),
    "f16": torch.tensor([1.5, -2.25], dtype=torch.float16), "bf16": torch.tensor([3.0, -0.5], dtype=torch.bfloat16),
    "i64": torch.tensor([-(2**40), 5]), "i32": torch.tensor([-7], dtype=torch.int32),
    "i8": torch.tensor([-128, 127], dtype=torch.int8), "u8": torch.tensor([255], dtype=torch.uint8),
    "bool": torch.tensor([True, False]),
}
torch.save(value, sys.argv[1], pickle_protocol=int(sys.argv[2]))
)";

TEST(TorchFile, ReadsWhatPythonTorchSaveWritesInEveryPickleProtocol) {
  need_torch();
  TempDir dir;
  for (int protocol : {2, 3, 4, 5}) {
    SCOPED_TRACE("pickle protocol " + std::to_string(protocol));
    const auto path = dir / ("v" + std::to_string(protocol) + ".pt");
    auto r = run_python(kWriteValues, {path.string(), std::to_string(protocol)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto v = load(path);
    ASSERT_TRUE(v.is_mapping());

    std::vector<int64_t> ints;
    for (const auto& i : v.find("ints")->items())
      if (i.is_int()) ints.push_back(i.as_int());
    EXPECT_EQ(ints, (std::vector<int64_t>{0, 1, 255, 256, 65535, 65536, -1, -300, -70000, 2147483648LL,
                                          -1099511627776LL, 4611686018427387904LL}));
    EXPECT_EQ(v.find("ints")->items()[12].kind(), PyValue::Kind::kBigInt);  // 2**100 stays a (big) int
    EXPECT_EQ(v.find("ints")->items()[13].kind(), PyValue::Kind::kBigInt);
    EXPECT_EQ(v.find("float")->as_number(), -1.25e-7);
    EXPECT_EQ(v.find("str")->as_str(), "jet \xc3\xa9\xe2\x86\x92");
    EXPECT_EQ(v.find("bytes")->as_bytes(), std::string("\x00\xff", 2));
    EXPECT_TRUE(v.find("none")->is_none());
    EXPECT_TRUE(v.find("flags")->items()[0].as_bool());
    EXPECT_FALSE(v.find("flags")->items()[1].as_bool());
    EXPECT_EQ(v.find("set")->items().at(0).as_int(), 3);
    EXPECT_EQ(v.find("frozen")->items().at(0).as_int(), 4);

    const auto& od = *v.find("od");
    EXPECT_EQ(od.type_name(), "collections.OrderedDict");
    ASSERT_EQ(od.entries().size(), 2u);
    EXPECT_EQ(od.entries()[0].first.as_str(), "b");  // insertion order kept
    EXPECT_EQ(od.find("a")->as_int(), 2);
    const auto& hp = *v.find("hp");
    EXPECT_TRUE(hp.is_mapping());
    EXPECT_EQ(hp.type_name(), "lightning.fabric.utilities.data.AttributeDict object");
    EXPECT_EQ(hp.find("name")->as_str(), "GN2");
    EXPECT_EQ(v.find("opaque")->kind(), PyValue::Kind::kObject);
    EXPECT_EQ(v.find("opaque")->type_name(), "somewhere.unknown.Opaque object");
    EXPECT_TRUE(v.find("dtype")->is_global("torch", "float16"));
    // one list referred to twice is one list (the pickle's memo)
    auto& twice = v.find("twice")->items();
    twice[0].append(PyValue::integer(9));
    EXPECT_EQ(twice[1].items().size(), 3u);

    const auto base = torch::arange(12, torch::kFloat32).reshape({3, 4});
    EXPECT_TRUE(torch::equal(v.find("f32")->as_tensor(), base));
    EXPECT_TRUE(torch::equal(v.find("t")->as_tensor(), base.t()));
    EXPECT_EQ(v.find("t")->as_tensor().strides(), base.t().strides());
    EXPECT_TRUE(torch::equal(v.find("tail")->as_tensor(), base.reshape({-1}).slice(0, 5, 9)));
    EXPECT_EQ(v.find("scalar")->as_tensor().dim(), 0);
    EXPECT_EQ(v.find("scalar")->as_tensor().item<double>(), 2.5);
    EXPECT_EQ(v.find("empty")->as_tensor().sizes(), torch::IntArrayRef({0, 3}));
    EXPECT_TRUE(torch::equal(v.find("param")->as_tensor(), torch::ones({2})));
    EXPECT_TRUE(torch::equal(v.find("f16")->as_tensor(), torch::tensor({1.5, -2.25}, torch::kHalf)));
    EXPECT_TRUE(torch::equal(v.find("bf16")->as_tensor(), torch::tensor({3.0, -0.5}, torch::kBFloat16)));
    EXPECT_TRUE(torch::equal(v.find("i64")->as_tensor(), torch::tensor({-(int64_t{1} << 40), int64_t{5}})));
    EXPECT_TRUE(torch::equal(v.find("i32")->as_tensor(), torch::tensor({-7}, torch::kInt)));
    EXPECT_TRUE(torch::equal(v.find("i8")->as_tensor(), torch::tensor({-128, 127}, torch::kChar)));
    EXPECT_TRUE(torch::equal(v.find("u8")->as_tensor(), torch::tensor({255}, torch::kByte)));
    EXPECT_TRUE(torch::equal(v.find("bool")->as_tensor(), torch::tensor({true, false})));
    // the three views of `base` share one storage, as in Python
    EXPECT_EQ(v.find("t")->as_tensor().data_ptr<float>(), v.find("f32")->as_tensor().data_ptr<float>());
  }
}

TEST(TorchFile, WhatSaltCppWritesLoadsInPythonWithWeightsOnly) {
  need_torch();
  TempDir dir;
  auto sd = PyValue::dict({}, "collections.OrderedDict");
  sd.set_item(PyValue::str("w"), PyValue::tensor(torch::arange(6, torch::kFloat32).reshape({2, 3}).t()));
  sd.set_item(PyValue::str("h"), PyValue::tensor(torch::tensor({1.5, -2.0}, torch::kHalf)));
  sd.set_item(PyValue::str("b"), PyValue::tensor(torch::tensor({0.25}, torch::kBFloat16)));
  sd.set_item(PyValue::str("n"), PyValue::tensor(torch::tensor(int64_t{7})));
  sd.set_item(PyValue::str("m"), PyValue::tensor(torch::tensor({true})));
  auto root = PyValue::dict();
  root.set_item(PyValue::str("state_dict"), sd);
  // Debian's torch 1.13 has no BINFLOAT in its weights-only reader (torch 2.x has): no floats here.
  root.set_item(PyValue::integer(3), PyValue::list({PyValue::integer(0), PyValue::integer(-70000),
                                                    PyValue::integer(int64_t{1} << 40), PyValue()}));
  root.set_item(PyValue::str("betas"), PyValue::tuple({PyValue::integer(9), PyValue::boolean(true)}));
  root.set_item(PyValue::str("text"), PyValue::str("\xc3\xa9"));
  auto big = PyValue::list();
  for (int i = 0; i < 2500; ++i) big.append(PyValue::integer(i));  // past one APPENDS batch
  root.set_item(PyValue::str("big"), big);
  const auto path = dir / "ours.ckpt";
  write_file(path, serialize::torch_file_bytes(root));

  auto r = run_python(R"(
import sys, torch
ck = torch.load(sys.argv[1], weights_only=True)
sd = ck["state_dict"]
print(type(sd).__name__, list(sd))
print(sd["w"].tolist(), sd["w"].dtype, sd["h"].tolist(), sd["h"].dtype, sd["b"].tolist(), sd["b"].dtype)
print(sd["n"].item(), sd["n"].shape, sd["m"].tolist())
print(ck[3], ck["betas"], ck["text"] == "\u00e9", ck["big"][-1], len(ck["big"]))
torch.save(ck, sys.argv[2])  # and Python's re-save reads back here
)",
                      {path.string(), (dir / "resaved.ckpt").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "OrderedDict ['w', 'h', 'b', 'n', 'm']\n"
            "[[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]] torch.float32 [1.5, -2.0] torch.float16 [0.25] torch.bfloat16\n"
            "7 torch.Size([]) [True]\n"
            "[0, -70000, 1099511627776, None] (9, True) True 2499 2500\n");
  const auto back = load(dir / "resaved.ckpt");
  EXPECT_TRUE(torch::equal(back.find("state_dict")->find("w")->as_tensor(),
                           torch::arange(6, torch::kFloat32).reshape({2, 3}).t()));
  EXPECT_EQ(back.find(3)->items()[2].as_int(), int64_t{1} << 40);
  EXPECT_EQ(back.find("big")->items().size(), 2500u);
}

// One line naming the file, never a crash, for input that is not a torch file.
void expect_refused(const std::filesystem::path& path, const std::string& expected) {
  try {
    load(path);
    ADD_FAILURE() << path << " was read";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path.string()), std::string::npos) << what;
    EXPECT_NE(what.find(expected), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(TorchFile, DamagedOrForeignFilesAreRefusedInOneLine) {
  need_torch();
  TempDir dir;
  auto r = run_python(R"(
import sys, torch
torch.save({"a": torch.ones(3)}, sys.argv[1] + "/legacy.pt", _use_new_zipfile_serialization=False)
torch.save({"a": torch.ones(3)}, sys.argv[1] + "/good.pt")
)",
                      {dir.path().string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_refused(dir / "legacy.pt", "legacy (pre-1.6) format");
  write_file(dir / "model.onnx", std::string("\x08\x07\x12\x04salt", 8));
  expect_refused(dir / "model.onnx", "an ONNX model, not a checkpoint");
  write_file(dir / "text.ckpt", "epoch: 3\n");
  expect_refused(dir / "text.ckpt", "not the zip archive torch.save writes");
  // torch's record of the writer's byte order: a big-endian machine's file is refused
  auto big = run_python(R"(
import sys, zipfile
src = zipfile.ZipFile(sys.argv[1] + "/good.pt")
prefix = src.namelist()[0].split("/")[0]
for name, order in (("big", b"big"), ("huge", b"\n" + b"x" * 1000000)):
    with zipfile.ZipFile(sys.argv[1] + "/" + name + ".pt", "w", zipfile.ZIP_STORED) as dst:
        for item in src.namelist():
            if not item.endswith("/byteorder"):  # torch 2.x writes one, 1.13 none
                dst.writestr(item, src.read(item))
        dst.writestr(prefix + "/byteorder", order)
)",
                        {dir.path().string()});
  ASSERT_EQ(big.exit_code, 0) << big.err;
  expect_refused(dir / "big.pt", "written on a big-endian machine");
  // A byteorder of 1 MB is named by its size and first bytes, not echoed whole.
  expect_refused(dir / "huge.pt", "a byteorder record that is neither 'little' nor 'big' (1000001 bytes: '?xxxxxxxxxxxxxxxxxxx…')");
  const auto good = read_file(dir / "good.pt");
  write_file(dir / "cut.pt", good.substr(0, good.size() / 2));
  expect_refused(dir / "cut.pt", "cut.pt");

}

// The unpickler on hand-made byte strings: each malformed pickle is a PickleError.
TEST(Unpickler, MalformedPicklesAreErrorsNotCrashes) {
  auto no_storage = [](const PyValue&) -> PyValue { throw std::invalid_argument("no storages here"); };
  using namespace std::string_literals;  // the byte strings hold NULs
  const std::vector<std::pair<std::string, std::string>> cases = {
      {""s, "truncated"},
      {"\x80\x02"s, "truncated"},
      {"\x80\x02}q\x00(X\x01\x00\x00\x00a"s, "truncated"},
      {"\x80\x07N."s, "pickle protocol 7"},
      {"\x80\x02h\x05."s, "memo entry 5 was never stored"},
      {"\x80\x02s."s, "the stack is empty"},
      {"\x80\x02(K\x01u."s, "the stack is empty"},
      {"\x80\x02}(K\x01u."s, "an odd number of items"},
      {"\x80\x02NN."s, "malformed stack"},
      {"\x80\x02\x82\x01."s, "not an opcode salt-cpp reads"},
      {"\x80\x02X\xff\xff\xff\x7f"s, "truncated"},
      {"\x80\x02(X\x07\x00\x00\x00storagetQ."s, "no storages here"},
      {"\x80\x02" "ctorch._utils\n_rebuild_tensor_v2\nK\x01\x85R."s, "_rebuild_tensor_v2 with 1 arguments"},
  };
  for (const auto& [bytes, expected] : cases) {
    try {
      serialize::unpickle(bytes, no_storage);
      ADD_FAILURE() << "read: " << expected;
    } catch (const serialize::PickleError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what() << " for " << ::testing::PrintToString(bytes);
    }
  }
  // A tensor that reaches past its storage.
  auto four_floats = [](const PyValue&) { return PyValue::tensor(torch::zeros({4})); };
  const std::string past_end = std::string("\x80\x02") + "ctorch._utils\n_rebuild_tensor_v2\n(N" + "Q" +
                               "K\x02K\x03\x85K\x01\x85\x89NtR.";
  try {
    serialize::unpickle(past_end, four_floats);
    ADD_FAILURE() << "a tensor past its storage was read";
  } catch (const serialize::PickleError& e) {
    EXPECT_NE(std::string(e.what()).find("reaches past its storage"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace salt::testing
