// An ONNX graph under construction, for `salt to_onnx`. Components append their
// nodes through this small API (values are named tensors, weights become
// initializers); the ONNX project's own protobuf types stay inside graph.cpp, so
// model headers only see this file. Opset 17: the first with LayerNormalization
// and the newest that Debian's libonnx (1.12) checks.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace salt::ox {

inline constexpr int64_t kOpset = 17;

// A tensor in the graph, by name.
using Value = std::string;

// A dimension of a graph input or output: a fixed size or a symbolic name ("n_tracks").
struct Dim {
  int64_t size = -1;
  std::string symbol;
  Dim(int64_t s) : size(s) {}  // NOLINT: sizes read naturally as {1, 21}
  Dim(const char* s) : symbol(s) {}  // NOLINT
  Dim(std::string s) : symbol(std::move(s)) {}  // NOLINT
};

enum class DType { kFloat, kInt64, kInt8, kBool };

class Graph;

struct Attr {
  std::string name;
  std::variant<int64_t, float, std::vector<int64_t>, std::string, std::shared_ptr<Graph>> value;
};

class Graph {
 public:
  explicit Graph(std::string name);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Declares a graph input (or, in a subgraph, a body input).
  Value input(const std::string& name, DType type, const std::vector<Dim>& dims);
  // Declares `value` an output called `name` (an Identity node renames it when needed).
  void output(const Value& value, const std::string& name, DType type, const std::vector<Dim>& dims);
  // A subgraph output with no declared shape (Loop bodies).
  void output_untyped(const Value& value, const std::string& name, DType type);

  // A weight or constant: a float32/int64/bool tensor stored as an initializer.
  Value constant(const torch::Tensor& t, const std::string& hint = "c");
  Value ints(const std::vector<int64_t>& values, const std::string& hint = "i");  // 1-D int64
  Value scalar(float v);                                                         // 0-D float
  Value scalar_int(int64_t v);                                                   // 0-D int64

  // Appends a node; returns its (single / first) output.
  Value op(const std::string& type, const std::vector<Value>& inputs, const std::vector<Attr>& attrs = {},
           const std::string& hint = "");
  std::vector<Value> op_n(const std::string& type, const std::vector<Value>& inputs, int outputs,
                          const std::vector<Attr>& attrs = {}, const std::string& hint = "");

  // A fresh value name (for subgraph inputs that must be unique in the model).
  Value fresh(const std::string& hint);

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<int64_t> counter_;  // shared with subgraphs: names are unique model-wide
  friend std::shared_ptr<Graph> make_subgraph(Graph& parent, const std::string& name);
};

// A subgraph (Loop body) whose value names cannot clash with the parent's.
std::shared_ptr<Graph> make_subgraph(Graph& parent, const std::string& name);

// The finished model: producer, opset, doc string and metadata properties.
struct ModelInfo {
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata;
};

// Serialises the model after running ONNX's checker and shape inference on it;
// throws UsageError with the checker's message when the graph is invalid.
std::string finish_model(Graph& graph, const ModelInfo& info);

// The metadata properties and doc string of a serialised model (get_onnx_metadata);
// throws InputError naming `what` if the bytes are not an ONNX model.
ModelInfo read_model_info(const std::string& bytes, const std::string& what);

// Names and shapes of a serialised model's inputs and outputs, for messages and tests.
struct IoInfo {
  std::string name;
  std::vector<std::string> dims;  // "1", "n_tracks", ...
  std::string type;
};
std::pair<std::vector<IoInfo>, std::vector<IoInfo>> read_model_io(const std::string& bytes, const std::string& what);

}  // namespace salt::ox
