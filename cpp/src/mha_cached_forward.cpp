// Incremental decoding (docs/attention-math/decoding.md §9): a forward that appends to a KV cache and
// attends over it, reading the cached K and V in place.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/attention_problem.h"
#include "mask_checks.h"
#include "cache_passes.h"
#include "checks.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {
// A call of at most this many rows keeps its projected keys for keep() (a draft verification's
// few); a longer one's moved keys are rotated on from the stored ones (docs/attention-math/decoding.md §9).
constexpr int kKeepProjectedRows = 256;

// Whether a call's positionIds move a window off the slots (Positions::ids, docs/attention-math/decoding.md
// §9): the cache has a window and some id is not its row's slot. Otherwise the kernels' plain
// rule is the same rule, at no cost.
bool window_in_ids(const MhaForwardArgs& a, const KvCache& cache) {
  if (!a.position_ids || cache.config().window <= 0) return false;
  for (int n = 0; n < a.batch; ++n) {
    const std::int64_t first = cache.row_length(a.rows ? a.rows[n] : n);
    for (int i = 0; i < a.L; ++i)
      if (a.position_ids[static_cast<std::ptrdiff_t>(n) * a.L + i] != first + i) return true;
  }
  return false;
}

// A window in positionIds reaches keys the ring holds only when the call is one pass and no
// position is before its row's length (the ring holds the window's keys before the pass's first
// slot, and every key of the pass).
void check_window_ids(const MhaForwardArgs& a, const KvCache& cache, int rows_per_pass) {
  if (!window_in_ids(a, cache)) return;
  const std::string window = "with the cache's window (" + std::to_string(cache.config().window) + ") ";
  if (a.L > rows_per_pass) {
    throw CacheError("position_ids", "position_ids: " + window + "positions other than the rows' own need a call of at most " +
                                         std::to_string(rows_per_pass) + " rows (one pass of the ring), got " + std::to_string(a.L));
  }
  for (int n = 0; n < a.batch; ++n) {
    const std::int64_t first = cache.row_length(a.rows ? a.rows[n] : n);
    for (int i = 0; i < a.L; ++i) {
      const std::int32_t id = a.position_ids[static_cast<std::ptrdiff_t>(n) * a.L + i];
      if (id < first) {
        throw CacheError("position_ids", "position_ids: " + window + "expected positions >= the row's length before the call (" +
                                             std::to_string(first) + "), got " + std::to_string(id) + " at [" + std::to_string(n) +
                                             ", " + std::to_string(i) + "]");
      }
    }
  }
}
}  // namespace

std::unique_ptr<KvCache> MultiHeadAttention::create_cache(const KvCacheConfig& config) const {
  if (config.batch < 1) {
    throw ConfigError("batch_size", "batch_size: expected an integer >= 1, got " +
                                        std::to_string(config.batch));
  }
  // A type a cache cannot hold: the ConfigError naming the ones it can.
  parse_storage_type(storage_type_name(config.dtype), "dtype", &StorageTypeInfo::cache);
  const MhaConfig& c = config_;
  return std::unique_ptr<KvCache>(
      new KvCache(id_, config, c.num_kv_heads, c.head_dim, c.value_head_dim));
}

