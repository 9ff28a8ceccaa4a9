#include "models/task.h"

#include "core/errors.h"

namespace salt::models {

TaskImpl::TaskImpl(const std::string& type, const TaskOptions& options) : torch::nn::Module(type), options_(options) {
  net = register_module("net", Dense(options.dense()));
  loss = register_module("loss", Loss(options.loss()));
}

TaskOutput TaskImpl::forward_packed(const torch::Tensor& rows, const TokenIndex& idx, const torch::Tensor& pad_mask,
                                    const torch::Tensor& context, const Labels* labels) {
  return forward(idx.scatter(rows), pad_mask, context, labels);
}

const torch::Tensor& TaskImpl::label(const Labels& labels, const std::string& label_name) const {
  auto in = labels.find(input_name());
  if (in != labels.end()) {
    auto it = in->second.find(label_name);
    if (it != in->second.end()) return it->second;
  }
  throw InputError("task '" + name() + "': label '" + label_name + "' of '" + input_name() + "' missing from the batch");
}

}  // namespace salt::models
