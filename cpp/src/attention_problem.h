// The problem the attention kernels solve, as the core hands it to them: strided views of Q, K
// and V, masks as strided views, and where the output and weights go. Private to the core; the
// public entry points (webattention/attention.h, multihead_attention.h) build it from checked
// arguments.
#pragma once

#include <cstddef>

#include "mask_view.h"

namespace webattention {

// A batch of independent attention problems over strided row-major data. Row r of head h in
// batch b of a tensor t starts at t.data + b*batch_stride + h*head_stride + r*row_stride; the
// features of one row are contiguous. This lets multi-head attention run on the projected
// [B, L, h·d] buffers without copying heads apart.
struct StridedRows {
  const float* data = nullptr;
  std::ptrdiff_t batch_stride = 0;
  std::ptrdiff_t head_stride = 0;
  std::ptrdiff_t row_stride = 0;
};

struct AttentionProblem {
  int batch = 1, heads = 1;  // independent (b, h) pairs
  int L = 0, S = 0;          // query rows, key rows
  int dk = 0, dv = 0;        // query/key width, value width
  StridedRows q, k, v;
  float* out = nullptr;  // row i of (b, h) at out + b*out_batch_stride + h*out_head_stride + i*out_row_stride
  std::ptrdiff_t out_batch_stride = 0, out_head_stride = 0, out_row_stride = 0;
  float scale = 1.0f;
  bool causal = false;  // key j is not allowed for query i when j > i
  MaskView masks[2];    // applied together (key padding and attention mask)
  // Optional attention probabilities: [batch, heads, L, S], or [batch, L, S] averaged over the
  // heads when average_weights is set. Null unless asked for: no L×S buffer otherwise.
  float* weights = nullptr;
  bool average_weights = false;
  // Averaged weights are each head's share 1 / averaged_heads (0: heads). A head range of a
  // larger module passes the module's head count, so the ranges' shares add up to its average.
  int averaged_heads = 0;
  float average_share() const { return 1.0f / static_cast<float>(averaged_heads ? averaged_heads : heads); }
};

// Runs the problem on the kernels, (batch, head) pairs spread over the threads. The caller
// guarantees the shapes (the public entry points check them).
void run_attention(const AttentionProblem& p);

}  // namespace webattention
