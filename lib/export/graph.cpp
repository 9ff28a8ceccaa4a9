#include "export/graph.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "core/errors.h"
#include "core/provenance.h"

namespace salt::ox {

struct Graph::Impl {
  ::onnx::GraphProto proto;
};

Graph::Graph(std::string name) : impl_(std::make_unique<Impl>()), counter_(std::make_shared<int64_t>(0)) {
  impl_->proto.set_name(std::move(name));
}

Graph::~Graph() = default;

std::shared_ptr<Graph> make_subgraph(Graph& parent, const std::string& name) {
  auto sub = std::make_shared<Graph>(name);
  sub->counter_ = parent.counter_;
  return sub;
}

Value Graph::fresh(const std::string& hint) { return hint + "__" + std::to_string((*counter_)++); }

namespace {

int32_t elem_type(DType t) {
  switch (t) {
    case DType::kFloat: return ::onnx::TensorProto::FLOAT;
    case DType::kInt64: return ::onnx::TensorProto::INT64;
    case DType::kInt8: return ::onnx::TensorProto::INT8;
    case DType::kBool: return ::onnx::TensorProto::BOOL;
  }
  return ::onnx::TensorProto::UNDEFINED;
}

void set_type(::onnx::ValueInfoProto* info, DType type, const std::vector<Dim>* dims) {
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type(type));
  if (!dims) return;
  auto* shape = tensor->mutable_shape();
  for (const auto& d : *dims) {
    auto* dim = shape->add_dim();
    if (d.symbol.empty()) dim->set_dim_value(d.size);
    else dim->set_dim_param(d.symbol);
  }
}

}  // namespace

Value Graph::input(const std::string& name, DType type, const std::vector<Dim>& dims) {
  auto* in = impl_->proto.add_input();
  in->set_name(name);
  set_type(in, type, &dims);
  return name;
}

namespace {

// Declares `value` a graph output named `name` (through an Identity node when the
// names differ); dims nullptr: no declared shape.
void add_output(Graph& g, ::onnx::GraphProto& proto, const Value& value, const std::string& name, DType type,
                const std::vector<Dim>* dims) {
  if (value != name) {
    g.op("Identity", {value});
    proto.mutable_node(proto.node_size() - 1)->set_output(0, name);
  }
  auto* out = proto.add_output();
  out->set_name(name);
  set_type(out, type, dims);
}

}  // namespace

void Graph::output(const Value& value, const std::string& name, DType type, const std::vector<Dim>& dims) {
  add_output(*this, impl_->proto, value, name, type, &dims);
}

void Graph::output_untyped(const Value& value, const std::string& name, DType type) {
  add_output(*this, impl_->proto, value, name, type, nullptr);
}

Value Graph::constant(const torch::Tensor& t, const std::string& hint) {
  auto c = t.detach().to(torch::kCPU).contiguous();
  auto* init = impl_->proto.add_initializer();
  const Value name = fresh(hint);
  init->set_name(name);
  for (auto d : c.sizes()) init->add_dims(d);
  if (c.scalar_type() == torch::kBool) {
    init->set_data_type(::onnx::TensorProto::BOOL);
    auto u8 = c.to(torch::kUInt8);
    init->set_raw_data(std::string(reinterpret_cast<const char*>(u8.data_ptr<uint8_t>()), u8.numel()));
  } else if (c.scalar_type() == torch::kLong || c.scalar_type() == torch::kInt) {
    init->set_data_type(::onnx::TensorProto::INT64);
    auto l = c.to(torch::kLong);
    init->set_raw_data(std::string(reinterpret_cast<const char*>(l.data_ptr<int64_t>()), l.numel() * sizeof(int64_t)));
  } else {
    init->set_data_type(::onnx::TensorProto::FLOAT);
    auto f = c.to(torch::kFloat32);
    init->set_raw_data(std::string(reinterpret_cast<const char*>(f.data_ptr<float>()), f.numel() * sizeof(float)));
  }
  return name;
}

Value Graph::ints(const std::vector<int64_t>& values, const std::string& hint) {
  return constant(torch::tensor(values, torch::kLong).reshape({static_cast<int64_t>(values.size())}), hint);
}

