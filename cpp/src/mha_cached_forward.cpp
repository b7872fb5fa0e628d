// Incremental decoding (docs/attention-math.md §9): a forward that appends to a KV cache and
// attends over it, reading the cached K and V in place.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "attention_problem.h"
#include "cache_passes.h"
#include "checks.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

// Positions of the `slots` keys a cache of `capacity` slots holds when `length` positions were
// appended: slot = position % capacity, the oldest `length - slots` positions overwritten.
Positions cache_positions(std::int64_t length, int capacity) {
  Positions pos;
  if (length <= capacity) return pos;  // slot j holds position j
  const std::int64_t oldest = length - capacity;
  const int split = static_cast<int>(oldest % capacity);  // the oldest position's slot
  pos.key_split = split;
  pos.shift_after = oldest - split;              // slots [split, capacity): oldest + (j - split)
  pos.shift_before = oldest + capacity - split;  // slots [0, split): after the wrap
  return pos;
}

// The key-padding mask [B, length] reordered by slot ([B, slots]): the kernels index keys by slot.
void gather_mask(const MaskView& m, int batch, const Positions& pos, int slots,
                 std::vector<float>& out, MaskView& view) {
  view = m;
  if (m.empty()) return;
  const std::size_t element = m.kind == MaskKind::kBoolean ? 1 : sizeof(float);
  out.resize((static_cast<std::size_t>(batch) * slots * element + sizeof(float) - 1) / sizeof(float));
  auto* dst = reinterpret_cast<char*>(out.data());
  const auto* src = static_cast<const char*>(m.data);
  for (int b = 0; b < batch; ++b)
    for (int j = 0; j < slots; ++j)
      std::memcpy(dst + (static_cast<std::size_t>(b) * slots + j) * element,
                  src + (b * m.batch_stride + pos.key(j)) * element, element);
  view.data = out.data();
  view.batch_stride = slots;
}

}  // namespace

std::unique_ptr<KvCache> MultiHeadAttention::create_cache(const KvCacheConfig& config) const {
  if (config.batch < 1) {
    throw ConfigError("batch_size", "batch_size: expected an integer >= 1, got " +
                                        std::to_string(config.batch));
  }
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
  if (a.batch != cc.batch) {
    throw ShapeError("query", "query: expected batch " + std::to_string(cc.batch) +
                                  " (the cache's batch_size), got " + std::to_string(a.batch));
  }
  if (a.S != a.L) {
    throw ShapeError("key", "key: with a cache, expected the L = " + std::to_string(a.L) +
                                " new positions, got S = " + std::to_string(a.S));
  }
  if (a.attn_mask.kind != MaskKind::kNone) {
    throw ConfigError("attn_mask", "attn_mask: not supported with a cache (causal is implied; "
                                   "use key_padding_mask)");
  }
  const std::int64_t after = cache.length() + a.L;
  if (cc.max_length > 0 && after > cc.max_length) {
    throw CacheError("cache", "cache: appending " + std::to_string(a.L) + " positions to length " +
                                  std::to_string(cache.length()) + " would pass max_length " +
                                  std::to_string(cc.max_length));
  }
  require_addressable("key_padding_mask", "the key padding mask", a.batch * after);
  if (after > INT32_MAX) {
    throw ShapeError("key_padding_mask", "key_padding_mask: a length of " + std::to_string(after) +
                                             " positions cannot be indexed here");
  }
  key_padding_view(a.key_padding_mask, a.batch, static_cast<int>(after), "key_padding_mask");
  if (a.weights) {
    require_addressable("weights", "the attention weights",
                        a.batch * (a.average_weights ? 1 : config_.num_heads) * a.L * after);
  }
}

void MultiHeadAttention::forward(const MhaForwardArgs& a, KvCache& cache) const {
  check_cached_forward(a, cache);
  const MhaConfig& c = config_;
  const int B = a.batch, L = a.L, H = c.num_heads;
  const std::int64_t first = cache.length(), total = first + L;
  const MaskView padding = key_padding_view(a.key_padding_mask, B, static_cast<int>(total), "key_padding_mask");
  const std::size_t heads_floats = static_cast<std::size_t>(B) * L * v_width_;
  const std::size_t scratch = scratch_floats(B, L, L);
  const int weight_heads = a.average_weights ? 1 : H;
  const int step = std::min(L, cache.rows_per_pass());
  // One step whose slots are the positions (the storage has not wrapped) writes the weights where
  // they go; otherwise they go through slot order.
  const bool weights_in_place = step == L && total <= cache.capacity();
  // Before anything changes: a failed allocation leaves the cache as it was.
  scratch_.resize(scratch);
  if (a.weights && !weights_in_place) {
    weight_slots_.resize(std::max(weight_slots_.size(),
                                  static_cast<std::size_t>(B) * weight_heads * step * cache.capacity()));
  }
  float* heads = scratch_.data() + (scratch - heads_floats);
  const Projected x = project_inputs(a, 0, H, *wq_, *wk_, *wv_);
  rotate(x, B, L, L, first);

  for_each_pass(L, cache.rows_per_pass(), [&](int r0, int rows) {
    cache.append(x.k + static_cast<std::ptrdiff_t>(r0) * x.k_width, static_cast<std::ptrdiff_t>(L) * x.k_width,
                 x.v + static_cast<std::ptrdiff_t>(r0) * x.v_width, static_cast<std::ptrdiff_t>(L) * x.v_width, rows);
    const std::int64_t length = cache.length();
    const int slots = static_cast<int>(std::min<std::int64_t>(length, cache.capacity()));

    AttentionProblem p = head_problem(B, H, rows, slots, x.q + static_cast<std::ptrdiff_t>(r0) * x.q_width,
                                      static_cast<std::ptrdiff_t>(L) * x.q_width, x.q_width,
                                      heads + static_cast<std::ptrdiff_t>(r0) * v_width_,
                                      static_cast<std::ptrdiff_t>(L) * v_width_);
    p.cache = {cache.k_.get(), cache.v_.get(), static_cast<std::ptrdiff_t>(cache.k_block_),
               static_cast<std::ptrdiff_t>(cache.v_block_), cache.capacity()};
    p.causal = true;
    p.positions = cache_positions(length, cache.capacity());
    p.positions.query0 = length - rows;
    p.positions.window = cache.config().window;
    // Until the storage wraps, slot j holds position j and the mask is read where it is.
    p.masks[0] = padding;
    if (length > cache.capacity()) gather_mask(padding, B, p.positions, slots, mask_slots_, p.masks[0]);
    p.weights = !a.weights ? nullptr : weights_in_place ? a.weights : weight_slots_.data();
    p.average_weights = a.average_weights;
    run_attention(p);
    if (!a.weights || weights_in_place) return;
    // Slot order → positions: [B, (h,) rows, slots] into rows r0.. of [B, (h,) L, total].
    for (int bh = 0; bh < B * weight_heads; ++bh) {
      for (int i = 0; i < rows; ++i) {
        const float* src = weight_slots_.data() + (static_cast<std::size_t>(bh) * rows + i) * slots;
        float* dst = a.weights + (static_cast<std::size_t>(bh) * L + r0 + i) * total;
        // Positions no slot holds any more are 0 (outside the window), NaN in a NaN row.
        std::fill(dst, dst + total, std::isnan(src[0]) ? src[0] : 0.0f);
        for (int j = 0; j < slots; ++j) dst[p.positions.key(j)] = src[j];
      }
    }
  });
  project_output(heads, B * L, a.output);
}

}  // namespace webattention