void MultiHeadAttention::check_cached_forward(const MhaForwardArgs& a, const KvCache& cache) const {
  if (cache.owner_ != id_) {
    throw CacheError("cache", "cache: made by another module (createCache() of the module that uses it)");
  }
  check_forward(a);
  const KvCacheConfig& cc = cache.config();
  if (a.rows) {
    check_call_rows(a, cache);
  } else if (a.batch != cc.batch) {
    throw ShapeError("query", "query: expected batch " + std::to_string(cc.batch) +
                                  " (the cache's batch_size), got " + std::to_string(a.batch));
  }
  if (a.S != a.L) {
    throw ShapeError("key", "key: with a cache, expected the L = " + std::to_string(a.L) +
                                " new positions, got S = " + std::to_string(a.S));
  }
  std::int64_t after = 0;
  const bool placed = place_call(a, cache, after);
  verify_mask_view(a.attn_mask, a.batch, config_.num_heads, a.L, after - a.L, "attn_mask");
  for (int n = 0; n < a.batch; ++n) {
    const int row = a.rows ? a.rows[n] : n;
    const std::int64_t length = cache.row_length(row);
    if (cc.max_length > 0 && length + a.L > cc.max_length) {
      throw CacheError("cache", "cache: appending " + std::to_string(a.L) + " positions to length " +
                                    std::to_string(length) + (cache.uniform() && !a.rows ? "" : " (row " + std::to_string(row) + ")") +
                                    " would pass max_length " + std::to_string(cc.max_length));
    }
  }
  const std::int64_t table_positions = config_.rotary_dim ? static_cast<std::int64_t>(rotary_cos_.size()) / (config_.rotary_dim / 2) : 0;
  if (placed && !a.position_ids && !rotary_cos_.empty() && after > table_positions) {
    throw ShapeError("rotary", "rotary table: positions up to " + std::to_string(after - 1) +
                                   " are rotated, the table has rows for 0 … " + std::to_string(table_positions - 1));
  }
  require_addressable("key_padding_mask", "the key padding mask", a.batch * after);
  if (after > INT32_MAX) {
    throw ShapeError("key_padding_mask", "key_padding_mask: a length of " + std::to_string(after) +
                                             " positions cannot be indexed here");
  }
  key_padding_view(a.key_padding_mask, a.batch, static_cast<int>(after), "key_padding_mask");
  check_window_ids(a, cache, cache.rows_per_pass());
  if (a.weights) {
    require_addressable("weights", "the attention weights",
                        a.batch * (a.average_weights ? 1 : config_.num_heads) * a.L * after);
  }
}

// MhaForwardArgs::rows: `batch` strictly increasing rows of the cache.
void MultiHeadAttention::check_call_rows(const MhaForwardArgs& a, const KvCache& cache) const {
  const int rows = cache.config().batch;
  if (a.batch > rows) {
    throw ShapeError("rows", "rows: a call lists at most the cache's " + std::to_string(rows) + " rows, got " +
                                 std::to_string(a.batch));
  }
  for (int n = 0; n < a.batch; ++n) {
    const std::int32_t r = a.rows[n];
    if (r < 0 || r >= rows || (n > 0 && r <= a.rows[n - 1])) {
      throw ShapeError("rows", "rows: expected strictly increasing rows of the cache in [0, " + std::to_string(rows) +
                                   "), got " + std::to_string(r) + " at index " + std::to_string(n) +
                                   (n > 0 ? " after " + std::to_string(a.rows[n - 1]) : ""));
    }
  }
}

bool MultiHeadAttention::place_call(const MhaForwardArgs& a, const KvCache& cache, std::int64_t& after) const {
  if (!a.rows && cache.uniform()) {
    after = cache.length() + a.L;
    return false;
  }
  call_rows_.resize(static_cast<std::size_t>(a.batch));
  call_firsts_.resize(static_cast<std::size_t>(a.batch));
  std::int64_t longest = 0;
  for (int n = 0; n < a.batch; ++n) {
    const int row = a.rows ? a.rows[n] : n;
    call_rows_[static_cast<std::size_t>(n)] = row;
    call_firsts_[static_cast<std::size_t>(n)] = cache.row_length(row);
    longest = std::max(longest, cache.row_length(row));
  }
  after = longest + a.L;
  return true;
}

