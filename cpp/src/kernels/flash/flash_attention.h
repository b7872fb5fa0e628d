// Fused flash attention, written once for every ISA. Per unit (one batch and K/V head with its
// query heads as rows, flash_layout.h): Q (pre-scaled) is packed, and Kᵀ and V too unless a KV
// cache already holds them packed; then each block of 4 query rows streams over key tiles with an
// online softmax (running max and sum, rescaled accumulator), so memory stays O((L + S)·d)
// whatever the mask. Tiles no row of the block may see (after the causal diagonal, before a
// sliding window) are never computed. Keys are positions; a KV cache's ring holds key j in slot
// j mod capacity, so a tile is read as a few runs of consecutive slots (slot_runs). Attention
// weights, when asked for, take a second pass with the final max and sum.
//
// Each ISA's kernel file (f32_attention_simd128.cpp, f32_attention_scalar.cpp) supplies only the
// inner loops, as static members of a struct `Isa`, and forwards attention_unit() to the template
// below: the native tests (scalar) then check the very algorithm the SIMD modules ship.
//   Isa::Block                  4 rows × 8 columns of accumulators: zero(), load_row(r, src),
//                               madd(x0, x1, x2, x3, w): row r += x_r · w[0..8), store_row(r, dst)
//   Isa::add_row(s, m, n)       s[j] += m[j] for j < n (an additive mask row), except s[j] = −∞
//                               where m[j] is −∞ (a masked key's NaN or +Inf score stays masked)
//   Isa::row_max(s, width)      max of s[0..width); NaN never wins (pmax: m < s ? s : m)
//   Isa::exp_row(s, width, max, factor)  s[j] = exp(s[j] - max) · factor; returns Σ exp(s[j] - max)
//   Isa::scale_row(a, n, factor)         a[c] *= factor for c < n (n a multiple of 8)
//   Isa::softcap_row(s, width, cap)      s[j] = cap · tanh(s[j] / cap) (logit softcapping)
//   Isa::row_scores(q, dk, kp, j0, width, s)       one query row: s[j] = q · K[j0 + j]
//   Isa::row_pv(p, width, v, j0, acc)  one row: acc[c] += Σ_j p[j] V[j0 + j][c], c < v.columns
//   Isa::narrow_row_scores<T>, narrow_row_pv<T>    the same two over a narrow (f16, bf16, int8)
//                               cache, widening as they load (kv_widen.h has the 4-row loops)
// The row_* loops serve a block of one query row (a decode step: L = 1, one head per unit), where
// the 4-row block would compute 3 rows of padding. Widths are multiples of 8. Declare `Isa` in an
// anonymous namespace: the templates' instances then have internal linkage, and the compiler
// inlines and keeps calls as for the file's own static functions (CMakeLists.txt says why).
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/flash/flash_hidden_keys.h"
#include "kernels/flash/flash_layout.h"
#include "kernels/kernels.h"
#include "kernels/flash/kv_widen.h"

