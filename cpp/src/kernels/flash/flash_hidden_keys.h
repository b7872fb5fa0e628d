// "Masked means absent" for the fused flash attention (flash_attention.h): a key a row may not
// see (causal, window, a boolean mask, a −∞ additive mask) must never reach that row, whatever
// its value. Its score is −∞ and its weight exactly 0, but the P·V product would still add
// 0 · V[j], and 0 · NaN or 0 · Inf is NaN: one NaN or Inf value at a masked or future key would
// make every row of the block (4 rows, a GQA group, the keys of an 8-key panel) NaN. PyTorch
// gives NaN there; this package deliberately does not (README, differences from PyTorch).
//
// Hidden means masked (the masks' −∞: flash_attention.h's visible_keys), not a −∞ score: a key
// that scores −∞ by arithmetic is seen, with weight 0, and adds 0 · V[j] as in PyTorch.
// The fast P·V loops stay as they are (no select per element): before the exponentials, the
// tile's keys some row does not see are checked for a non-finite value. Such "poisoned" keys are rare; the P·V of their tile skips them and adds each
// one, by a select on its visibility, only to the rows that see it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/flash/flash_layout.h"
#include "kernels/flash/kv_widen.h"

namespace webattention::kernels::flash {

// The slot of the cache ring (or of the packed K/V) that holds key j.
inline int key_slot(const AttentionProblem& p, int j) {
  return p.cache.empty() ? j : j % p.cache.capacity;
}

// The keys of one tile some row must not see and whose value holds a NaN or Inf.
struct PoisonedKeys {
  int count = 0;
  std::uint8_t seen_by[kKeyTile];  // for each column: bit r set when row r sees it
  bool poisoned[kKeyTile];
};

inline bool finite_value(const KvPanels& kv, int dv, int slot) {
  for (int c = 0; c < dv; ++c)
    if (!std::isfinite(value_at(kv, c, slot))) return false;  // kv_widen.h: any storage type
  return true;
}

// Tile columns [from, to) that every row of block (g, r0, rows) sees by the position rule: all
// of them when no mask applies, so only the columns outside need a look. Empty with a mask.
inline KeyRange columns_seen_by_all(const AttentionProblem& p, int g, int r0, int rows, int j0, int width) {
  if (!p.masks[0].empty() || !p.masks[1].empty()) return {0, 0};
  int from = 0, to = width;
  for (int r = 0; r < rows; ++r) {
    const KeyRange keys = allowed_keys(p, p.positions.query0 + row_of(p, g, r0 + r).i);
    from = std::max(from, keys.empty() ? width : std::clamp(keys.begin - j0, 0, width));
    to = std::min(to, keys.empty() ? 0 : std::clamp(keys.end - j0, 0, width));
  }
  if (p.positions.ids) to = static_cast<int>(std::clamp<std::int64_t>(p.positions.call0 - j0, 0, to));
  return {from, std::max(from, to)};
}

// Rows [0, rows) of block (g, r0) and what the masks leave of keys [j0, j0 + width) (`visible`,
// −∞ where masked, rows kKeyTile apart): which of those keys are poisoned. O(rows) plus the columns some row may not see (a few at a causal diagonal or
// a window's start) when no mask applies; a full look at the scores with one.
inline void find_poisoned(const AttentionProblem& p, int g, int r0, const float* visible, int rows,
                          const KvPanels& kv, int j0, int width, PoisonedKeys& out) {
  out.count = 0;
  const KeyRange all = columns_seen_by_all(p, g, r0, rows, j0, width);
  const std::uint8_t everyone = static_cast<std::uint8_t>((1u << rows) - 1u);
  const auto look = [&](int j) {
    std::uint8_t seen = 0;
    for (int r = 0; r < rows; ++r) seen |= static_cast<std::uint8_t>((visible[r * kKeyTile + j] != kNegInf) << r);
    out.seen_by[j] = seen;
    // Keys past the last one (j0 + j >= S) may be stale ring slots: never seen, checked too.
    out.poisoned[j] = seen != everyone && !finite_value(kv, p.dv, key_slot(p, j0 + j));
    out.count += out.poisoned[j];
  };
  for (int j = 0; j < all.begin; ++j) look(j);
  std::fill(out.poisoned + all.begin, out.poisoned + all.end, false);
  for (int j = all.end; j < width; ++j) look(j);
}

// Adds poisoned key j0 + j (tile column j) to the accumulators of the rows that see it.
inline void add_poisoned_key(const AttentionProblem& p, const float* scores, const PoisonedKeys& keys,
                             int rows, const KvPanels& kv, int dv_pad, int j0, int j, float* acc) {
  // Columns past dv are never read back: p.dv, not dv_pad.
  const int slot = key_slot(p, j0 + j);
  for (int r = 0; r < rows; ++r) {
    if (!(keys.seen_by[j] >> r & 1u)) continue;
    const float w = scores[r * kKeyTile + j];
    for (int c = 0; c < p.dv; ++c) acc[r * dv_pad + c] += w * value_at(kv, c, slot);
  }
}

}  // namespace webattention::kernels::flash