void MultiHeadAttention::forward(const MhaForwardArgs& a, KvCache& cache) const {
  if (cache.read_only()) return forward_encoded(a, cache);  // cross-attention (mha_cross_attention.cpp)
  check_cached_forward(a, cache);
  const MhaConfig& c = config_;
  const int B = a.batch, L = a.L, H = c.num_heads;
  std::int64_t after = 0;
  // Batches at positions of their own: the problem's positions start at 0, each batch's shifted
  // by its row's length (AttentionProblem::rows), its rotary positions its own.
  const bool placed = place_call(a, cache, after);
  const std::int64_t first = placed ? 0 : cache.length();
  const bool ids_window = window_in_ids(a, cache);  // before the passes append
  const int total = static_cast<int>(after);  // check_cached_forward: it fits an int
  const std::int32_t* positions = a.position_ids;
  if (placed && !positions && c.rotary_dim > 0) {
    call_positions_.resize(static_cast<std::size_t>(B) * L);
    for (int n = 0; n < B; ++n) {
      for (int i = 0; i < L; ++i) call_positions_[static_cast<std::size_t>(n) * L + i] = static_cast<std::int32_t>(call_firsts_[n] + i);
    }
    positions = call_positions_.data();
  }
  const MaskView padding = key_padding_view(a.key_padding_mask, B, total, "key_padding_mask");
  // Among the new positions, on top of the causal rule (a tree of drafts: docs/attention-math/decoding.md §9).
  const MaskView verify = verify_mask_view(a.attn_mask, B, H, L, first, "attn_mask");
  const std::size_t heads_floats = static_cast<std::size_t>(B) * L * v_width_;
  const std::size_t scratch = scratch_floats(B, L, L);
  scratch_.resize(scratch);  // before anything changes: a failed allocation leaves the cache
  float* heads = scratch_.data() + (scratch - heads_floats);
  const Projected x = project_inputs(a, 0, H, *wq_, *wk_, *wv_);
  // A RoPE module's keys as projected, for a keep() that moves one (docs/attention-math/decoding.md §9):
  // rotated at its new position, they are what a fresh run stores, for every storage type.
  const bool keeps_keys = c.rotary_dim > 0 && L <= kKeepProjectedRows;
  cache.project_keys(keeps_keys ? x.k : nullptr, static_cast<std::size_t>(B) * L * x.k_width);
  rotate(x, B, L, L, first, positions);

  // Keys are positions (attention_problem.h): the kernels find position j in slot j mod capacity,
  // and read the key-padding mask [B, total] and write the weights [B, (h,) L, total] in place.
  for_each_pass(L, cache.rows_per_pass(), [&](int r0, int rows) {
    cache.append(x.k + static_cast<std::ptrdiff_t>(r0) * x.k_width, static_cast<std::ptrdiff_t>(L) * x.k_width,
                 x.v + static_cast<std::ptrdiff_t>(r0) * x.v_width, static_cast<std::ptrdiff_t>(L) * x.v_width, rows,
                 placed ? call_rows_.data() : nullptr, B);
    const int length = static_cast<int>(first + r0 + rows);
    AttentionProblem p = head_problem(B, H, rows, length, x.q + static_cast<std::ptrdiff_t>(r0) * x.q_width,
                                      static_cast<std::ptrdiff_t>(L) * x.q_width, x.q_width,
                                      heads + static_cast<std::ptrdiff_t>(r0) * v_width_,
                                      static_cast<std::ptrdiff_t>(L) * v_width_);
    p.cache = cache.packed();
    if (placed) p.rows = {call_rows_.data(), call_firsts_.data()};
    p.causal = true;
    p.positions.query0 = length - rows;
    p.positions.window = cache.config().window;
    if (ids_window) p.positions.ids = a.position_ids, p.positions.ids_stride = L, p.positions.call0 = first;
    p.masks[0] = padding;
    p.masks[1] = from_row(verify, r0);
    p.write_weights(a.weights ? a.weights + static_cast<std::ptrdiff_t>(r0) * total : nullptr, L, total, a.average_weights);
    run_attention(p);
  });
  project_output(heads, B * L, a.output);
  // keep() takes a call on every row of a cache whose rows are equal (cache.keep()'s rule).
  if (placed) cache.forget_call(true); else cache.record_call(first, L, a.position_ids);
}

