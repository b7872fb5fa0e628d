// Attention kernel, portable C++: one query row at a time, max-subtracted softmax over an S-long
// score row, then a weighted sum of value rows.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/kernels.h"

namespace webattention::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Adds one mask's row to the scores: boolean entries become -inf, additive entries are added.
void apply_mask(const MaskView& m, int b, int h, int i, int S, float* scores) {
  const std::ptrdiff_t offset = b * m.batch_stride + h * m.head_stride + i * m.row_stride;
  if (m.kind == MaskKind::kBoolean) {
    const std::uint8_t* row = m.boolean() + offset;
    for (int j = 0; j < S; ++j)
      if (row[j]) scores[j] = kNegInf;
  } else if (m.kind == MaskKind::kAdditive) {
    const float* row = m.additive() + offset;
    for (int j = 0; j < S; ++j) scores[j] += row[j];
  }
}

}  // namespace

std::size_t attention_workspace_floats(const AttentionProblem& p) {
  return static_cast<std::size_t>(p.S);  // one score row
}

void attention_head(const AttentionProblem& p, int b, int h, float* scores) noexcept {
  const float* q = p.q.data + b * p.q.batch_stride + h * p.q.head_stride;
  const float* k = p.k.data + b * p.k.batch_stride + h * p.k.head_stride;
  const float* v = p.v.data + b * p.v.batch_stride + h * p.v.head_stride;
  float* out = p.out + b * p.out_batch_stride + h * p.out_head_stride;

  for (int i = 0; i < p.L; ++i) {
    const float* qi = q + i * p.q.row_stride;
    // Causal: keys after the query row are never looked at.
    const int keys = p.causal ? std::min(p.S, i + 1) : p.S;
    for (int j = 0; j < keys; ++j) {
      const float* kj = k + j * p.k.row_stride;
      float dot = 0.0f;
      for (int c = 0; c < p.dk; ++c) dot += qi[c] * kj[c];
      scores[j] = dot * p.scale;
    }
    for (int j = keys; j < p.S; ++j) scores[j] = kNegInf;
    for (const MaskView& m : p.masks) apply_mask(m, b, h, i, p.S, scores);

    float max = kNegInf;
    for (int j = 0; j < p.S; ++j) max = std::max(max, scores[j]);
    // A row with no allowed key: zero output and zero weights, not NaN (documented difference).
    const bool all_masked = max == kNegInf;
    float sum = 0.0f;
    for (int j = 0; j < p.S; ++j) {
      const float e = all_masked ? 0.0f : std::exp(scores[j] - max);
      scores[j] = e;
      sum += e;
    }
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;

    float* oi = out + i * p.out_row_stride;
    for (int c = 0; c < p.dv; ++c) oi[c] = 0.0f;
    for (int j = 0; j < p.S; ++j) {
      const float w = scores[j] * inv;
      scores[j] = w;
      if (w == 0.0f) continue;
      const float* vj = v + j * p.v.row_stride;
      for (int c = 0; c < p.dv; ++c) oi[c] += w * vj[c];
    }

    if (p.weights) {
      const std::ptrdiff_t LS = static_cast<std::ptrdiff_t>(p.L) * p.S;
      if (p.average_weights) {
        // The caller zeroed the buffer; each head adds its share.
        float* wrow = p.weights + b * LS + static_cast<std::ptrdiff_t>(i) * p.S;
        const float share = p.average_share();
        for (int j = 0; j < p.S; ++j) wrow[j] += scores[j] * share;
      } else {
        float* wrow = p.weights + (static_cast<std::ptrdiff_t>(b) * p.heads + h) * LS +
                      static_cast<std::ptrdiff_t>(i) * p.S;
        for (int j = 0; j < p.S; ++j) wrow[j] = scores[j];
      }
    }
  }
}

}  // namespace webattention::kernels
