#include "models/packing/common.h"

#include "core/errors.h"
#include "core/memory.h"
#include "core/signals.h"
#include "models/kernels/pair_relu.h"
#include "models/kernels/segment_sum.h"
#include "models/packing/host_read.h"
#include "models/packing/host_twins.h"
#include "models/packing/static_rows.h"

namespace salt::models {

torch::Tensor Sequence::mask() const {
  std::vector<torch::Tensor> masks;
  masks.reserve(segments.size());
  for (const auto& s : segments) masks.push_back(s.mask);
  return torch::cat(masks, 1);
}

const Segment* Sequence::find(const std::string& name) const {
  for (const auto& s : segments)
    if (s.name == name) return &s;
  return nullptr;
}

torch::Tensor Sequence::slice(const std::string& name) const {
  int64_t offset = 0;
  for (const auto& s : segments) {
    if (s.name == name) return x.narrow(1, offset, s.mask.size(1));
    offset += s.mask.size(1);
  }
  throw UsageError("model: no constituent input '" + name + "' in the encoded sequence");
}

torch::Tensor masked_softmax(const torch::Tensor& x, const torch::Tensor& mask, int64_t dim) {
  if (!mask.defined()) return torch::softmax(x, dim);
  auto filled = x.masked_fill(mask, -std::numeric_limits<float>::infinity());
  // A fully masked slice gives NaN (exp(-inf)/0); masked_fill turns those into 0
  // and its backward zeroes the gradient there, so no NaN leaks either way.
  return torch::softmax(filled, dim).masked_fill(mask, 0.0);
}

torch::Tensor attach_context(const torch::Tensor& x, const torch::Tensor& context) {
  auto ctx = context;
  while (ctx.dim() < x.dim()) ctx = ctx.unsqueeze(1);
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.back() = context.size(-1);
  return torch::cat({ctx.expand(shape), x}, -1);
}

}  // namespace salt::models

