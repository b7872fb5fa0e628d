// The data side of the fused flash attention (flash_attention.h has the loops): which query rows a
// unit of work has, where its packed Q, Kᵀ and V live, and which keys each row may see. Written
// once for every ISA; nothing here is vectorised but the packing's copies and transposes
// (packing.cpp's pack_rows_into_panel).
//
// A unit is one (batch b, K/V head g) with its kv_group query heads stacked as rows: row r is
// query head g·kv_group + r / L at sequence index r % L. With plain multi-head attention
// (kv_group 1) a unit is one (batch, head) as before; with grouped-query attention the group's
// heads share one packing of K and V, and a decode step (L = 1) fills the 4-row register block
// with 4 heads instead of 1 row and 3 of padding.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/kernels.h"
#include "kernels/storage_convert.h"

namespace webattention::kernels::flash {

constexpr int kRows = 4;        // query rows per register block
constexpr int kKeyTile = 256;   // keys per tile: Kᵀ and V tiles of 256·d floats stay in L1/L2
static_assert(kKeyTile == kValueTile, "a tile of keys reads one tile of a V block (kv_layout.h)");
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

constexpr int round_up(int n, int m) { return (n + m - 1) / m * m; }

inline bool has_nan(const float* s, int n) {
  for (int j = 0; j < n; ++j)
    if (std::isnan(s[j])) return true;
  return false;
}

// Workspace offsets (in floats) of one unit: Q·scale [rows_pad, dk], then, unless K and V come
// packed from a cache, Kᵀ [S_pad/8][dk][8] and V [dv_pad/8][S_pad][8]; then a tile of scores and
// the output accumulators of one row block.
struct Layout {
  int rows, rows_pad, S_pad, dv_pad;
  std::size_t q, kt, v, scores, acc, total;

  explicit Layout(const AttentionProblem& p)
      : rows(p.kv_group * p.L), rows_pad(round_up(rows, kRows)),
        S_pad(whole_panels(p.S)), dv_pad(whole_panels(p.dv)) {
    const bool packed = !p.cache.empty();
    q = 0;
    kt = q + static_cast<std::size_t>(rows_pad) * p.dk;
    v = kt + (packed ? 0 : key_block_elements(S_pad, p.dk));
    scores = v + (packed ? 0 : value_block_elements(S_pad, p.dv));
    acc = scores + kRows * kKeyTile;
    total = acc + static_cast<std::size_t>(kRows) * dv_pad;
  }
};

// Query row r of unit (b, g): its absolute query head and its index in the sequence.
struct Row {
  int head, i;
};
inline Row row_of(const AttentionProblem& p, int g, int r) {
  return {g * p.kv_group + r / p.L, r % p.L};
}

// The unit's K and V in the panel layout (kv_layout.h). From a
// cache of a narrow type, `narrow` is the cache's block (kt and v unused), whose elements the
// loops of kv_widen.h widen as they load them.
struct NarrowKv {
  StorageType type = StorageType::f32;  // f32: none
  const void* k = nullptr;
  const void* v = nullptr;
  const float* k_scales = nullptr;  // int8: one per slot
  const float* v_scales = nullptr;
  int capacity = 0;
  int dk = 0;      // K's rows: d_k
  int dv_pad = 0;  // V's columns: d_v in whole panels
  bool finite = false;  // no Inf or NaN stored (f16: the cheap widening may be used)

