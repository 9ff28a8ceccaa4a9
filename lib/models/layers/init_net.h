// salt.models.InitNet: the initial embedding of one input type. Input =
// cat([global vars broadcast over L, constituent vars]) when attach_global, then Dense.
#pragma once
#include <torch/torch.h>

#include <string>

#include "models/layers/dense.h"
#include "models/layers/featurewise.h"
#include "models/layers/pos_enc.h"
#include "models/packing/common.h"

#include "export/fwd.h"

namespace salt::models {

struct InitNetOptions {
  InitNetOptions(std::string input_name, std::string global_object, DenseOptions dense)
      : input_name_(std::move(input_name)), global_object_(std::move(global_object)), dense_(std::move(dense)) {}
  TORCH_ARG(std::string, input_name);
  TORCH_ARG(std::string, global_object);
  // dense.input_size must already include the global variables when attach_global
  // (the factory derives it from the variables like salt).
  TORCH_ARG(DenseOptions, dense);
  TORCH_ARG(bool, attach_global) = true;
  TORCH_ARG(std::optional<PositionalEncoderOptions>, pos_enc) = std::nullopt;

 public:
  std::vector<int64_t> pos_enc_columns;  // set by the builder: the pos_enc variables' columns of the input
  // Set by the builder: concatenate the `parameters` inputs too (salt does when
  // data.variables has parameters and no featurewise net transforms this input).
  bool attach_parameters = false;
};

struct BuildContext;

// One entry of SaltModel's init_nets, and the net it describes: input sizes are
// derived from data.variables (plus the global object's when attach_global).
const config::Binding<InitNetOptions>& init_net_binding();

class InitNetImpl : public torch::nn::Module {
 public:
  explicit InitNetImpl(const InitNetOptions& options);
  // featurewise_nets' `layer: input` net, built before the init net as salt builds
  // it (model_factory.cpp); registered after `net`, where salt's InitNet holds it.
  void attach_featurewise(Featurewise f);
  // inputs: normalised inputs by name; returns [B, L, D] (or [B, D] for the global object).
  torch::Tensor forward(const TensorMap& inputs);
  // The embeddings of the valid slots only: [idx.size(), D] (see TokenIndex).
  torch::Tensor forward_packed(const TensorMap& inputs, const TokenIndex& idx);

  // forward() in an ONNX graph for one jet: inputs are the normalised graph values
  // by input name (the global object [1, F], constituents [n, F], the `parameters`
  // [1, P] when the model takes them), pos_enc included.
  ox::Value to_onnx(ox::Graph& g, const std::map<std::string, ox::Value>& inputs);

  const std::string& input_name() const { return options_.input_name(); }
  int64_t output_size() const { return net->output_size(); }

  Dense net{nullptr};
  Featurewise featurewise{nullptr};  // featurewise_nets' `layer: input`, on the concatenated input
  std::optional<PositionalEncoder> pos_enc;  // added to the output (no parameters)

 private:
  // cat([parameters, global vars, x]) as configured, then featurewise and the net;
  // rows_of: the layout of packed rows (nullptr for padded [B, L, F] input).
  torch::Tensor embed(const TensorMap& inputs, torch::Tensor x, const TokenIndex* rows_of);
  InitNetOptions options_;
};
TORCH_MODULE(InitNet);

// input_featurewise: featurewise_nets has a `layer: input` entry (then the
// parameters reach the net through it, not concatenated to its input).
InitNet build_init_net(const YAML::Node& validated, const BuildContext& ctx, bool input_featurewise = false);

}  // namespace salt::models
