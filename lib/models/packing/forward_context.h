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

// Which of salt-cpp's own kernels a card's forward and backward take. Each changes
// the kernel only, on a card (the CPU runs the same operators either way). These
// initialisers are the defaults of SALT_SHORT_ATTENTION and SALT_SEGMENT_SUM_KERNEL
// (StepOptions starts from them).
struct ForwardKernels {
  // Flash-varlen attention on short jets through salt-cpp's kernel
  // (models/kernels/short_attention.h) instead of flash attention's: the H200 at
  // 8f92c71 ran the gpu tests and cut the step's card time by 31 %.
  bool short_attention = true;
  // The vertexing gradients' row sums through salt-cpp's kernel
  // (models/kernels/segment_sum.h) instead of LibTorch's operators: off, as on an
  // H200 its gpu test passed but the step ran 0.85x LibTorch's operators.
  bool segment_sum_kernel = false;
};

struct ForwardContext {
  // The batch's host copies (host_twins.h): what the model must know of its masks
  // and labels is read there instead of from the device. Null: read the device.
  const HostTwins* twins = nullptr;
  // Static rows (static_rows.h): packed rows and vertexing edges padded to their
  // bucket's capacity, each capacity noted here. Null: plain packing.
  StaticRows* static_rows = nullptr;
  ForwardKernels kernels;
};

}  // namespace salt::models