void MultiHeadAttention::check_keep(const KvCache& cache, const std::int32_t* indices, int count) const {
  if (cache.owner_ != id_) {
    throw CacheError("cache", "cache: made by another module (createCache() of the module that uses it)");
  }
  if (cache.read_only()) {
    throw CacheError("cache", "cache.keep: an encoded cache (encode()) holds an encoder's keys and values and is read-only");
  }
  if (cache.last_call_per_row_) {
    throw CacheError("cache", "cache.keep: the last forward() appended to rows of their own lengths (rows, or rows of "
                              "unequal lengths); keep() takes only a call on every row of a cache whose rows are equal");
  }
  if (!cache.has_last_call()) {
    throw CacheError("cache", "cache.keep: no forward() has appended positions since the cache was made, reset, "
                              "truncated or kept: nothing to keep among");
  }
  const int L = cache.last_rows_;
  for (int t = 0; t < count; ++t) {
    const std::int32_t i = indices[t];
    if (i < 0 || i >= L || (t > 0 && i <= indices[t - 1])) {
      throw CacheError("indices", "cache.keep: expected strictly increasing indices in [0, " + std::to_string(L) +
                                      ") (the last call's new positions), got " + std::to_string(i) + " at index " +
                                      std::to_string(t) + (t > 0 ? " after " + std::to_string(indices[t - 1]) : ""));
    }
  }
  const std::int64_t first = cache.last_first_, length = first + count;
  if (first < cache.length() - cache.capacity() || length < cache.min_truncated_length()) {
    throw CacheError("indices", "cache.keep: the last call's positions from " + std::to_string(first) +
                                    " on (or the window's keys before them) are no longer all in the ring of the window (" +
                                    std::to_string(cache.config().window) + "); keep at least " +
                                    std::to_string(cache.min_truncated_length() - first) + " of them, in a call of fewer rows");
  }
  const std::int64_t table_positions = config_.rotary_dim ? static_cast<std::int64_t>(rotary_cos_.size()) / (config_.rotary_dim / 2) : 0;
  if (!rotary_cos_.empty() && length > table_positions) {
    throw ShapeError("rotary", "rotary table: keep() rotates keys to positions up to " + std::to_string(length - 1) +
                                   ", the table has rows for 0 … " + std::to_string(table_positions - 1));
  }
}

void MultiHeadAttention::keep(KvCache& cache, const std::int32_t* indices, int count) const {
  check_keep(cache, indices, count);
  if (config_.rotary_dim == 0) return cache.keep(indices, count, nullptr);
  KvCache::KeyRotation rotation;
  rotation.from_projection = [this](float* row, std::int64_t to) {
    const Projected k{nullptr, row, nullptr, 0, 0, k_width_, 0};
    rotate_rows(k, 1, 0, 1, to, nullptr);
  };
  rotation.from_stored = [this](float* key, std::int64_t from, std::int64_t to) { rotate_key(key, from, to); };
  cache.keep(indices, count, &rotation);
}

void MultiHeadAttention::rotate_key(float* key, std::int64_t from, std::int64_t to) const {
  const int half = config_.rotary_dim / 2;
  for (int j = 0; j < half; ++j) {
    // The rotation by the difference of the two angles, formed in double: from θ_j, or from the
    // given table's cosines and sines of both positions (cos(a − b), sin(a − b)).
    double c, s;
    if (rotary_cos_.empty()) {
      const double angle = static_cast<double>(to - from) * rotary_frequencies_[static_cast<std::size_t>(j)];
      c = std::cos(angle), s = std::sin(angle);
    } else {
      const std::size_t t = static_cast<std::size_t>(to) * half + j, f = static_cast<std::size_t>(from) * half + j;
      const double ct = rotary_cos_[t], st = rotary_sin_[t], cf = rotary_cos_[f], sf = rotary_sin_[f];
      c = ct * cf + st * sf, s = st * cf - ct * sf;
    }
    const int i0 = config_.rotary_interleaved ? 2 * j : j, i1 = config_.rotary_interleaved ? 2 * j + 1 : j + half;
    const double x = key[i0], y = key[i1];
    key[i0] = static_cast<float>(x * c - y * s);
    key[i1] = static_cast<float>(x * s + y * c);
  }
}

}  // namespace webattention
