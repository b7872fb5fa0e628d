// The sliding window in positionIds as decode_fuzz draws and checks it (docs/attention-math/decoding.md §9,
// draft verification): ids that are not the rows' own positions, chunk by chunk, and the
// whole-sequence mask that makes one plain forward give the chunks' rows. With a window W, the
// query of row t (in a chunk starting at n) is at its id p_t; a key j < n (cached before the
// chunk) at its slot j, a key of the chunk at its id p_j; the causal rule and the chunk's
// verification mask still compare rows. A call whose ids move the window is refused (a CacheError
// naming position_ids) when it is longer than one pass of the ring or has an id below n.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

#include "fuzz_bytes.h"
#include "webattention/errors.h"

namespace webattention::fuzz {

// A tree of drafts over a chunk of n rows: each row's parent an earlier row, or none (a root,
// depth 0, after the cache). Its ancestor mask [n, n] (0 where row j is row i or one of its
// ancestors, −∞ elsewhere) and its depths.
inline void draw_tree(Bytes& in, int n, std::vector<float>& mask, std::vector<int>& depth) {
  std::vector<int> parent(static_cast<std::size_t>(n));
  depth.assign(static_cast<std::size_t>(n), 0);
  mask.assign(static_cast<std::size_t>(n) * n, -std::numeric_limits<float>::infinity());
  for (int i = 0; i < n; ++i) {
    parent[i] = in.in(0, i) - 1;
    depth[i] = parent[i] < 0 ? 0 : depth[parent[i]] + 1;
    for (int j = i; j >= 0; j = parent[j]) mask[static_cast<std::size_t>(i) * n + j] = 0.0f;
  }
}

// One chunk's ids for one batch row, starting at `n`, in `shape`: 0 the rows' own (n + i); 1 the
// tree's depths (n + depth); 2 depths of their own up to the rows' (n + r, r ≤ i: repeated
// depths, siblings); 3 ahead of the rows (n + i + k, maybe far, up to the largest int32); 4 the
// rows' own but one below n (a refusal; a negative id where n is small).
inline void chunk_ids(Bytes& in, int shape, std::int64_t n, const std::vector<int>& depth, std::int32_t* ids) {
  const int rows = static_cast<int>(depth.size());
  const std::int64_t spread = shape == 3 && in.coin() ? 65537 : 1;
  const int low = shape == 4 ? in.in(0, rows - 1) : -1;
  for (int i = 0; i < rows; ++i) {
    std::int64_t id = n + i;
    if (shape == 1) id = n + depth[i];
    if (shape == 2) id = n + in.in(0, i);
    if (shape == 3) {
      const int k = in.u8();
      id = k == 255 ? std::numeric_limits<std::int32_t>::max() : std::min<std::int64_t>(n + i + k * spread, std::numeric_limits<std::int32_t>::max());
    }
    if (i == low) id = n - 1 - in.in(0, 3);
    ids[i] = static_cast<std::int32_t>(id);
  }
}

// Ids [B, T] for a window, chunk by chunk, one shape for every batch row or one each; a chunk
// with a row at its tree's depths takes the tree's ancestor mask as its verification mask.
inline std::vector<std::int32_t> draw_window_ids(Bytes& in, int B, int T, const std::vector<int>& chunks,
                                                 std::vector<std::vector<float>>& chunk_masks) {
  // Where the input has run out (long sequences), siblings all at n: the window moves, and a
  // chunk longer than one pass of the ring is refused.
  static constexpr int kShapes[] = {2, 0, 1, 1, 2, 0, 3, 4};
  std::vector<std::int32_t> ids(static_cast<std::size_t>(B) * T);
  std::vector<int> depth, shapes(static_cast<std::size_t>(B));
  std::vector<float> tree;
  for (std::size_t k = 0, at = 0; k < chunks.size(); at += static_cast<std::size_t>(chunks[k]), ++k) {
    const bool shared = in.coin();
    for (int b = 0; b < B; ++b) shapes[b] = b > 0 && shared ? shapes[0] : kShapes[in.in(0, 7)];
    depth.assign(static_cast<std::size_t>(chunks[k]), 0);
    if (std::find(shapes.begin(), shapes.end(), 1) != shapes.end()) {
      draw_tree(in, chunks[k], tree, depth);
      chunk_masks[k] = tree;
    }
    for (int b = 0; b < B; ++b) chunk_ids(in, shapes[b], static_cast<std::int64_t>(at), depth, ids.data() + b * T + at);
  }
  return ids;
}

// Whether the chunk [n, n + rows) moves the window: some batch row's id is not its slot.
inline bool window_moved(const std::vector<std::int32_t>& ids, int B, int T, int n, int rows) {
  for (int b = 0; b < B; ++b)
    for (int t = n; t < n + rows; ++t)
      if (ids[static_cast<std::size_t>(b) * T + t] != t) return true;
  return false;
}

// Whether the core must refuse the chunk [n, n + rows): its ids move the window, and it is
// longer than one pass of the ring or an id is below n.
inline bool window_refused(const std::vector<std::int32_t>& ids, int B, int T, int n, int rows, std::int64_t rows_per_pass) {
  if (ids.empty() || !window_moved(ids, B, T, n, rows)) return false;
  if (rows > rows_per_pass) return true;
  for (int b = 0; b < B; ++b)
    for (int t = n; t < n + rows; ++t)
      if (ids[static_cast<std::size_t>(b) * T + t] < n) return true;
  return false;
}

// The plain forward's additive mask: [T, T], or [B·H, T, T] when the batch rows' ids differ
// under a window. Causal on rows, the window on positions as the header says, plus `verify`
// ([T, T], the chunks' masks as blocks on the diagonal).
struct SequenceMask {
  std::vector<float> values;
  std::vector<int> shape;
};
inline SequenceMask sequence_mask(int B, int H, int T, int window, const std::vector<int>& chunks,
                                  const std::vector<std::int32_t>& ids, const std::vector<float>& verify) {
  bool per_row = false;  // some batch row's ids are not row 0's
  for (int b = 1; window && !ids.empty() && b < B; ++b) per_row = per_row || !std::equal(ids.begin(), ids.begin() + T, ids.begin() + b * T);
  const int rows = per_row ? B : 1;
  const std::size_t TT = static_cast<std::size_t>(T) * T;
  SequenceMask m{std::vector<float>(per_row ? B * H * TT : TT, -std::numeric_limits<float>::infinity()),
                 per_row ? std::vector<int>{B * H, T, T} : std::vector<int>{T, T}};
  std::vector<int> chunk_start(static_cast<std::size_t>(T));
  for (int k = 0, at = 0; k < static_cast<int>(chunks.size()); at += chunks[k], ++k)
    std::fill_n(chunk_start.begin() + at, chunks[k], at);
  for (int b = 0; b < rows; ++b) {
    const auto pos = [&](int t) -> std::int64_t { return ids.empty() ? t : ids[static_cast<std::size_t>(b) * T + t]; };
    float* block = m.values.data() + static_cast<std::size_t>(b) * H * TT;
    for (int t = 0; t < T; ++t)
      for (int j = 0; j <= t; ++j) {
        const std::int64_t key = j < chunk_start[t] ? j : pos(j);
        if (!window || key > pos(t) - window) block[static_cast<std::size_t>(t) * T + j] = verify[static_cast<std::size_t>(t) * T + j];
      }
    for (int h = 1; h < (per_row ? H : 1); ++h) std::copy_n(block, TT, block + h * TT);
  }
  return m;
}

// Runs `forward` (after refused_as_due's own refusals): a CacheError naming position_ids where
// window_refused() says so (returns true), none otherwise.
template <class Forward>
bool window_refused_as_due(bool due, const char* harness, Forward&& forward) {
  try {
    forward();
  } catch (const CacheError& e) {
    if (!due || e.argument() != "position_ids") throw;
    return true;
  }
  if (due) {
    std::fprintf(stderr, "%s: ids that move the window past one pass or below the row's length were accepted\n", harness);
    std::abort();
  }
  return false;
}

}  // namespace webattention::fuzz