namespace salt::models {

namespace {
std::vector<int64_t> row_shape(int64_t rows, const torch::Tensor& t) {
  std::vector<int64_t> shape{rows};
  for (int64_t d = 1; d < t.dim(); ++d) shape.push_back(t.size(d));
  return shape;
}
torch::Tensor scatter_rows(const torch::Tensor& rows, const torch::Tensor& dest, int64_t total) {
  // index_copy forward, index_select (a parallel gather) backward.
  return torch::zeros(row_shape(total, rows), rows.options()).index_copy_(0, dest, rows);
}
// Static rows: zeros at the padding rows, whatever they held (a kernel's unwritten
// memory included); the backward zeroes their gradient alike.
torch::Tensor zero_padding_rows(const torch::Tensor& rows, const torch::Tensor& row_valid) {
  if (!row_valid.defined()) return rows;
  std::vector<int64_t> shape(static_cast<size_t>(rows.dim()), 1);
  shape[0] = rows.size(0);
  return rows.masked_fill(row_valid.logical_not().view(shape), 0);
}
}  // namespace

torch::Tensor nonzero_counted(const torch::Tensor& flat, int64_t count) {
  // On the CPU nonzero() waits for nothing and is several times cheaper: a GN2_cpu
  // fit (bench_fit, 1 thread) ran ~30 % slower with the partition over its vertexing pairs.
  return flat.device().is_cpu() ? flat.nonzero().reshape({-1}) : nonzero_by_partition(flat, count);
}

torch::Tensor nonzero_by_partition(const torch::Tensor& flat, int64_t count) {
  return true_entries_first(flat).narrow(0, 0, count);
}

torch::Tensor true_entries_first(const torch::Tensor& flat) {
  // A stable partition: entry k goes to its rank among the true entries, or after
  // them all to its rank among the false ones.
  const auto k = torch::arange(flat.size(0), flat.options().dtype(torch::kLong));
  const auto is = flat.to(torch::kLong);
  const auto true_before = is.cumsum(0) - is;
  const auto dest = torch::where(flat, true_before, is.sum() + (k - true_before));
  return torch::empty_like(k).index_copy_(0, dest, k);
}

namespace {
// from_mask with static rows: the valid slots, then padded slots up to the valid
// count's bucket capacity. The count comes from the host counts (or one read of the
// device) for the capacity only; the device partitions by its own count.
// `static_rows`: where the capacity is noted (null: bucketed rows, no record).
void index_static_rows(TokenIndex& t, const torch::Tensor& valid, StaticRows* static_rows) {
  const int64_t count = t.host_counts.defined() ? t.host_counts.sum().item<int64_t>() : host_read<int64_t>(valid.sum());
  const int64_t capacity = row_capacity(count, t.batch, t.length);
  if (static_rows) static_rows->note(capacity);
  t.flat = true_entries_first(valid).narrow(0, 0, capacity);
  t.row_valid = valid.index_select(0, t.flat);
}
}  // namespace

TokenIndex TokenIndex::from_mask(const torch::Tensor& pad_mask, const ForwardContext& context) {
  TokenIndex t;
  t.batch = pad_mask.size(0);
  t.length = pad_mask.size(1);
  const auto valid = pad_mask.logical_not().reshape({-1});
  if (const auto host = host_twin(context.twins, pad_mask); host.defined() && t.batch > 0)
    t.host_counts = host.logical_not().sum(1);
  if ((context.static_rows || context.kernels.bucketed_rows) && t.batch * t.length > 0) {
    index_static_rows(t, valid, context.static_rows);
  } else if (t.host_counts.defined()) {
    t.most = t.host_counts.max().item<int64_t>();  // host values: no wait for the device
    t.flat = nonzero_counted(valid, t.host_counts.sum().item<int64_t>());
  } else {
    t.flat = valid.nonzero().reshape({-1});
  }
  t.jet = t.length > 0 ? t.flat.div(t.length, "floor") : t.flat.clone();
  return t;
}

TokenIndex TokenIndex::all_valid(int64_t batch, int64_t length, const torch::Device& device) {
  TokenIndex t;
  t.batch = batch;
  t.length = length;
  t.most = length;
  t.uniform = true;
  t.flat = torch::arange(batch * length, torch::dtype(torch::kLong).device(device));
  t.jet = length > 0 ? t.flat.div(length, "floor") : t.flat.clone();
  return t;
}

torch::Tensor TokenIndex::gather(const torch::Tensor& padded) const {
  std::vector<int64_t> shape{batch * length};
  for (int64_t d = 2; d < padded.dim(); ++d) shape.push_back(padded.size(d));
  return zero_padding(padded.reshape(shape).index_select(0, flat));
}

torch::Tensor TokenIndex::scatter(const torch::Tensor& rows) const {
  auto shape = row_shape(batch, rows);
  shape.insert(shape.begin() + 1, length);
  return scatter_rows(zero_padding(rows), flat, batch * length).view(shape);
}

torch::Tensor TokenIndex::zero_padding(const torch::Tensor& rows) const { return zero_padding_rows(rows, row_valid); }
torch::Tensor TokenLayout::zero_padding(const torch::Tensor& rows) const { return zero_padding_rows(rows, row_valid); }

void PackedSequence::append(const std::string& name, const torch::Tensor& mask, const TokenIndex& idx,
                            const torch::Tensor& rows) {
  if (offsets.empty()) offsets.push_back(0);
  batch = mask.size(0);
  segments.push_back({name, mask});
  index.push_back(idx);
  offsets.push_back(offsets.back() + idx.size());
  x = x.defined() ? torch::cat({x, rows}, 0) : rows;
}

void PackedSequence::pop_back() {
  segments.pop_back();
  index.pop_back();
  offsets.pop_back();
  x = x.narrow(0, 0, offsets.back());
}

PackedSequence PackedSequence::pack(const Sequence& seq, const ForwardContext& context) {
  PackedSequence p;
  p.offsets.push_back(0);
  p.batch = seq.x.size(0);
  p.kernels = context.kernels;
  std::vector<torch::Tensor> rows;
  int64_t offset = 0;
  for (const auto& s : seq.segments) {
    auto idx = TokenIndex::from_mask(s.mask, context);
    rows.push_back(idx.gather(seq.x.narrow(1, offset, s.mask.size(1))));
    offset += s.mask.size(1);
    p.segments.push_back(s);
    p.index.push_back(idx);
    p.offsets.push_back(p.offsets.back() + idx.size());
  }
  p.x = rows.size() == 1 ? rows.front() : torch::cat(rows, 0);
  return p;
}

Sequence PackedSequence::unpack() const {
  Sequence s;
  s.segments = segments;
  std::vector<torch::Tensor> parts;
  for (size_t i = 0; i < segments.size(); ++i) parts.push_back(index[i].scatter(rows(static_cast<int64_t>(i))));
  s.x = parts.size() == 1 ? parts.front() : torch::cat(parts, 1);
  return s;
}

int64_t PackedSequence::find(const std::string& name) const {
  for (size_t i = 0; i < segments.size(); ++i)
    if (segments[i].name == name) return static_cast<int64_t>(i);
  return -1;
}

torch::Tensor PackedSequence::jet() const {
  std::vector<torch::Tensor> jets;
  for (const auto& idx : index) jets.push_back(idx.jet);
  return jets.size() == 1 ? jets.front() : torch::cat(jets, 0);
}

torch::Tensor PackedSequence::row_valid() const {
  bool any = false;
  for (const auto& idx : index) any = any || idx.row_valid.defined();
  if (!any) return {};
  std::vector<torch::Tensor> parts;
  for (const auto& idx : index)
    parts.push_back(idx.row_valid.defined() ? idx.row_valid
                                            : torch::ones({idx.size()}, idx.flat.options().dtype(torch::kBool)));
  return torch::cat(parts, 0);
}

namespace {
// The most tokens of one jet over all segments, when the segments' indices know it
// from the host (TokenIndex::most): exact when at most one segment varies from jet
// to jet (the constituents; registers are the same for every jet). -1 otherwise.
int64_t known_length(const PackedSequence& seq) {
  int64_t length = 0, varying = 0;
  for (const auto& idx : seq.index) {
    if (idx.most < 0) return -1;
    length += idx.most;
    varying += !idx.uniform && idx.most > 0;
  }
  return varying <= 1 ? length : -1;
}

// The segments holding rows: with one, its (jet, slot) order is the sorted order.
bool one_filled_segment(const PackedSequence& seq) {
  int64_t filled = 0;
  for (size_t i = 0; i + 1 < seq.offsets.size(); ++i) filled += seq.offsets[i + 1] > seq.offsets[i];
  return filled <= 1;
}

// TokenLayout::of for static rows: Lc is every segment's slots, whatever the batch,
// and each jet's padded slots follow its tokens there (segment after segment), so
// that padding rows land on places of their own, all under pad_mask. In `order`
// they follow the tokens of every jet (after starts[B]), in their packed order.
TokenLayout static_layout(const PackedSequence& seq, const torch::Tensor& row_valid) {
  TokenLayout t;
  t.batch = seq.batch;
  t.kernels = seq.kernels;
  const auto options = torch::dtype(torch::kLong).device(seq.x.device());
  std::vector<torch::Tensor> valid;
  auto tokens = torch::zeros({seq.batch}, options);
  for (const auto& s : seq.segments) {
    valid.push_back(s.mask.logical_not().to(torch::kLong));
    tokens = tokens + valid.back().sum(1);
    t.length += s.mask.size(1);
  }
  auto tokens_before = torch::zeros({seq.batch}, options), padded_before = tokens_before;
  std::vector<torch::Tensor> positions;
  for (size_t i = 0; i < seq.segments.size(); ++i) {
    const auto& v = valid[i];
    const auto p = 1 - v;
    auto as_token = v.cumsum(1) - 1 + tokens_before.unsqueeze(1);
    auto as_padding = p.cumsum(1) - 1 + (tokens + padded_before).unsqueeze(1);
    auto pos = torch::where(v.to(torch::kBool), as_token, as_padding);
    positions.push_back(pos.reshape({-1}).index_select(0, seq.index[i].flat));
    tokens_before = tokens_before + v.sum(1);
    padded_before = padded_before + p.sum(1);
  }
  t.jet = seq.jet();
  const auto pos = positions.size() == 1 ? positions.front() : torch::cat(positions, 0);
  t.dest = t.jet * t.length + pos;
  t.starts = torch::cat({torch::zeros({1}, options), tokens.cumsum(0)});
  t.row_valid = row_valid;
  const int64_t n = t.dest.size(0);
  t.sorted = one_filled_segment(seq);  // its tokens, then its padding rows, both in order
  if (t.sorted) {
    t.order = torch::arange(n, options);
  } else {
    const auto padding_rank = t.row_valid.logical_not().to(torch::kLong).cumsum(0) - 1;
    const auto place = torch::where(t.row_valid, t.starts.index_select(0, t.jet) + pos,
                                    t.starts.narrow(0, seq.batch, 1) + padding_rank);
    t.order = torch::empty({n}, options).index_copy_(0, place, torch::arange(n, options));
  }
  t.pad_mask = torch::arange(t.length, options).unsqueeze(0) >= tokens.unsqueeze(1);
  return t;
}
}  // namespace

TokenLayout TokenLayout::of(const PackedSequence& seq) {
  if (const auto row_valid = seq.row_valid(); row_valid.defined()) return static_layout(seq, row_valid);
  TokenLayout t;
  t.batch = seq.batch;
  t.kernels = seq.kernels;
  const auto device = seq.x.defined() ? seq.x.device() : torch::Device(torch::kCPU);
  auto count = torch::zeros({seq.batch}, torch::dtype(torch::kLong).device(device));
  std::vector<torch::Tensor> positions;
  for (size_t i = 0; i < seq.segments.size(); ++i) {
    auto valid = seq.segments[i].mask.logical_not().to(torch::kLong);
    // Position of slot l of jet b: tokens of earlier segments + valid slots before it.
    auto pos = valid.cumsum(1) - 1 + count.unsqueeze(1);
    positions.push_back(pos.reshape({-1}).index_select(0, seq.index[i].flat));
    count = count + valid.sum(1);
  }
  t.length = seq.batch > 0 ? known_length(seq) : 0;
  if (t.length < 0) t.length = host_read<int64_t>(count.max());
  t.jet = seq.jet();
  auto pos = positions.size() == 1 ? positions.front() : torch::cat(positions, 0);
  t.dest = t.jet * t.length + pos;
  t.starts = torch::cat({torch::zeros({1}, count.options()), count.cumsum(0)});
  const int64_t n = t.dest.size(0);
  t.sorted = one_filled_segment(seq);
  t.order = t.sorted ? torch::arange(n, count.options())
                     : torch::empty({n}, count.options())
                           .index_copy_(0, t.starts.index_select(0, t.jet) + pos, torch::arange(n, count.options()));
  t.pad_mask = torch::arange(t.length, count.options()).unsqueeze(0) >= count.unsqueeze(1);
  return t;
}

TokenLayout TokenLayout::padded_as_salt(const PackedSequence& seq) {
  if (seq.row_valid().defined()) throw UsageError("model: salt's padded layout is not built for static rows");
  TokenLayout t = of(seq);
  std::vector<torch::Tensor> positions, masks;
  int64_t offset = 0;
  for (size_t i = 0; i < seq.segments.size(); ++i) {
    const auto& mask = seq.segments[i].mask;
    const int64_t width = mask.size(1);
    auto slot = torch::arange(offset, offset + width, t.jet.options()).unsqueeze(0).expand({seq.batch, width});
    positions.push_back(slot.reshape({-1}).index_select(0, seq.index[i].flat));
    masks.push_back(mask);
    offset += width;
  }
  t.length = offset;
  t.dest = t.jet * t.length + (positions.size() == 1 ? positions.front() : torch::cat(positions, 0));
  t.pad_mask = masks.size() == 1 ? masks.front() : torch::cat(masks, 1);
  return t;
}

namespace {

// index_select's gradient (an index_add) accumulated in float32, then cast back.
class GatherRows : public torch::autograd::Function<GatherRows> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& index) {
    ctx->save_for_backward({index});
    ctx->saved_data["rows"] = x.size(0);
    return x.index_select(0, index);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto index = ctx->get_saved_variables()[0];
    const auto& g = grads[0];
    auto shape = g.sizes().vec();
    shape[0] = ctx->saved_data["rows"].toInt();
    auto sum = torch::zeros(shape, g.options().dtype(torch::kFloat)).index_add_(0, index, g.to(torch::kFloat));
    return {sum.to(g.scalar_type()), torch::Tensor()};
  }
};