Value Graph::scalar(float v) { return constant(torch::scalar_tensor(v, torch::kFloat32), "s"); }
Value Graph::scalar_int(int64_t v) { return constant(torch::scalar_tensor(v, torch::kLong), "si"); }

std::vector<Value> Graph::op_n(const std::string& type, const std::vector<Value>& inputs, int outputs,
                               const std::vector<Attr>& attrs, const std::string& hint) {
  auto* node = impl_->proto.add_node();
  node->set_op_type(type);
  node->set_name(fresh(type));
  for (const auto& in : inputs) node->add_input(in);
  std::vector<Value> outs;
  for (int i = 0; i < outputs; ++i) {
    outs.push_back(fresh(hint.empty() ? type : hint));
    node->add_output(outs.back());
  }
  for (const auto& a : attrs) {
    auto* attr = node->add_attribute();
    attr->set_name(a.name);
    if (auto* i = std::get_if<int64_t>(&a.value)) {
      attr->set_type(::onnx::AttributeProto::INT);
      attr->set_i(*i);
    } else if (auto* f = std::get_if<float>(&a.value)) {
      attr->set_type(::onnx::AttributeProto::FLOAT);
      attr->set_f(*f);
    } else if (auto* v = std::get_if<std::vector<int64_t>>(&a.value)) {
      attr->set_type(::onnx::AttributeProto::INTS);
      for (auto x : *v) attr->add_ints(x);
    } else if (auto* s = std::get_if<std::string>(&a.value)) {
      attr->set_type(::onnx::AttributeProto::STRING);
      attr->set_s(*s);
    } else {
      attr->set_type(::onnx::AttributeProto::GRAPH);
      *attr->mutable_g() = std::get<std::shared_ptr<Graph>>(a.value)->impl().proto;
    }
  }
  return outs;
}

Value Graph::op(const std::string& type, const std::vector<Value>& inputs, const std::vector<Attr>& attrs,
                const std::string& hint) {
  return op_n(type, inputs, 1, attrs, hint).front();
}

std::string finish_model(Graph& graph, const ModelInfo& info) {
  ::onnx::ModelProto model;
  model.set_ir_version(8);  // ONNX 1.10+: opset 17 models
  model.set_producer_name("salt-cpp");
  model.set_producer_version(std::string(salt_version()) + "+" + build_commit());
  model.set_doc_string(info.doc_string);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  *model.mutable_graph() = graph.impl().proto;
  for (const auto& [k, v] : info.metadata) {
    auto* p = model.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  try {
    ::onnx::checker::check_model(model);
    ::onnx::ShapeInferenceOptions options{/*check_type=*/true, /*error_mode=*/1, /*enable_data_propagation=*/false};
    ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(), options);
    ::onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw UsageError(std::string("to_onnx: the ONNX checker refused the exported graph: ") + e.what());
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw UsageError("to_onnx: could not serialise the ONNX model");
  return bytes;
}

namespace {

::onnx::ModelProto parse(const std::string& bytes, const std::string& what) {
  ::onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes) || !model.has_graph())
    throw InputError(what + ": not an ONNX model");
  return model;
}

std::vector<IoInfo> io_of(const google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto>& list) {
  std::vector<IoInfo> out;
  for (const auto& v : list) {
    IoInfo io{v.name(), {}, ""};
    const auto& t = v.type().tensor_type();
    io.type = ::onnx::TensorProto_DataType_Name(static_cast<::onnx::TensorProto_DataType>(t.elem_type()));
    for (const auto& d : t.shape().dim()) io.dims.push_back(d.has_dim_param() ? d.dim_param() : std::to_string(d.dim_value()));
    out.push_back(io);
  }
  return out;
}

}  // namespace

ModelInfo read_model_info(const std::string& bytes, const std::string& what) {
  const auto model = parse(bytes, what);
  ModelInfo info;
  info.doc_string = model.doc_string();
  for (const auto& p : model.metadata_props()) info.metadata.emplace_back(p.key(), p.value());
  return info;
}

std::pair<std::vector<IoInfo>, std::vector<IoInfo>> read_model_io(const std::string& bytes, const std::string& what) {
  const auto model = parse(bytes, what);
  return {io_of(model.graph().input()), io_of(model.graph().output())};
}

}  // namespace salt::ox