  // Element (slot, value column f) of v (kv_layout.h's value_index).
  std::size_t value_index(int slot, int f) const { return kernels::value_index(capacity, dv_pad, slot, f); }
};
struct KvPanels {
  const float* kt;
  ValueMatrix<const float> v;
  NarrowKv narrow;
  // No Inf or NaN among the values (and, from a cache, the keys): no key can poison a row that
  // must not see it (flash_hidden_keys.h), so the loops need not look for one.
  bool finite_values = false;
};

// Copies the unit's query rows ·scale into the workspace (padding rows repeat the last row).
inline void pack_queries(const AttentionProblem& p, int b, int g, const Layout& lay, float* ws) {
  float* qp = ws + lay.q;
  for (int r = 0; r < lay.rows_pad; ++r) {
    const Row row = row_of(p, g, std::min(r, lay.rows - 1));
    const float* qi = p.q.data + b * p.q.batch_stride + row.head * p.q.head_stride +
                      row.i * p.q.row_stride;
    for (int c = 0; c < p.dk; ++c) qp[static_cast<std::size_t>(r) * p.dk + c] = qi[c] * p.scale;
  }
}

// Values [0, S) (rows row_stride apart) into V panels, zero-padded past S and dv: a slot's 8
// columns of a panel are one run in each tile (kv_layout.h), copied as one (ValueMatrix::at per
// element worked out the tile and the panel of each; with the key panels an element at a time,
// packing was 4.7 % of an SDPA at (12, 512, 64): docs/performance/prefill.md#prefill-kernels).
inline void pack_value_panels(const float* v, std::ptrdiff_t row_stride, int S, int dv, const ValueMatrix<float>& vp) {
  for (int first = 0; first < vp.slots; first += kValueTile) {
    const int slots = std::min(kValueTile, vp.slots - first);
    for (int cb = 0; cb < vp.columns; cb += kPanelWidth) {
      float* dst = &vp.at(cb, first);
      const int cols = std::clamp(dv - cb, 0, kPanelWidth);
      for (int j = first; j < first + slots; ++j, dst += kPanelWidth) {
        const float* src = v + j * row_stride + cb;
        if (j < S && cols == kPanelWidth) {
          std::memcpy(dst, src, kPanelWidth * sizeof(float));
          continue;
        }
        for (int c = 0; c < kPanelWidth; ++c) dst[c] = j < S && c < cols ? src[c] : 0.0f;
      }
    }
  }
}

// The unit's K and V: read in place from a cache, or packed into the workspace, zero-padded, in
// panels of keys / value columns (kv_layout.h) so both micro-kernels stream contiguous memory.
inline KvPanels unit_kv(const AttentionProblem& p, int b, int g, const Layout& lay, float* ws) {
  if (!p.cache.empty()) {
    const PackedKv& c = p.cache;
    const std::ptrdiff_t block = static_cast<std::ptrdiff_t>(b) * p.kv_heads() + g;
    if (c.type == StorageType::f32) {
      return {static_cast<const float*>(c.k) + block * c.k_block,
              value_panels(static_cast<const float*>(c.v) + block * c.v_block, c.capacity, lay.dv_pad), {},
              c.finite};
    }
    const std::ptrdiff_t bytes = storage_element_bytes(c.type);
    NarrowKv n;
    n.type = c.type;
    n.k = static_cast<const unsigned char*>(c.k) + block * c.k_block * bytes;
    n.v = static_cast<const unsigned char*>(c.v) + block * c.v_block * bytes;
    if (c.k_scales) {
      n.k_scales = c.k_scales + block * c.capacity;
      n.v_scales = c.v_scales + block * c.capacity;
    }
    n.capacity = c.capacity;
    n.dk = p.dk;
    n.dv_pad = lay.dv_pad;
    n.finite = c.finite;
    return {nullptr, {}, n, c.finite};
  }
  const float* k = p.k.data + b * p.k.batch_stride + g * p.k.head_stride;
  const float* v = p.v.data + b * p.v.batch_stride + g * p.v.head_stride;
  const PanelMatrix<float> kp = key_panels(ws + lay.kt, p.dk);
  const ValueMatrix<float> vp = value_panels(ws + lay.v, lay.S_pad, lay.dv_pad);
  for (int j0 = 0; j0 < lay.S_pad; j0 += kPanelWidth) {
    pack_rows_into_panel(k + j0 * p.k.row_stride, p.k.row_stride, std::min(kPanelWidth, p.S - j0), p.dk,
                         kp.panel(j0 / kPanelWidth));
  }
  pack_value_panels(v, p.v.row_stride, p.S, p.dv, vp);
  // Packed V, padding included (zeros): a few µs against the keys' and values' own loops.
  const bool finite = storage::all_finite(ws + lay.v, value_block_elements(lay.S_pad, p.dv));
  return {ws + lay.kt, value_panels<const float>(ws + lay.v, lay.S_pad, lay.dv_pad), {}, finite};
}

// Keys [begin, end): the ones a row (or a block of rows) may see, or must at least be computed.
struct KeyRange {
  int begin, end;
  bool empty() const { return end <= begin; }
};

// A row's or key's position for the window: its slot, or its positionId (Positions::ids).
inline std::int64_t window_position(const AttentionProblem& p, std::int64_t slot) {
  return p.positions.ids && slot >= p.positions.call0 ? p.positions.ids[slot - p.positions.call0] : slot;
}

// The one position rule: the keys the query at `query_pos` may see, a contiguous range of
// positions. Causal stops after the query's own position, a window starts after
// query_pos - window (docs/attention-math/decoding.md §9). With Positions::ids the range keeps every key
// of the call the causal rule allows; mask_tile tests those against the window one by one.
inline KeyRange allowed_keys(const AttentionProblem& p, std::int64_t query_pos) {
  const std::int64_t S = p.S;
  std::int64_t end = p.causal ? query_pos + 1 : S;
  std::int64_t begin = p.positions.window > 0 ? window_position(p, query_pos) - p.positions.window + 1 : 0;
  if (p.positions.ids) begin = std::min(begin, p.positions.call0);
  end = std::clamp<std::int64_t>(end, 0, S);
  begin = std::clamp<std::int64_t>(begin, 0, end);
  return {static_cast<int>(begin), static_cast<int>(end)};
}

// The window in positionIds (Positions::ids): −∞ where a key of the call, tile columns [lo, hi),
// is at a position the window of the query (at slot query_slot) leaves out.
__attribute__((noinline)) inline void window_ids_tile(const AttentionProblem& p, std::int64_t query_slot, int j0,
                                                      int lo, int hi, float* s) {
  const std::int64_t edge = window_position(p, query_slot) - p.positions.window;
  const int from = static_cast<int>(std::clamp<std::int64_t>(p.positions.call0 - j0, lo, hi));
  for (int j = from; j < hi; ++j)
    if (window_position(p, j0 + j) <= edge) s[j] = kNegInf;
}

// −∞ in a row's tile columns outside [lo, hi), its allowed keys, and under Positions::ids at the
// call's keys inside them that the row's window leaves out.
inline void mask_outside(const AttentionProblem& p, std::int64_t query_slot, int j0, int lo, int hi, int width, float* s) {
  std::fill(s, s + lo, kNegInf);
  std::fill(s + hi, s + width, kNegInf);
  if (p.positions.ids) window_ids_tile(p, query_slot, j0, lo, hi, s);
}

// The keys of a block of rows [r0, r0 + rows) of unit g: `any`, those it must compute (the union
// of the rows' allowed ranges; with a window, W + 3 positions at most, whatever the cache's
// length), and `all`, those every row may see (their intersection; empty where a row sees none).
// A tile inside `all`, with no mask given, needs no masking (attention_blocks then skips
// mask_tile). Out of line: attention_blocks stays small for V8's optimising tier.
struct BlockKeys {
  KeyRange any, all;
};
__attribute__((noinline)) inline BlockKeys block_keys(const AttentionProblem& p, int g, int r0, int rows) {
  KeyRange any{p.S, 0}, all{0, p.S};
  for (int r = r0; r < r0 + rows; ++r) {
    const KeyRange k = allowed_keys(p, p.positions.query0 + row_of(p, g, r).i);
    all = {std::max(all.begin, k.begin), std::min(all.end, k.end)};
    if (k.empty()) continue;
    any = {std::min(any.begin, k.begin), std::max(any.end, k.end)};
  }
  // The call's keys under Positions::ids are never seen by all without mask_tile's test.
  if (p.positions.ids) all.end = static_cast<int>(std::min<std::int64_t>(all.end, p.positions.call0));
  return {any.empty() ? KeyRange{0, 0} : any, all};
}

// Where keys [j0, j0 + width) live: calls run(offset, slot, n) for each stretch of n keys held in
// consecutive slots from `slot` on, key j0 + offset first. Without a cache the slot is the key;
// a cache's ring holds key j in slot j mod capacity, so a stretch ends where the ring wraps, and
// every stretch ends where a tile of the V block ends (kv_layout.h: the next tile's panels lie
// elsewhere). j0, width and the capacity are multiples of kPanelWidth: every stretch is whole
// panels.
template <class Run>
void slot_runs(const AttentionProblem& p, int j0, int width, Run&& run) {
  const int capacity = p.cache.empty() ? 0 : p.cache.capacity;
  for (int offset = 0; offset < width;) {
    const int slot = capacity ? (j0 + offset) % capacity : j0 + offset;
    int n = std::min(width - offset, kValueTile - slot % kValueTile);
    if (capacity) n = std::min(n, capacity - slot);
    run(offset, slot, n);
    offset += n;
  }
}

// Whether mask m forbids key j (index `at` in its view); adds an additive mask's value to `s`.
inline void apply_mask(const MaskView& m, std::ptrdiff_t at, float& s) {
  if (m.kind == MaskKind::kBoolean) {
    if (m.boolean()[at]) s = kNegInf;
  } else {
    // A −∞ entry masks whatever the score is: NaN + −∞ would be NaN (flash_hidden_keys.h).
    s = m.additive()[at] == kNegInf ? kNegInf : s + m.additive()[at];
  }
}

}  // namespace webattention::kernels::flash