// index_select's gradient as a segment sum over rows grouped by their source. The
// groups travel as a plain argument: autograd takes every tensor argument for an
// input, and an undefined `order` has no device to record. Their kernel choice is
// saved with them: the backward runs later, on autograd's threads.
class GatherGroupedRows : public torch::autograd::Function<GatherGroupedRows> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& index, const RowGroups& groups) {
    ctx->saved_data["counts"] = groups.counts;
    if (groups.order.defined()) ctx->saved_data["order"] = groups.order;
    ctx->saved_data["segment_sum_kernel"] = groups.segment_sum_kernel;
    return x.index_select(0, index);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto order = ctx->saved_data.count("order") ? ctx->saved_data["order"].toTensor() : torch::Tensor();
    auto sum = segment_sum_rows(grads[0], ctx->saved_data["counts"].toTensor(), order,
                                ctx->saved_data["segment_sum_kernel"].toBool());
    return {sum, torch::Tensor(), torch::Tensor()};  // one per argument
  }
};

}  // namespace

torch::Tensor gather_rows_by_segments(const torch::Tensor& x, const torch::Tensor& index, const RowGroups& groups) {
  if (!x.requires_grad() || !torch::GradMode::is_enabled()) return x.index_select(0, index);
  return GatherGroupedRows::apply(x, index, groups);
}

