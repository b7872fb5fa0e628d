// The float64 reference of the kernel-level cases (kernel_reference.h).
#include "kernel_reference.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <limits>

namespace webattention::kernel_reference {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Adds mask entry `at` to a score: -inf where a boolean mask is set or an additive one is -inf
// (whatever the score: masked means absent, README), else the value of an additive one.
void apply(const Mask& m, std::size_t at, double& score) {
  if (m.kind == MaskKind::kBoolean && m.boolean[at]) score = kNegInf;
  if (m.kind == MaskKind::kAdditive) score = m.additive[at] == kNegInf ? kNegInf : score + m.additive[at];
}

// Softmax of one row in place: a row with no allowed key (every key hidden: masked) becomes
// zeros; one whose allowed keys all score -inf by arithmetic (an infinite query or key) NaN, as
// PyTorch's exp(-inf - -inf).
void softmax(std::vector<double>& s, const std::vector<bool>& hidden) {
  const double max = *std::max_element(s.begin(), s.end());
  if (max == kNegInf) {
    const bool allowed = std::find(hidden.begin(), hidden.end(), false) != hidden.end();
    std::fill(s.begin(), s.end(), allowed ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    return;
  }
  double sum = 0.0;
  for (double& x : s) sum += (x = std::exp(x - max));
  for (double& x : s) x /= sum;
}

}  // namespace

std::vector<double> attention(const AttentionShape& s, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v,
                              const Mask& key_padding, const Mask& attn_mask,
                              std::vector<double>* weights) {
  const int group = s.heads / s.kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.dk));
  std::vector<double> out(static_cast<std::size_t>(s.batch) * s.L * s.heads * s.dv);
  if (weights) weights->assign(static_cast<std::size_t>(s.batch) * s.heads * s.L * s.S, 0.0);
  std::vector<double> p(s.S);
  std::vector<bool> hidden(s.S);
  for (int b = 0; b < s.batch; ++b) {
    for (int h = 0; h < s.heads; ++h) {
      const int g = h / group;
      for (int i = 0; i < s.L; ++i) {
        const long position = s.query_offset + i;
        const float* qi = &q[((static_cast<std::size_t>(b) * s.L + i) * s.heads + h) * s.dk];
        for (int j = 0; j < s.S; ++j) {
          const float* kj = &k[((static_cast<std::size_t>(b) * s.S + j) * s.kv_heads + g) * s.dk];
          double dot = 0.0;
          for (int c = 0; c < s.dk; ++c) dot += double{qi[c]} * kj[c];
          const bool allowed = (!s.causal || j <= position) && (s.window <= 0 || j > position - s.window);
          p[j] = allowed ? dot * scale : kNegInf;
          // Hidden by the masks alone: a score of -inf by arithmetic is a key present with weight 0.
          double mask = allowed ? 0.0 : kNegInf;
          for (double* score : {&p[j], &mask}) {
            apply(key_padding, static_cast<std::size_t>(b) * s.S + j, *score);
            apply(attn_mask, ((static_cast<std::size_t>(b) * s.heads + h) * s.L + i) * s.S + j, *score);
          }
          hidden[j] = mask == kNegInf;
        }
        softmax(p, hidden);
        double* o = &out[((static_cast<std::size_t>(b) * s.L + i) * s.heads + h) * s.dv];
        for (int j = 0; j < s.S; ++j) {
          if (hidden[j]) continue;  // a masked key never reaches the row, NaN or Inf values too
          // (an allowed key of weight 0 does: 0 · Inf is NaN, as in PyTorch)
          const float* vj = &v[((static_cast<std::size_t>(b) * s.S + j) * s.kv_heads + g) * s.dv];
          for (int c = 0; c < s.dv; ++c) o[c] += p[j] * vj[c];
        }
        if (weights) std::copy(p.begin(), p.end(), weights->begin() + ((static_cast<std::size_t>(b) * s.heads + h) * s.L + i) * s.S);
      }
    }
  }
  return out;
}

std::vector<double> rotary(const std::vector<float>& x, int heads, int head_dim, int dim,
                           bool interleaved, double base, const std::vector<std::int64_t>& positions) {
  std::vector<double> y(x.begin(), x.end());
  const int half = dim / 2;
  for (std::size_t i = 0; i < positions.size(); ++i) {
    for (int h = 0; h < heads; ++h) {
      double* row = &y[(i * heads + h) * head_dim];
      for (int j = 0; j < half; ++j) {
        const double angle = static_cast<double>(positions[i]) * std::pow(base, -2.0 * j / dim);
        double& a = row[interleaved ? 2 * j : j];
        double& b = row[interleaved ? 2 * j + 1 : j + half];
        const double x1 = a, x2 = b;
        a = x1 * std::cos(angle) - x2 * std::sin(angle);
        b = x2 * std::cos(angle) + x1 * std::sin(angle);
      }
    }
  }
  return y;
}

}  // namespace webattention::kernel_reference