namespace webattention::kernels::flash {

// scores[r][0..width) = q rows (r0..r0+4) · K[j0..j0+width)ᵀ, width a multiple of 8.
template <class Isa>
void tile_scores(const float* q, int dk, const float* kp, int j0, int width, float* scores) {
  const float* q0 = q;
  const float* q1 = q + dk;
  const float* q2 = q + 2 * dk;
  const float* q3 = q + 3 * dk;
  for (int jb = 0; jb < width; jb += kPanelWidth) {
    auto acc = Isa::Block::zero();
    const float* panel = key_panels(kp, dk).panel((j0 + jb) / kPanelWidth);
    for (int c = 0; c < dk; ++c) acc.madd(q0[c], q1[c], q2[c], q3[c], panel + c * kPanelWidth);
    for (int r = 0; r < kRows; ++r) acc.store_row(r, scores + r * kKeyTile + jb);
  }
}

// s[j] = −∞ where mask[j], j in [lo, hi). Kept out of mask_tile, which every tile runs: the
// compiler's vectorised form of this loop made mask_tile the third slowest function for V8's
// optimising tier to compile, on the other core while a cold start's first forward runs.
__attribute__((noinline)) inline void mask_boolean(const std::uint8_t* mask, int lo, int hi, float* s) {
  for (int j = lo; j < hi; ++j)
    if (mask[j]) s[j] = kNegInf;
}

// Masks one tile: keys the position rule forbids (past S, causal, window), then each mask. Rows
// >= `rows` are padding, left alone.
template <class Isa>
void mask_tile(const AttentionProblem& p, int b, int g, int r0, int rows, int j0, int width,
               float* scores) {
  for (int r = 0; r < rows; ++r) {
    const Row row = row_of(p, g, r0 + r);
    const std::int64_t query_pos = p.positions.query0 + row.i;
    float* s = scores + r * kKeyTile;
    std::ptrdiff_t at[2];
    for (int m = 0; m < 2; ++m) {
      const MaskView& v = p.masks[m];
      at[m] = b * v.batch_stride + row.head * v.head_stride + row.i * v.row_stride + (j0 - v.key0);
    }
    const KeyRange keys = allowed_keys(p, query_pos);
    const int lo = keys.empty() ? width : std::clamp(keys.begin - j0, 0, width);
    const int hi = keys.empty() ? width : std::clamp(keys.end - j0, lo, width);
    mask_outside(p, query_pos, j0, lo, hi, width, s);
    for (int m = 0; m < 2; ++m) {
      const MaskView& v = p.masks[m];
      if (v.empty()) continue;
      // Columns before the mask's first key (key0) are not covered: the mask starts at `from`.
      const int from = static_cast<int>(std::clamp<std::int64_t>(v.key0 - j0, lo, hi));
      if (v.kind == MaskKind::kBoolean) {
        mask_boolean(v.boolean() + at[m] + from, 0, hi - from, s + from);
      } else {
        Isa::add_row(s + from, v.additive() + at[m] + from, hi - from);
      }
    }
  }
}

// The masks alone on rows [0, rows) of block (g, r0), keys [j0, j0 + width): −∞ where masked. A
// score of −∞ by arithmetic is no mask: weight 0, and 0 · V[j] is added, as in PyTorch.
template <class Isa>
void visible_keys(const AttentionProblem& p, int b, int g, int r0, int rows, int j0, int width, float* visible) {
  std::fill(visible, visible + rows * kKeyTile, 0.0f);
  mask_tile<Isa>(p, b, g, r0, rows, j0, width, visible);
}

// find_poisoned() over the masks' −∞, not the scores'. Rare (non-finite K/V): a call of its own.
template <class Isa>
__attribute__((noinline)) void find_poisoned_keys(const AttentionProblem& p, int b, int g, int r0, int rows,
                                                  const KvPanels& kv, int j0, int width, PoisonedKeys& out) {
  alignas(16) float visible[kRows * kKeyTile];
  visible_keys<Isa>(p, b, g, r0, rows, j0, width, visible);
  find_poisoned(p, g, r0, visible, rows, kv, j0, width, out);
}

// A row whose allowed keys all score −∞ by arithmetic is NaN (PyTorch: exp(−∞ − −∞)); only one with
// no allowed key is zero (the package's choice). The scores cannot tell the two −∞ apart, the
// masks can: a row whose max is still −∞ after this tile (rare) looks for a key it may see.
template <class Isa>
__attribute__((noinline)) void note_allowed_keys(const AttentionProblem& p, int b, int g, int r0, int rows, int j0,
                                                 int width, const float* max, bool* allowed) {
  alignas(16) float visible[kKeyTile];
  for (int r = 0; r < rows; ++r) {
    if (allowed[r] || max[r] != kNegInf) continue;
    visible_keys<Isa>(p, b, g, r0 + r, 1, j0, width, visible);
    allowed[r] = std::any_of(visible, visible + width, [](float v) { return v != kNegInf; });
  }
}

// acc[r][0..dv_pad) += Σ_j p[r][j] · V[j0 + j][:], 4 rows × 8 columns per register block.
template <class Isa>
void accumulate_pv(const float* p, int width, const KvPanels& kv, int dv_pad, int j0, float* acc) {
  for (int cb = 0; cb < dv_pad; cb += kPanelWidth) {
    typename Isa::Block block;
    for (int r = 0; r < kRows; ++r) block.load_row(r, acc + r * dv_pad + cb);
    const float* vrow = &kv.v.at(cb, j0);
    for (int j = 0; j < width; ++j, vrow += kPanelWidth)
      block.madd(p[j], p[kKeyTile + j], p[2 * kKeyTile + j], p[3 * kKeyTile + j], vrow);
    for (int r = 0; r < kRows; ++r) block.store_row(r, acc + r * dv_pad + cb);
  }
}

// softcap · tanh(s / softcap) on `rows` rows of a tile: a call of its own, so that the tanh
// polynomial does not grow key_scores (every tile runs it) for models without a softcap.
template <class Isa>
__attribute__((noinline)) void softcap_rows(int rows, int width, float softcap, float* scores) {
  for (int r = 0; r < rows; ++r) Isa::softcap_row(scores + r * kKeyTile, width, softcap);
}

// The score rows a block computes: its one row alone, else the whole register block (padding
// rows repeat the last query row, and are never stored).
constexpr int scored_rows(bool one_row) { return one_row ? 1 : kRows; }

// One row's scores (a decode step, or a block's single last row), out of line: key_scores, which
// every tile of a prefill runs, stays small for V8's optimising tier, which compiles it on the
// other core while a cold start's first forward runs.
template <class Isa>
__attribute__((noinline)) void one_row_scores(const float* q, int dk, const float* kt, int slot, int n, float* s) {
  Isa::row_scores(q, dk, kt, slot, n, s);
}

// Scores of keys [j0, j0 + width) for a block of one row or 4, run by run of the slots that hold
// them (slot_runs), softcapped when the problem asks. A call of its own: inlined, it doubled the
// code V8's optimising tier compiles for attention_blocks (5.4 KB, 7-8 ms on the other core).
template <class Isa, bool kNarrow>
__attribute__((noinline)) void key_scores(const AttentionProblem& p, bool one_row, const float* q, const KvPanels& kv,
                int j0, int width, float* scores) {
  slot_runs(p, j0, width, [&](int offset, int slot, int n) {
    if constexpr (kNarrow) {
      narrow_key_scores<Isa>(one_row, q, p.dk, kv.narrow, slot, n, scores + offset);
    } else if (one_row) {
      one_row_scores<Isa>(q, p.dk, kv.kt, slot, n, scores + offset);
    } else {
      tile_scores<Isa>(q, p.dk, kv.kt, slot, n, scores + offset);
    }
  });
  // Logit softcapping on the scaled scores (Q is pre-scaled), before mask_tile adds the masks.
  if (p.softcap > 0.0f) softcap_rows<Isa>(scored_rows(one_row), width, p.softcap, scores);
}

// acc += the block's weights of keys [j0, j0 + width) · their values, run by run of slots.
// A call of its own, as online_softmax: inlined, a first forward ran its P·V in V8's baseline
// code for all heads (attention_blocks is called once per head, and its optimised code took
// ~11 ms to compile on the other core, arriving after the forward had finished).
template <class Isa, bool kNarrow>
__attribute__((noinline)) void weighted_values(const AttentionProblem& p, bool one_row, const float* scores,
                     const KvPanels& kv, int dv_pad, int j0, int width, float* acc) {
  slot_runs(p, j0, width, [&](int offset, int slot, int n) {
    if constexpr (kNarrow) {
      narrow_weighted_values<Isa>(one_row, scores + offset, n, kv.narrow, dv_pad, slot, acc);
    } else if (one_row) {
      Isa::row_pv(scores + offset, n, kv.v, slot, acc);
    } else {
      accumulate_pv<Isa>(scores + offset, n, kv, dv_pad, slot, acc);
    }
  });
}

// weighted_values() of a tile with poisoned keys (flash_hidden_keys.h): the fast loops over the
// stretches between them, each poisoned key only to the rows that see it. Rare, so a call of its
// own: inlined, it doubled the code V8's optimising tier compiles for attention_blocks.
template <class Isa, bool kNarrow>
__attribute__((noinline)) void weighted_values_around(const AttentionProblem& p, bool one_row, const float* scores,
                                                      const PoisonedKeys& poisoned, int rows, const KvPanels& kv,
                                                      int dv_pad, int j0, int width, float* acc) {
  for (int a = 0; a < width;) {
    int b = a;
    while (b < width && !poisoned.poisoned[b]) ++b;
    if (b > a) weighted_values<Isa, kNarrow>(p, one_row, scores + a, kv, dv_pad, j0 + a, b - a, acc);
    if (b < width) add_poisoned_key(p, scores, poisoned, rows, kv, dv_pad, j0, b, acc);
    a = b + 1;
  }
}

template <class Isa, bool kNarrow>
void weighted_values_unpoisoned(const AttentionProblem& p, bool one_row, const float* scores,
                                const PoisonedKeys& poisoned, int rows, const KvPanels& kv,
                                int dv_pad, int j0, int width, float* acc) {
  if (poisoned.count == 0) return weighted_values<Isa, kNarrow>(p, one_row, scores, kv, dv_pad, j0, width, acc);
  weighted_values_around<Isa, kNarrow>(p, one_row, scores, poisoned, rows, kv, dv_pad, j0, width, acc);
}

// Second pass, only when weights are asked for: p = exp(s - max) / sum with the final stats.
// Keys outside `keys` (never computed) get 0, or NaN in a NaN row.
template <class Isa, bool kNarrow>
void write_weights(const AttentionProblem& p, int b, int g, int r0, int rows, KeyRange keys,
                   const float* q, const KvPanels& kv, float* scores,
                   const float* max, const float* sum) {
  const int cols = p.weight_cols();
  const std::ptrdiff_t block = static_cast<std::ptrdiff_t>(p.weight_rows()) * cols;
  for (int j0 = 0; j0 < cols; j0 += kKeyTile) {
    const int width = std::min(kKeyTile, whole_panels(cols) - j0);
    const bool computed = j0 < keys.end && j0 + width > keys.begin;
    if (computed) {
      key_scores<Isa, kNarrow>(p, false, q, kv, j0, width, scores);
      mask_tile<Isa>(p, b, g, r0, rows, j0, width, scores);
    }
    for (int r = 0; r < rows; ++r) {
      float* s = scores + r * kKeyTile;
      // A NaN row (its max is NaN) is NaN everywhere, also in tiles never computed.
      const bool nan_row = std::isnan(max[r]);
      const bool zero = !nan_row && (!computed || max[r] == kNegInf);
      // Averaged weights start at zero (run_attention): nothing to add for an all-zero row.
      if (zero && p.average_weights) continue;
      if (zero) {
        std::fill(s, s + width, 0.0f);
      } else if (!computed) {
        std::fill(s, s + width, kNaN);
      } else {
        Isa::exp_row(s, width, max[r], 1.0f / sum[r]);
      }
      const Row row = row_of(p, g, r0 + r);
      const int n = std::min(width, cols - j0);
      const std::ptrdiff_t offset = static_cast<std::ptrdiff_t>(row.i) * cols + j0;
      if (p.average_weights) {
        float* w = p.weights + b * block + offset;
        const float share = p.average_share();
        for (int j = 0; j < n; ++j) w[j] += s[j] * share;
      } else {
        std::copy(s, s + n, p.weights + (static_cast<std::ptrdiff_t>(b) * p.heads + row.head) * block + offset);
      }
    }
  }
}

inline std::size_t workspace_floats(const AttentionProblem& p) { return Layout(p).total; }

// The block's output rows: acc / sum. A row with no allowed key: zero output, not NaN
// (documented difference from PyTorch). A row that saw a NaN score is NaN, output and weights
// (its max says so to the weights): seen when the NaN scores were all the row had, else
// through its sum; so is a row with allowed keys that all scored −∞ (`allowed`, as PyTorch). Once per block of rows, so a call of its own: attention_blocks stays small
// enough for V8's optimising tier to compile quickly.
__attribute__((noinline)) inline void write_outputs(const AttentionProblem& p, int b, int g, int r0, int rows,
                                                    int dv_pad, const float* acc, const float* sum,
                                                    const bool* allowed, bool* nan_row, float* max) {
  for (int r = 0; r < rows; ++r) {
    nan_row[r] = nan_row[r] || std::isnan(sum[r]) || (allowed[r] && max[r] == kNegInf);
    const float inv = sum[r] > 0.0f ? 1.0f / sum[r] : 0.0f;
    const Row row = row_of(p, g, r0 + r);
    float* o = p.out + b * p.out_batch_stride + row.head * p.out_head_stride +
               static_cast<std::ptrdiff_t>(row.i) * p.out_row_stride;
    for (int c = 0; c < p.dv; ++c) o[c] = nan_row[r] ? kNaN : acc[r * dv_pad + c] * inv;
    if (nan_row[r]) max[r] = kNaN;
  }
}

// The online softmax's step over one tile of the block's rows: each row's new max, its scores
// exponentiated in place, its sum and its accumulators rescaled. A call of its own, so that V8
// can swap in its optimised code between tiles of a first forward.
template <class Isa>
__attribute__((noinline)) void online_softmax(int rows, int width, int dv_pad, float* scores,
                                              float* max, float* sum, bool* nan_row, float* acc) {
  for (int r = 0; r < scored_rows(rows == 1); ++r) {
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
    if (correction != 1.0f) Isa::scale_row(acc + r * dv_pad, dv_pad, correction);
    max[r] = new_max;
  }
}

// The blocks of rows of unit (b, g), over K/V panels of f32 or of a narrow cache (kNarrow), with
// or without the search for hidden non-finite keys (kMayPoison, flash_hidden_keys.h).
template <class Isa, bool kNarrow, bool kMayPoison>
__attribute__((noinline)) void attention_blocks(const AttentionProblem& p, int b, int g,
                                                const Layout& lay, const KvPanels& kv, float* ws) {
  float* scores = ws + lay.scores;
  float* acc = ws + lay.acc;

  for (int r0 = 0; r0 < lay.rows; r0 += kRows) {
    const int rows = std::min(kRows, lay.rows - r0);
    const float* q = ws + lay.q + static_cast<std::size_t>(r0) * p.dk;
    const BlockKeys block = block_keys(p, g, r0, rows);
    const KeyRange keys = block.any, common = block.all;
    const bool no_masks = p.masks[0].empty() && p.masks[1].empty();
    float max[kRows], sum[kRows];
    bool nan_row[kRows] = {};  // a NaN score where the row's max could not see it (below)
    bool allowed[kRows] = {};  // a key the row may see where its max was −∞ (note_allowed_keys)
    std::fill(max, max + kRows, kNegInf);
    std::fill(sum, sum + kRows, 0.0f);
    // A sink is a key of logit sinks[head] and value 0: the row's max and sum start from it, so
    // a row with no allowed key keeps sum 1 and acc 0 (zero output, zero weights).
    for (int r = 0; r < rows && p.sinks; ++r) max[r] = p.sinks[row_of(p, g, r0 + r).head], sum[r] = 1.0f;
    std::fill(acc, acc + kRows * lay.dv_pad, 0.0f);

    PoisonedKeys poisoned;
    const bool one_row = rows == 1;
    // Tiles start on a panel of 8 keys; keys before `keys.begin` in the first one are masked.
    for (int j0 = keys.begin / kPanelWidth * kPanelWidth; j0 < keys.end; j0 += kKeyTile) {
      const int width = std::min(kKeyTile, whole_panels(keys.end) - j0);
      key_scores<Isa, kNarrow>(p, one_row, q, kv, j0, width, scores);
      // Only where there is something to mask: a call that does nothing still counts towards V8's
      // tier-up, which would then compile mask_tile on the other core during a first forward.
      if (!no_masks || j0 < common.begin || j0 + width > common.end) mask_tile<Isa>(p, b, g, r0, rows, j0, width, scores);
      if constexpr (kMayPoison) find_poisoned_keys<Isa>(p, b, g, r0, rows, kv, j0, width, poisoned);
      online_softmax<Isa>(rows, width, lay.dv_pad, scores, max, sum, nan_row, acc);
      if (std::any_of(max, max + rows, [](float m) { return m == kNegInf; })) {
        note_allowed_keys<Isa>(p, b, g, r0, rows, j0, width, max, allowed);
      }
      if constexpr (kMayPoison) {
        weighted_values_unpoisoned<Isa, kNarrow>(p, one_row, scores, poisoned, rows, kv, lay.dv_pad, j0, width, acc);
      } else {
        weighted_values<Isa, kNarrow>(p, one_row, scores, kv, lay.dv_pad, j0, width, acc);
      }
    }

    write_outputs(p, b, g, r0, rows, lay.dv_pad, acc, sum, allowed, nan_row, max);
    if (p.weights) write_weights<Isa, kNarrow>(p, b, g, r0, rows, keys, q, kv, scores, max, sum);
  }
}

// kernels.h's request_optimised_attention(): the two per-tile kernels a prefill spends its
// attention in, each on an empty tile (no keys), kRequestCalls times.
template <class Isa>
void request_optimised_code() {
  static std::atomic<bool> requested{false};
  if (requested.load(std::memory_order_relaxed) || requested.exchange(true)) return;
  const AttentionProblem p;
  const KvPanels kv{};
  alignas(16) float block[kRows * kPanelWidth] = {};
  for (int i = 0; i < kRequestCalls; ++i) {
    key_scores<Isa, false>(p, false, block, kv, 0, 0, block);
    weighted_values<Isa, false>(p, false, block, kv, kPanelWidth, 0, 0, block);
  }
}

template <class Isa>
void attention_unit(const AttentionProblem& p, int unit, float* ws) {
  const int b = unit / p.kv_heads(), g = unit % p.kv_heads();
  const Layout lay(p);
  pack_queries(p, b, g, lay, ws);
  const KvPanels kv = unit_kv(p, b, g, lay, ws);
  // The loops' variant is chosen once per unit, not per tile: with every variant's branches in
  // one function, V8's code for the f32 loops ran ~10 % slower at n = 8192
  // (docs/performance/decode_kernels.md#decode-kernels). A cache that never stored an Inf or NaN (KvCache's
  // finite flag; its unwritten slots hold zeros), or packed values with none (unit_kv checks),
  // have no hidden non-finite key to search for.
  const bool narrow = kv.narrow.type != StorageType::f32;
  const bool may_poison = !kv.finite_values;
  if (narrow && may_poison) {
    attention_blocks<Isa, true, true>(p, b, g, lay, kv, ws);
  } else if (narrow) {
    attention_blocks<Isa, true, false>(p, b, g, lay, kv, ws);
  } else if (may_poison) {
    attention_blocks<Isa, false, true>(p, b, g, lay, kv, ws);
  } else {
    attention_blocks<Isa, false, false>(p, b, g, lay, kv, ws);
  }
}
}  // namespace webattention::kernels::flash
