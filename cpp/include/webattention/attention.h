// Scaled dot-product attention, softmax(Q Kᵀ · scale + masks) V, and plain self-attention
// softmax(X Xᵀ / √C) X (docs: attention-math §1, §2).
//
// One deliberate difference from PyTorch: a query row whose keys are all masked gets a zero
// output row (and zero weights) instead of NaN.
#pragma once

#include <cstddef>
#include <vector>

#include "webattention/mask.h"

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
  float* out = nullptr;  // written with the same strides as `out_rows`
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

// Runs the problem. The caller guarantees the shapes (see the checked entry points below).
void run_attention(const AttentionProblem& p);

// Functional scaled dot-product attention on contiguous tensors with flattened leading dims:
// q [N, L, dk], k [N, S, dk], v [N, S, dv] -> out [N, L, dv]. `scale` <= 0 or NaN means
// 1/√dk. attn_mask is [L, S] or [N, L, S]. weights, if not null, receives [N, L, S].
struct SdpaArgs {
  int N = 1, L = 0, S = 0, dk = 0, dv = 0;
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  MaskArg attn_mask;
  bool causal = false;
  float scale = 0.0f;
  float* out = nullptr;
  float* weights = nullptr;
};
void scaled_dot_product_attention(const SdpaArgs& args);

// softmax(X Xᵀ / √C) X for x [N, L, C]; weights (optional) [N, L, L].
void self_attention(int N, int L, int C, const float* x, float* out, float* weights);

}  // namespace webattention