torch::Tensor gather_rows(const torch::Tensor& x, const torch::Tensor& index, const RowGroups& groups) {
  return x.is_cuda() ? gather_rows_by_segments(x, index, groups) : gather_rows(x, index);
}

torch::Tensor gather_rows(const torch::Tensor& x, const torch::Tensor& index) {
  const bool half = x.scalar_type() == torch::kBFloat16 || x.scalar_type() == torch::kHalf;
  if (!half || !x.requires_grad() || !torch::GradMode::is_enabled()) return x.index_select(0, index);
  return GatherRows::apply(x, index);
}

torch::Tensor gather_pair_relu(const torch::Tensor& p_i, const torch::Tensor& p_j, const torch::Tensor& row_i,
                               const torch::Tensor& row_j, const RowGroups& senders, const RowGroups& receivers) {
  const PairSide sends{senders.counts, senders.order}, receives{receivers.counts, receivers.order};
  if (senders.segment_sum_kernel && pair_relu_takes(p_i, p_j, sends, receives))
    return pair_relu(p_i, p_j, row_i, row_j, sends, receives);
  auto h = gather_rows(p_i, row_i, senders);
  h.add_(gather_rows(p_j, row_j, receivers));
  return torch::relu(h);
}

void check_layers_fit(const torch::nn::Module& first, int64_t count, const std::string& what) {
  double layer_bytes = 0;
  for (const auto& p : first.parameters()) layer_bytes += static_cast<double>(p.numel()) * p.element_size();
  const double memory = physical_memory_bytes(), need = layer_bytes * static_cast<double>(count);
  if (memory <= 0 || need <= memory) return;
  throw UsageError(what + " " + std::to_string(count) + ": layers of " + bytes_text(layer_bytes) +
                   " of parameters each need " + bytes_text(need) + ", more than this machine's " +
                   bytes_text(memory) + " of memory");
}

