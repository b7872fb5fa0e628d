// Fused flash attention, written once for every ISA. Per (batch, head): the head's Q
// (pre-scaled), Kᵀ and V are packed once into the workspace; then each group of 4 query rows
// streams over key tiles with an online softmax (running max and sum, rescaled accumulator), so
// memory stays O((L + S)·d) whatever the mask. Causal groups stop at the diagonal: tiles above it
// are never computed. Attention weights, when asked for, take a second pass with the final max
// and sum.
//
// Each ISA's kernel file (attention_simd128.cpp, attention_scalar.cpp) supplies only the inner
// loops, as static members of a struct `Isa`, and forwards attention_head() to the template
// below: the native tests (scalar) then check the very algorithm the SIMD modules ship.
//   Isa::Block                  4 rows × 8 columns of accumulators: zero(), load_row(r, src),
//                               madd(x0, x1, x2, x3, w): row r += x_r · w[0..8), store_row(r, dst)
//   Isa::add_row(s, m, n)       s[j] += m[j] for j < n (an additive mask row)
//   Isa::row_max(s, width)      max of s[0..width); NaN never wins (pmax: m < s ? s : m)
//   Isa::exp_row(s, width, max, factor)  s[j] = exp(s[j] - max) · factor; returns Σ exp(s[j] - max)
//   Isa::scale_row(a, n, factor)         a[c] *= factor for c < n (n a multiple of 8)
// widths are multiples of 8. Declare `Isa` in an anonymous namespace: the templates' instances
// then have internal linkage, and the compiler inlines and keeps calls as it would for the
// file's own static functions (CMakeLists.txt and kernels/*_simd128.cpp say why calls matter).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/kernels.h"

namespace webattention::kernels::flash {

constexpr int kRows = 4;        // query rows per register block
constexpr int kKeyTile = 256;   // keys per tile: Kᵀ and V tiles of 256·d floats stay in L1/L2
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

constexpr int round_up(int n, int m) { return (n + m - 1) / m * m; }

inline bool has_nan(const float* s, int n) {
  for (int j = 0; j < n; ++j)
    if (std::isnan(s[j])) return true;
  return false;
}

struct Layout {
  int L_pad, S_pad, dv_pad;
  std::size_t q, kt, v, scores, acc, total;  // offsets in floats

