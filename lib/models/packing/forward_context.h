// How one forward pass of the model is computed, beyond its inputs: passed down
// explicitly, never read from process-wide flags or thread-locals, so that two
// forward passes in one process (a fit's step and a bench's, a graph's capture
// and an eager validation) cannot steer each other. The training step fills it
// from its StepOptions (training/step/step_options.h), its batch's host copies and
// its CUDA graphs' static rows; every other caller (inference, ONNX export, tests)
// takes the default: no host copies, plain packing, the kernels' defaults.
// Torch-free.
#pragma once

namespace salt {
class HostTwins;
}

namespace salt::models {

class StaticRows;

// Which of salt-cpp's own kernels a card's forward and backward take, and the shapes
// the CPU's bf16 products meet. The first three change the kernel only, on a card (the
// CPU runs the same operators either way). These initialisers are the defaults of
// SALT_SHORT_ATTENTION, SALT_SEGMENT_SUM_KERNEL and SALT_NORM_CAST_KERNEL (StepOptions
// starts from them);
// the step sets bucketed_rows (training/step/step_options.h's forward_kernels).
struct ForwardKernels {
  // Flash-varlen attention on short jets through salt-cpp's kernel
  // (models/kernels/short_attention.h) instead of flash attention's, which pads
  // each jet to 128 rows (docs/performance.md).
  bool short_attention = true;
  // The vertexing edges through salt-cpp's kernels instead of LibTorch's operators:
  // the gradients' row sums (models/kernels/segment_sum.h) and, where a ReLU follows
  // the edge net's first Linear, that layer's gathers, add and ReLU
  // (models/kernels/pair_relu.h). Off, as on an H200 the sums' gpu test passed but
  // the step ran 0.85x LibTorch's operators (before the fused ReLU and the unrolling).
  bool segment_sum_kernel = false;
  // A pre-norm layer's LayerNorm written in autocast's bf16 or half through
  // salt-cpp's kernel (models/kernels/norm_cast.h) instead of LibTorch's float32
  // layer_norm and autocast's cast of it: off until a card has measured it.
  bool norm_cast_kernel = false;
  // Packed rows and vertexing edges padded to their bucket (static_rows.h) as under
  // a CUDA graph, without a record. For bf16 steps on a CPU whose bf16 products run
  // in oneDNN (AVX-512 BF16, AMX): oneDNN builds a primitive for each new shape, and
  // plain packing gives every batch new ones (at call M, on the card machine's Xeon,
  // such fits ran 3.3x slower than emulated bf16 while their steps on one repeated
  // batch were even). Buckets cost at most 1/16 more rows. Same results: padding
  // rows never reach a loss.
  bool bucketed_rows = false;
};

struct ForwardContext {
  // The batch's host copies (host_twins.h): what the model must know of its masks
  // and labels is read there instead of from the device. Null: read the device.
  const HostTwins* twins = nullptr;
  // Static rows (static_rows.h): packed rows and vertexing edges padded to their
  // bucket's capacity, each capacity noted here. Null: plain packing, unless
  // kernels.bucketed_rows pads them alike without a record.
  StaticRows* static_rows = nullptr;
  ForwardKernels kernels;
};

}  // namespace salt::models