void poll_stop() {
  if (int signal = stop_signal()) throw StopRequested{signal};
}

TokenLayout TokenLayout::sorted_view() const {
  if (sorted) return *this;
  TokenLayout t = *this;
  t.dest = dest.index_select(0, order);
  t.jet = jet.index_select(0, order);
  t.order = torch::arange(order.size(0), order.options());
  if (row_valid.defined()) t.row_valid = row_valid.index_select(0, order);
  t.sorted = true;
  return t;
}

torch::Tensor TokenLayout::sort_rows(const torch::Tensor& rows) const {
  if (sorted) return rows;
  // rank[order[i]] = i: where each packed row goes.
  auto rank = torch::empty_like(order).index_copy_(0, order, torch::arange(order.size(0), order.options()));
  return torch::empty_like(rows).index_copy(0, rank, rows);
}

torch::Tensor TokenLayout::unsort_rows(const torch::Tensor& sorted_rows) const {
  if (sorted) return sorted_rows;
  return torch::empty_like(sorted_rows).index_copy(0, order, sorted_rows);
}

torch::Tensor TokenLayout::scatter(const torch::Tensor& rows) const {
  auto shape = row_shape(batch, rows);
  shape.insert(shape.begin() + 1, length);
  return scatter_rows(rows, dest, batch * length).view(shape);
}

torch::Tensor TokenLayout::gather(const torch::Tensor& padded) const {
  return padded.reshape({batch * length, padded.size(-1)}).index_select(0, dest);
}

}  // namespace salt::models