  explicit Layout(const AttentionProblem& p)
      : L_pad(round_up(p.L, kRows)), S_pad(round_up(p.S, kPanelWidth)),
        dv_pad(round_up(p.dv, kPanelWidth)) {
    q = 0;
    kt = q + static_cast<std::size_t>(L_pad) * p.dk;
    v = kt + static_cast<std::size_t>(p.dk) * S_pad;
    scores = v + static_cast<std::size_t>(S_pad) * dv_pad;
    acc = scores + kRows * kKeyTile;
    total = acc + static_cast<std::size_t>(kRows) * dv_pad;
  }
};

// Copies the head's Q·scale [L_pad, dk], K and V into the workspace, zero-padded. K and V go into
// panels of 8 keys / 8 value columns ([S_pad/8][dk][8] and [dv_pad/8][S_pad][8]) so both
// micro-kernels below stream contiguous memory.
inline void pack_head(const AttentionProblem& p, int b, int h, const Layout& lay, float* ws) {
  const float* q = p.q.data + b * p.q.batch_stride + h * p.q.head_stride;
  const float* k = p.k.data + b * p.k.batch_stride + h * p.k.head_stride;
  const float* v = p.v.data + b * p.v.batch_stride + h * p.v.head_stride;
  float* qp = ws + lay.q;
  for (int i = 0; i < lay.L_pad; ++i) {
    const float* qi = q + std::min(i, p.L - 1) * p.q.row_stride;
    for (int c = 0; c < p.dk; ++c) qp[i * p.dk + c] = qi[c] * p.scale;
  }
  float* kp = ws + lay.kt;
  for (int j = 0; j < lay.S_pad; ++j) {
    const float* kj = k + j * p.k.row_stride;
    float* panel = kp + static_cast<std::size_t>(j / 8) * p.dk * 8 + j % 8;
    for (int c = 0; c < p.dk; ++c) panel[c * 8] = j < p.S ? kj[c] : 0.0f;
  }
  float* vp = ws + lay.v;
  for (int j = 0; j < lay.S_pad; ++j) {
    const float* vj = v + j * p.v.row_stride;
    for (int c = 0; c < lay.dv_pad; ++c) {
      vp[static_cast<std::size_t>(c / 8) * lay.S_pad * 8 + j * 8 + c % 8] =
          (j < p.S && c < p.dv) ? vj[c] : 0.0f;
    }
  }
}

// scores[r][0..width) = q rows (i0..i0+4) · K[j0..j0+width)ᵀ, width a multiple of 8.
template <class Isa>
void tile_scores(const float* q, int dk, const float* kp, int j0, int width, float* scores) {
  const float* q0 = q;
  const float* q1 = q + dk;
  const float* q2 = q + 2 * dk;
  const float* q3 = q + 3 * dk;
  for (int jb = 0; jb < width; jb += 8) {
    auto acc = Isa::Block::zero();
    const float* panel = kp + static_cast<std::size_t>((j0 + jb) / 8) * dk * 8;
    for (int c = 0; c < dk; ++c) acc.madd(q0[c], q1[c], q2[c], q3[c], panel + c * 8);
    for (int r = 0; r < kRows; ++r) acc.store_row(r, scores + r * kKeyTile + jb);
  }
}

// Masks one tile: padded keys, causal, then each mask. Rows >= `rows` are padding, left alone.
template <class Isa>
void mask_tile(const AttentionProblem& p, int b, int h, int i0, int rows, int j0, int width,
               float* scores) {
  for (int r = 0; r < rows; ++r) {
    const int i = i0 + r;
    float* s = scores + r * kKeyTile;
    // Keys past S (padding) and, when causal, past the row's own position are never allowed.
    const int allowed_end = std::min(p.S, p.causal ? i + 1 : p.S) - j0;
    for (int j = std::max(allowed_end, 0); j < width; ++j) s[j] = kNegInf;
    const int n = std::min(width, std::max(allowed_end, 0));
    for (const MaskView& m : p.masks) {
      if (m.empty()) continue;
      const std::ptrdiff_t at = b * m.batch_stride + h * m.head_stride + i * m.row_stride + j0;
      if (m.kind == MaskKind::kBoolean) {
        const std::uint8_t* row = m.boolean() + at;
        for (int j = 0; j < n; ++j)
          if (row[j]) s[j] = kNegInf;
      } else {
        Isa::add_row(s, m.additive() + at, n);
      }
    }
  }
}

// acc[r][0..dv_pad) += Σ_j p[r][j] · V[j0 + j][:], 4 rows × 8 columns per register block.
template <class Isa>
void accumulate_pv(const float* p, int width, const float* vp, int S_pad, int dv_pad, int j0,
                   float* acc) {
  for (int cb = 0; cb < dv_pad; cb += 8) {
    typename Isa::Block block;
    for (int r = 0; r < kRows; ++r) block.load_row(r, acc + r * dv_pad + cb);
    const float* vrow = vp + static_cast<std::size_t>(cb) * S_pad + j0 * 8;
    for (int j = 0; j < width; ++j, vrow += 8)
      block.madd(p[j], p[kKeyTile + j], p[2 * kKeyTile + j], p[3 * kKeyTile + j], vrow);
    for (int r = 0; r < kRows; ++r) block.store_row(r, acc + r * dv_pad + cb);
  }
}

// Second pass, only when weights are asked for: p = exp(s - max) / sum with the final stats.
template <class Isa>
void write_weights(const AttentionProblem& p, int b, int h, int i0, int rows, int key_end,
                   const float* q, const float* kt, const Layout& lay, float* scores,
                   const float* max, const float* sum) {
  const std::ptrdiff_t LS = static_cast<std::ptrdiff_t>(p.L) * p.S;
  for (int j0 = 0; j0 < p.S; j0 += kKeyTile) {
    const int width = std::min(kKeyTile, lay.S_pad - j0);
    if (j0 < key_end) {
      tile_scores<Isa>(q, p.dk, kt, j0, width, scores);
      mask_tile<Isa>(p, b, h, i0, rows, j0, width, scores);
    }
    for (int r = 0; r < rows; ++r) {
      float* s = scores + r * kKeyTile;
      // A NaN row (its max is NaN) is NaN everywhere, also in tiles causal never computed.
      const bool nan_row = std::isnan(max[r]);
      const bool zero = !nan_row && (j0 >= key_end || max[r] == kNegInf);
      // Averaged weights start at zero (run_attention): nothing to add for an all-zero row.
      if (zero && p.average_weights) continue;
      if (zero) {
        std::fill(s, s + width, 0.0f);
      } else if (j0 >= key_end) {
        std::fill(s, s + width, kNaN);
      } else {
        Isa::exp_row(s, width, max[r], 1.0f / sum[r]);
      }
      const int i = i0 + r;
      const int n = std::min(width, p.S - j0);
      if (p.average_weights) {
        float* w = p.weights + b * LS + static_cast<std::ptrdiff_t>(i) * p.S + j0;
        const float share = p.average_share();
        for (int j = 0; j < n; ++j) w[j] += s[j] * share;
      } else {
        float* w = p.weights + (static_cast<std::ptrdiff_t>(b) * p.heads + h) * LS +
                   static_cast<std::ptrdiff_t>(i) * p.S + j0;
        std::copy(s, s + n, w);
      }
    }
  }
}

inline std::size_t workspace_floats(const AttentionProblem& p) { return Layout(p).total; }

template <class Isa>
void attention_head(const AttentionProblem& p, int b, int h, float* ws) {
  const Layout lay(p);
  pack_head(p, b, h, lay, ws);
  const float* kt = ws + lay.kt;
  const float* v = ws + lay.v;
  float* scores = ws + lay.scores;
  float* acc = ws + lay.acc;
  float* out = p.out + b * p.out_batch_stride + h * p.out_head_stride;

  for (int i0 = 0; i0 < p.L; i0 += kRows) {
    const int rows = std::min(kRows, p.L - i0);
    const float* q = ws + lay.q + static_cast<std::size_t>(i0) * p.dk;
    // Causal: the group's last row sees keys up to its own index; later tiles are skipped.
    const int key_end = p.causal ? std::min(p.S, i0 + rows) : p.S;
    float max[kRows], sum[kRows];
    bool nan_row[kRows] = {};  // a NaN score where the row's max could not see it (below)
    std::fill(max, max + kRows, kNegInf);
    std::fill(sum, sum + kRows, 0.0f);
    std::fill(acc, acc + kRows * lay.dv_pad, 0.0f);

    for (int j0 = 0; j0 < key_end; j0 += kKeyTile) {
      const int width = std::min(kKeyTile, round_up(key_end, kPanelWidth) - j0);
      tile_scores<Isa>(q, p.dk, kt, j0, width, scores);
      mask_tile<Isa>(p, b, h, i0, rows, j0, width, scores);
      for (int r = 0; r < kRows; ++r) {
        float* s = scores + r * kKeyTile;
        const float new_max = r < rows ? std::max(max[r], Isa::row_max(s, width)) : kNegInf;
        if (new_max == kNegInf) {  // nothing allowed yet in this row (or a padding row)
          // row_max lets no NaN win, so a tile of NaN scores (a NaN in the query, or in the keys)
          // looks fully masked here: look for one, in this rare branch only. NaN in, NaN out.
          if (r < rows) nan_row[r] = nan_row[r] || has_nan(s, width);
          std::fill(s, s + width, 0.0f);
          continue;
        }
        const float correction = std::exp(max[r] - new_max);  // 0 on the first allowed tile
        const float tile_sum = Isa::exp_row(s, width, new_max, 1.0f);
        sum[r] = sum[r] * correction + tile_sum;
        if (correction != 1.0f) Isa::scale_row(acc + r * lay.dv_pad, lay.dv_pad, correction);
        max[r] = new_max;
      }
      accumulate_pv<Isa>(scores, width, v, lay.S_pad, lay.dv_pad, j0, acc);
    }

    for (int r = 0; r < rows; ++r) {
      // A row with no allowed key: zero output, not NaN (documented difference from PyTorch).
      // A row that saw a NaN score is NaN, output and weights (its max says so to the weights):
      // seen above when the NaN scores were all the row had, else through its sum.
      nan_row[r] = nan_row[r] || std::isnan(sum[r]);
      const float inv = sum[r] > 0.0f ? 1.0f / sum[r] : 0.0f;
      float* o = out + static_cast<std::ptrdiff_t>(i0 + r) * p.out_row_stride;
      for (int c = 0; c < p.dv; ++c) o[c] = nan_row[r] ? kNaN : acc[r * lay.dv_pad + c] * inv;
      if (nan_row[r]) max[r] = kNaN;
    }
    if (p.weights) write_weights<Isa>(p, b, h, i0, rows, key_end, q, kt, lay, scores, max, sum);
  }
}

}  // namespace webattention::kernels::flash
