// Scaled dot-product attention, softmax(Q Kᵀ · scale + masks) V, and plain self-attention
// softmax(X Xᵀ / √C) X (docs/attention-math/basics.md §1, §2).
//
// One deliberate difference from PyTorch: a query row whose keys are all masked gets a zero
// output row (and zero weights) instead of NaN.
#pragma once

#include <optional>

#include "webattention/mask.h"

namespace webattention {

// Functional scaled dot-product attention on contiguous tensors with flattened leading dims:
// q [N, L, dk], k [N, S, dk], v [N, S, dv] -> out [N, L, dv]. No `scale` means 1/√dk; a given
// one must be finite and > 0 (ConfigError "scale" otherwise). attn_mask is [L, S] or [N, L, S]. weights, if not null, receives [N, L, S].
struct SdpaArgs {
  int N = 1, L = 0, S = 0, dk = 0, dv = 0;
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  MaskArg attn_mask;
  bool causal = false;
  std::optional<float> scale;
  float* out = nullptr;
  float* weights = nullptr;
};
void scaled_dot_product_attention(const SdpaArgs& args);

// softmax(X Xᵀ / √C) X for x [N, L, C]; weights (optional) [N, L, L].
void self_attention(int N, int L, int C, const float* x, float* out, float* weights);

}  // namespace webattention
