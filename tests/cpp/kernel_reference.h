// The float64 reference of the kernel-level cases (tests/cases/kernel_cases.json): each op
// written from its formula (docs/attention-math.md), element by element, sharing nothing with the
// kernels' packed layouts or tiling, so that a layout or tiling bug cannot hide in it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "webattention/mask.h"

namespace webattention::kernel_reference {

// y [rows, out] = x [rows, in] · Wᵀ (+ b), W [out, in] row-major; x in float or double.
template <class T>
std::vector<double> linear(const std::vector<T>& x, int rows, int in, const std::vector<float>& w,
                           int out, const std::vector<float>* bias) {
  std::vector<double> y(static_cast<std::size_t>(rows) * out);
  for (int r = 0; r < rows; ++r) {
    for (int o = 0; o < out; ++o) {
      double sum = bias ? (*bias)[o] : 0.0;
      for (int c = 0; c < in; ++c) sum += static_cast<double>(x[static_cast<std::size_t>(r) * in + c]) * w[static_cast<std::size_t>(o) * in + c];
      y[static_cast<std::size_t>(r) * out + o] = sum;
    }
  }
  return y;
}

// A mask as the reference reads it: boolean (nonzero = not allowed) or additive.
struct Mask {
  MaskKind kind = MaskKind::kNone;
  std::vector<std::uint8_t> boolean;
  std::vector<float> additive;
  const void* data() const {
    return kind == MaskKind::kBoolean ? static_cast<const void*>(boolean.data()) : additive.data();
  }
};

// Attention with grouped-query heads and the position rule: query row i at position
// query_offset + i, key j at j; causal allows keys at positions <= the query's, a window (> 0)
// only those > position - window. q [B, L, H, dk], k [B, S, H_kv, dk], v [B, S, H_kv, dv];
// key_padding [B, S]; attn_mask [B·H, L, S]. A row with no allowed key is zero.
struct AttentionShape {
  int batch, heads, kv_heads, L, S, dk, dv;
  bool causal;
  int query_offset, window;
};
// out [B, L, H, dv]; probabilities [B, H, L, S] into *weights when given.
std::vector<double> attention(const AttentionShape& s, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v,
                              const Mask& key_padding, const Mask& attn_mask,
                              std::vector<double>* weights);

// Rotary position embedding of rows [positions.size(), heads·head_dim], row i at position
// positions[i]: pair j of each head (features (j, j + dim/2), or (2j, 2j + 1) interleaved) turned
// by positions[i]·θ_j, θ_j = base^(-2j/dim).
std::vector<double> rotary(const std::vector<float>& x, int heads, int head_dim, int dim,
                           bool interleaved, double base, const std::vector<std::int64_t>& positions);

}  // namespace webattention::kernel_reference
