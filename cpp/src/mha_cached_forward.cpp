// Incremental decoding (docs/attention-math.md §9): a forward that appends to a KV cache and
// attends over it, reading the cached K and V in place.
#include <cstdint>
#include <string>

#include "kernels/attention_problem.h"
#include "mask_checks.h"
#include "cache_passes.h"
#include "checks.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
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
  if (cache.read_only()) return forward_encoded(a, cache);  // cross-attention (mha_cross_attention.cpp)
  check_cached_forward(a, cache);
  const MhaConfig& c = config_;
  const int B = a.batch, L = a.L, H = c.num_heads;
  const std::int64_t first = cache.length();
  const int total = static_cast<int>(first + L);  // check_cached_forward: it fits an int
  const MaskView padding = key_padding_view(a.key_padding_mask, B, total, "key_padding_mask");
  const std::size_t heads_floats = static_cast<std::size_t>(B) * L * v_width_;
  const std::size_t scratch = scratch_floats(B, L, L);
  scratch_.resize(scratch);  // before anything changes: a failed allocation leaves the cache
  float* heads = scratch_.data() + (scratch - heads_floats);
  const Projected x = project_inputs(a, 0, H, *wq_, *wk_, *wv_);
  rotate(x, B, L, L, first, a.position_ids);

  // Keys are positions (attention_problem.h): the kernels find position j in slot j mod capacity,
  // and read the key-padding mask [B, total] and write the weights [B, (h,) L, total] in place.
  for_each_pass(L, cache.rows_per_pass(), [&](int r0, int rows) {
    cache.append(x.k + static_cast<std::ptrdiff_t>(r0) * x.k_width, static_cast<std::ptrdiff_t>(L) * x.k_width,
                 x.v + static_cast<std::ptrdiff_t>(r0) * x.v_width, static_cast<std::ptrdiff_t>(L) * x.v_width, rows);
    const int length = static_cast<int>(cache.length());
    AttentionProblem p = head_problem(B, H, rows, length, x.q + static_cast<std::ptrdiff_t>(r0) * x.q_width,
                                      static_cast<std::ptrdiff_t>(L) * x.q_width, x.q_width,
                                      heads + static_cast<std::ptrdiff_t>(r0) * v_width_,
                                      static_cast<std::ptrdiff_t>(L) * v_width_);
    p.cache = cache.packed();
    p.causal = true;
    p.positions.query0 = length - rows;
    p.positions.window = cache.config().window;
    p.masks[0] = padding;
    p.write_weights(a.weights ? a.weights + static_cast<std::ptrdiff_t>(r0) * total : nullptr, L, total, a.average_weights);
    run_attention(p);
  });
  project_output(heads, B * L, a.output);
}

}  // namespace webattention
