// Types shared by the model zoo: the label map (as in salt::Batch), the ordered
// constituent segments that make up one concatenated sequence, and small masked
// tensor helpers.
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "models/packing/forward_context.h"

namespace salt::models {

// input name -> label name -> tensor ([B] or [B, L]); same layout as salt::Batch::labels.
using Labels = std::map<std::string, std::map<std::string, torch::Tensor>>;
// input name -> tensor; same layout as salt::Batch::inputs / pad_masks.
using TensorMap = std::map<std::string, torch::Tensor>;

// One constituent type inside a concatenated sequence: its name and its pad mask
// (bool [B, L_i], true = padded). "REGISTERS" names the encoder's register tokens.
struct Segment {
  std::string name;
  torch::Tensor mask;
};

// Several constituent types concatenated along the sequence dimension, in a fixed
// order (the order of the init nets, then the registers).
struct Sequence {
  torch::Tensor x;                // [B, L, D]
  std::vector<Segment> segments;  // masks in the order of x's slices

  // All segment masks concatenated: [B, L].
  torch::Tensor mask() const;
  // The slice of x belonging to `name` ([B, L_name, D]); throws UsageError if absent.
  torch::Tensor slice(const std::string& name) const;
  const Segment* find(const std::string& name) const;
};

inline const char* kRegisters = "REGISTERS";

// The valid slots of one padded segment, "packed": flat = b * L + l of every valid
// slot in ascending (jet, slot) order, jet = b. Per-token layers run on the packed
// rows [N, ...] only, so padded slots cost nothing.
struct TokenIndex {
  torch::Tensor flat;  // [N] int64
  torch::Tensor jet;   // [N] int64
  int64_t batch = 0, length = 0;
  // The most valid slots of one jet, where known without reading the device (-1:
  // not known), and whether every jet has that many (the encoder's registers).
  int64_t most = -1;
  bool uniform = false;
  // Valid slots per jet, [B] int64 on the host, where the mask's host copy gave them.
  torch::Tensor host_counts;
  // Static rows only (static_rows.h): bool [C], true for the valid rows, which come
  // first; the padding rows after them are padded slots (flat and jet hold them).
  torch::Tensor row_valid;

  // pad_mask: bool [B, L], true = padded. With the mask's host twin among
  // context.twins (host_twins.h), no read of the device: the count comes from the
  // host copy. With context.static_rows, the valid slots then padded ones up to the
  // count's bucket capacity (noted there).
  static TokenIndex from_mask(const torch::Tensor& pad_mask, const ForwardContext& context = {});
  // Every slot of [batch, length] valid.
  static TokenIndex all_valid(int64_t batch, int64_t length, const torch::Device& device);
  int64_t size() const { return flat.size(0); }
  // [B, L, ...] -> [N, ...]: the valid slots (padding rows: zeros).
  torch::Tensor gather(const torch::Tensor& padded) const;
  // [N, ...] -> [B, L, ...], zeros at padded slots.
  torch::Tensor scatter(const torch::Tensor& rows) const;
  // rows [N, ...] with the padding rows set to 0 (static rows; else rows itself).
  torch::Tensor zero_padding(const torch::Tensor& rows) const;
};

// A Sequence in packed form: x holds the valid tokens of every segment, segment
// after segment (registers last), each segment in (jet, slot) order.
struct PackedSequence {
  torch::Tensor x;                 // [N, D]
  std::vector<Segment> segments;   // the padded masks, as in Sequence
  std::vector<TokenIndex> index;   // per segment
  std::vector<int64_t> offsets;    // per segment: first row in x; back() = N (size segments + 1)
  int64_t batch = 0;
  // The kernels the forward pass chose (ForwardContext::kernels), for the layouts
  // of these rows (TokenLayout::of) and the attention on them.
  ForwardKernels kernels;

  // Appends a segment: its mask and its packed rows (rows.size(0) valid tokens).
  void append(const std::string& name, const torch::Tensor& mask, const TokenIndex& idx, const torch::Tensor& rows);
  void pop_back();
  // Each segment by TokenIndex::from_mask(mask, context); kernels: the context's.
  static PackedSequence pack(const Sequence& seq, const ForwardContext& context = {});
  // Padded layout again, zeros at padded slots.
  Sequence unpack() const;
  int64_t find(const std::string& name) const;  // segment index or -1
  torch::Tensor rows(int64_t segment) const { return x.narrow(0, offsets[segment], offsets[segment + 1] - offsets[segment]); }
  torch::Tensor jet() const;  // [N] int64
  // bool [N]: the segments' row_valid, true for segments without padding rows;
  // undefined when no segment has static rows.
  torch::Tensor row_valid() const;
};

// Where attention and pooling put the packed tokens: a compact padded [B, Lc]
// layout with each jet's tokens (all segments, registers included) at positions
// 0..n_b-1 and Lc = max n_b (<= the padded length). Attention is permutation
// equivariant over a jet's tokens, so this order changes nothing but the work.
struct TokenLayout {
  torch::Tensor dest;      // [N] int64: b * Lc + position of each packed row
  torch::Tensor jet;       // [N] int64
  torch::Tensor pad_mask;  // bool [B, Lc], true = no token
  torch::Tensor starts;    // [B + 1] int64: jet b's tokens are order[starts[b] .. starts[b+1])
  torch::Tensor order;     // [N] int64: packed rows sorted by (jet, position)
  int64_t batch = 0, length = 0;
  // The rows are already in (jet, position) order (one segment holds every token):
  // order is the identity, and kernels on jet-contiguous rows need no permutation.
  bool sorted = false;
  // Static rows (static_rows.h): bool [N] in the rows' order, false at the padding
  // rows. Those sit in pad_mask's places (Lc = every segment's slots) and after
  // starts[B] in `order`, so attention and pooling never read them.
  torch::Tensor row_valid;
  // The sequence's kernels (PackedSequence::kernels): which one attention takes.
  ForwardKernels kernels;

