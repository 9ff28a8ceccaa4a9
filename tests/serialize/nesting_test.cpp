// Nested data from outside (core/nesting.h): checkpoints written by Python's
// real pickle and torch.save that nest too deeply or contain themselves are one
// error naming the file and the entry, never a crash; a key given twice keeps
// the last value, as Python's dict (and so torch.load) does.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/errors.h"
#include "core/nesting.h"
#include "serialize/torch_file.h"
#include "serialize/unpickler.h"
#include "serialize/yaml_value.h"
#include "support/test_support.h"

namespace salt::testing {
namespace {

using serialize::PyValue;

// A checkpoint's top level with `extra` added; pickling deep values recurses,
// so the deep values are saved in a thread with a large stack.
const char *kWriteCheckpoints = R"(
import pickle, sys, threading, torch, types
sys.setrecursionlimit(10**7)
threading.stack_size(1 << 30)
# Python's own pickler: the C one (_pickle) stops at a fixed C depth from Python 3.12 on.
deep_pickle = types.SimpleNamespace(Pickler=pickle._Pickler, Unpickler=pickle._Unpickler, __name__="pickle")
errors = []
out = sys.argv[1]

def checkpoint(**extra):
    c = {"epoch": 0, "global_step": 0, "state_dict": {"w": torch.ones(2)}, "hyper_parameters": {"lr": 0.1}}
    c.update(extra)
    return c

def nest(depth, make):
    top = inner = make()
    for _ in range(depth):
        child = make()
        if isinstance(inner, dict):
            inner["a"] = child
        else:
            inner.append(child)
        inner = child
    return top

def save(value, path):
    torch.save(value, path, pickle_module=deep_pickle)
def write():
    cyclic = {"lr": 0.1}
    cyclic["model"] = {"self": cyclic}
    save(checkpoint(hyper_parameters=cyclic), out + "/cyclic.ckpt")
    save(checkpoint(hyper_parameters={"deep": nest(100000, dict)}), out + "/deep_dict.ckpt")
    save(checkpoint(unknown_key=nest(1000000, list)), out + "/deep_lists.ckpt")
    save(checkpoint(hyper_parameters={"deep": nest(kMax - 2, dict)}), out + "/at_limit.ckpt")
    save(checkpoint(hyper_parameters={"deep": nest(kMax - 1, dict)}), out + "/past_limit.ckpt")

def work():
    try:
        write()
    except BaseException as e:  # a thread's error does not fail the process by itself
        errors.append(e)
kMax = int(sys.argv[2])
t = threading.Thread(target=work)
t.start()
t.join()
if errors:
    raise errors[0]
)";

std::string refusal(const std::filesystem::path &path) {
  try {
    serialize::load_torch_file(read_file(path), path.string());
  } catch (const InputError &e) {
    return e.what();
  }
  return "";
}

void expect_contains(const std::string &text, const std::string &part) {
  EXPECT_NE(text.find(part), std::string::npos)
      << "'" << part << "' not in: " << text;
}

TEST(Nesting, PythonCheckpointsTooDeepOrCyclicAreOneErrorNamingFileAndEntry) {
  ASSERT_TRUE(have_python_module("torch"))
      << "python3-torch is missing (scripts/bootstrap.sh installs it)";
  TempDir dir;
  auto r = run_python(kWriteCheckpoints,
                      {dir.path().string(), std::to_string(kMaxNesting)});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const auto cyclic = refusal(dir / "cyclic.ckpt");
  expect_contains(cyclic, "cyclic.ckpt");
  expect_contains(cyclic, "hyper_parameters.model.self: contains itself");

  const auto deep = refusal(dir / "deep_dict.ckpt");
  expect_contains(deep, "deep_dict.ckpt");
  expect_contains(deep, "hyper_parameters.deep.a.a.a");
  expect_contains(deep, "nested deeper than 256 levels");
  EXPECT_LT(deep.size(), 400u) << "the path of 100,000 keys is cut short";

  expect_contains(refusal(dir / "deep_lists.ckpt"), "unknown_key.0.0.0");

  // The top level is depth 0: hyper_parameters 1, deep 2, and kMaxNesting - 2
  // more levels below reach the limit exactly; one more passes it.
  EXPECT_EQ(refusal(dir / "at_limit.ckpt"), "");
  expect_contains(refusal(dir / "past_limit.ckpt"),
                  "nested deeper than 256 levels");
}

// A cycle through an object is Python's own: torch's OneCycleLR.state_dict() holds
// a bound method of the scheduler (in every salt checkpoint's lr_schedulers), whose
// pickle refers back to the scheduler. It reads; a cycle of plain data does not.
TEST(Nesting, ACycleThroughAnObjectIsPythonsOwnAndReads) {
  ASSERT_TRUE(have_python_module("torch")) << "python3-torch is missing (scripts/bootstrap.sh installs it)";
  TempDir dir;
  auto r = run_python(R"(
import sys, torch
opt = torch.optim.AdamW([torch.nn.Parameter(torch.ones(1))])
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
torch.save({"lr_schedulers": [sched.state_dict()]}, sys.argv[1])
)",
                      {(dir / "sched.ckpt").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto v = serialize::load_torch_file(read_file(dir / "sched.ckpt"), "sched.ckpt");
  const auto& sched = v.find("lr_schedulers")->items().at(0);
  EXPECT_EQ(sched.find("total_steps")->as_int(), 10);
  // torch < 2.2 pickles the annealing function (an object: a cycle through its
  // instance); later torch names it (_anneal_func_type).
  if (const auto* anneal = sched.find("anneal_func"))
    EXPECT_EQ(anneal->kind(), PyValue::Kind::kObject);
  else
    EXPECT_TRUE(sched.find("_anneal_func_type")) << "neither anneal_func nor _anneal_func_type";

  // Built here: an object that holds itself through its state passes, a dict whose
  // list holds the dict does not.
  auto obj = PyValue::object(PyValue::global("m", "C"), {});
  obj.state() = PyValue::dict();
  obj.state().set_item("self", obj);
  EXPECT_FALSE(obj.nesting_fault(kMaxNesting));
  auto holder = PyValue::dict();
  holder.set_item("obj", obj);
  EXPECT_FALSE(holder.nesting_fault(kMaxNesting));
  obj.dismantle();
}

// Python's dict keeps the last value of a key given twice, in the first one's
// place; a state_dict edited to hold one key twice loads as torch.load loads
// it.
TEST(Nesting, AKeyGivenTwiceKeepsTheLastValueAsTorchLoadDoes) {
  ASSERT_TRUE(have_python_module("torch"))
      << "python3-torch is missing (scripts/bootstrap.sh installs it)";
  TempDir dir;
  auto r = run_python(R"(
import collections, sys, torch, zipfile
path = sys.argv[1]
sd = collections.OrderedDict([("aa.weight", torch.tensor([1.0])), ("bb.weight", torch.tensor([2.0])),
                              ("cc.weight", torch.tensor([3.0]))])
torch.save({"state_dict": sd}, path + ".orig")
src = zipfile.ZipFile(path + ".orig")
with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as dst:
    for item in src.infolist():
        data = src.read(item.filename)
        if item.filename.endswith("/data.pkl"):
            assert data.count(b"bb.weight") == 1
            data = data.replace(b"bb.weight", b"aa.weight")  # the same length: one key twice
        dst.writestr(item, data)
loaded = torch.load(path)["state_dict"]
print(list(loaded.keys()), [float(t) for t in loaded.values()])
)",
                      {(dir / "twice.ckpt").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "['aa.weight', 'cc.weight'] [2.0, 3.0]\n"); // what Python makes of it

  const auto v =
      serialize::load_torch_file(read_file(dir / "twice.ckpt"), "twice.ckpt");
  const auto &sd = *v.find("state_dict");
  ASSERT_EQ(sd.entries().size(), 2u);
  EXPECT_EQ(sd.entries()[0].first.as_str(), "aa.weight");
  EXPECT_EQ(sd.entries()[0].second.as_tensor().item<float>(), 2.0f);
  EXPECT_EQ(sd.entries()[1].first.as_str(), "cc.weight");
  EXPECT_EQ(sd.find("aa.weight")->as_tensor().item<float>(), 2.0f);
}

// The walk itself, on values built here: the limit counts containers, a value
// shared by two parents is no cycle, and a chain of 60 levels each holding the
// next one twice (2^60 paths) is walked once per container.
TEST(Nesting, TheWalkCountsContainersAndVisitsSharedOnesOnce) {
  auto chain = [](int depth) {
    auto top = PyValue::list();
    auto inner = top;
    for (int i = 0; i < depth; ++i) {
      auto child = PyValue::list();
      inner.append(child);
      inner = child;
    }
    return top;
  };
  EXPECT_FALSE(chain(kMaxNesting).nesting_fault(kMaxNesting));
  const auto fault =
      chain(kMaxNesting + 1).nesting_fault(kMaxNesting).value_or("");
  EXPECT_EQ(fault.rfind("0.0.0.0.0.0.0.0.0.0.0.0.0.0.", 0), 0u)
      << fault; // the path, cut short
  EXPECT_LT(fault.size(), 160u) << fault;
  EXPECT_NE(fault.find(".…: nested deeper than 256 levels"), std::string::npos)
      << fault;

  auto diamond = PyValue::list();
  for (int i = 0; i < 60; ++i)
    diamond = PyValue::tuple({diamond, diamond});
  EXPECT_FALSE(diamond.nesting_fault(kMaxNesting));
  EXPECT_TRUE(diamond.nesting_fault(59)); // deep through either branch

  // A shared container met deeper a second time than the first still counts.
  auto shallow_then_deep = PyValue::dict();
  auto shared = chain(3);
  shallow_then_deep.set_item("first", shared);
  shallow_then_deep.set_item("later", PyValue::list({PyValue::list({shared})}));
  EXPECT_FALSE(shallow_then_deep.nesting_fault(6));
  EXPECT_EQ(shallow_then_deep.nesting_fault(5).value_or(""),
            "later.0.0: nested deeper than 5 levels");

  auto cycle = PyValue::dict();
  cycle.set_item("x", PyValue::list({cycle}));
  EXPECT_EQ(cycle.nesting_fault(kMaxNesting).value_or(""),
            "x.0: contains itself (a container that holds itself)");
  cycle.dismantle(); // freed, not leaked
  EXPECT_TRUE(cycle.entries().empty());
}

// YAML turned into Python values and back follows the same limit.
TEST(Nesting, YamlToPythonValuesAndBackFollowTheSameLimit) {
  auto nested = [](int depth) {
    return std::string(depth, '[') + std::string(depth, ']');
  };
  EXPECT_NO_THROW(serialize::yaml_to_py(
      YAML::Load(nested(kMaxNesting + 1)))); // top plus 256 levels below
  EXPECT_THROW(serialize::yaml_to_py(YAML::Load(nested(kMaxNesting + 2))),
               std::invalid_argument);
  auto deep = PyValue::list();
  for (int i = 0; i < kMaxNesting + 1; ++i)
    deep = PyValue::list({deep});
  EXPECT_THROW(serialize::py_to_yaml(deep), std::invalid_argument);
}

} // namespace
} // namespace salt::testing