  static TokenLayout of(const PackedSequence& seq);
  // The padded layout salt's encoder has without flash-varlen: every segment's
  // slots, segment after segment (Lc = their sum), a token at its own slot. Random
  // draws over [B, Lc, ...] (dropout) are then salt's draws, so a CPU fit with
  // dropout draws salt's masks; the jets' rows (starts, order) are as in of(seq).
  static TokenLayout padded_as_salt(const PackedSequence& seq);
  // This layout for the rows permuted into `order` (row i is packed row order[i]):
  // sorted, with dest and jet permuted alike. See sort_rows / unsort_rows.
  TokenLayout sorted_view() const;
  // [N, ...] packed rows -> the same rows in `order`, and back. Both are copies
  // through index_copy, so neither's gradient needs atomic adds.
  torch::Tensor sort_rows(const torch::Tensor& rows) const;
  torch::Tensor unsort_rows(const torch::Tensor& sorted_rows) const;
  // [N, F] -> [B, Lc, F], zeros where pad_mask.
  torch::Tensor scatter(const torch::Tensor& rows) const;
  // [B, Lc, F] (or [B * Lc, F]) -> [N, F].
  torch::Tensor gather(const torch::Tensor& padded) const;
  // rows [N, ...] with the padding rows set to 0 (static rows; else rows itself).
  torch::Tensor zero_padding(const torch::Tensor& rows) const;
};

// The indices of flat's true entries, ascending: flat.nonzero() for a bool vector
// with `count` true entries, where count comes from the host, so that the device
// need not be read for the output's size (as nonzero() must).
torch::Tensor nonzero_counted(const torch::Tensor& flat, int64_t count);
// What nonzero_counted runs off the CPU (on the CPU it calls nonzero()): a stable
// partition of the indices, every shape known in advance. Exposed for tests.
torch::Tensor nonzero_by_partition(const torch::Tensor& flat, int64_t count);
// Every index of the bool vector flat, its true entries first, each part ascending:
// the partition above with the count read on the device, for static rows (the
// caller keeps a bucket's capacity of them).
torch::Tensor true_entries_first(const torch::Tensor& flat);

// x.index_select(0, index), whose backward sums the gradient rows in float32 when x
// is bf16/fp16: the many rows that share one source (a jet's tracks, a track's
// edges) made half-precision atomic adds slow on a card (docs/performance.md). Same
// values as index_select.
torch::Tensor gather_rows(const torch::Tensor& x, const torch::Tensor& index);

// How a gather's index groups by source row, so that the backward sums each row's
// gradients as one contiguous segment instead of with atomic adds:
// index.index_select(0, order) is non-decreasing (`order` undefined: index already is),
// and counts[r] is how often row r occurs (counts.size(0) == x.size(0)).
struct RowGroups {
  torch::Tensor counts;  // [R] int64
  torch::Tensor order;   // [E] int64, or undefined
  // The backward's sums on a card through salt-cpp's kernel (segment_sum.h;
  // ForwardKernels::segment_sum_kernel), else LibTorch's operators.
  bool segment_sum_kernel = false;
};
// x.index_select(0, index), whose backward is a segment sum in float32 (any dtype).
// The edge gathers of a vertexing task (a million edges onto ~60k tracks at GN2's
// batch 4000) spent their backward in float atomic adds (docs/performance.md).
torch::Tensor gather_rows_by_segments(const torch::Tensor& x, const torch::Tensor& index, const RowGroups& groups);
// gather_rows_by_segments on a GPU; on the CPU gather_rows(x, index), whose serial
// index_add is faster there (docs/performance.md).
torch::Tensor gather_rows(const torch::Tensor& x, const torch::Tensor& index, const RowGroups& groups);

// relu(gather_rows(p_i, row_i, senders) + gather_rows(p_j, row_j, receivers)): a
// vertexing edge net's first hidden layer (vertexing_task.cpp). On a card with
// senders.segment_sum_kernel (SALT_SEGMENT_SUM_KERNEL) in one pass through salt-cpp's
// kernels (models/kernels/pair_relu.h), else through these operators.
torch::Tensor gather_pair_relu(const torch::Tensor& p_i, const torch::Tensor& p_j, const torch::Tensor& row_i,
                               const torch::Tensor& row_j, const RowGroups& senders, const RowGroups& receivers);

// Before building `count` layers like `first` (built already): refuses, in one line
// naming `what`, a stack whose parameters alone would exceed this machine's memory.
// Such a stack filled the memory for minutes, deaf to SIGTERM, until the OOM killer
// ended it without a word. Between layers, poll_stop() ends a long build on a signal.
void check_layers_fit(const torch::nn::Module& first, int64_t count, const std::string& what);
void poll_stop();

// Softmax along `dim` that ignores masked (true) entries and returns 0 for them;
// a slice with every entry masked gives all zeros, never NaN. `mask` must be
// broadcastable to x.
torch::Tensor masked_softmax(const torch::Tensor& x, const torch::Tensor& mask, int64_t dim);

// cat([context broadcast over x's middle dims, x], -1): salt puts context first.
torch::Tensor attach_context(const torch::Tensor& x, const torch::Tensor& context);

}  // namespace salt::models
