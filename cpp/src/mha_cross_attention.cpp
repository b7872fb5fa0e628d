// Cross-attention over an encoder's output (docs/attention-math/decoding.md §9): encode() projects the
// encoder's keys and values once into a read-only KvCache, and each decoder step's forward()
// projects only its queries and attends to every encoded position, as a full forward with
// that key and value would.
#include <algorithm>
#include <cstdint>
#include <string>

#include "checks.h"
#include "kernels/attention_problem.h"
#include "mask_checks.h"
#include "projection.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {

std::unique_ptr<KvCache> MultiHeadAttention::encode(const float* key, const float* value, int batch, int S,
                                                    StorageType dtype) const {
  require_loaded();
  require_positive("batch", batch);
  require_positive("S", S);
  const MhaConfig& c = config_;
  if (c.rotary_dim > 0) {
    // A cross-attention key has no position in the decoder's sequence to rotate it to.
    throw ConfigError("rotary_dim", "encode: a module with a rotary embedding (rotary_dim " + std::to_string(c.rotary_dim) +
                                        ") rotates keys by position; an encoder's keys have none here");
  }
  if (key == nullptr || value == nullptr) {
    throw ShapeError(key == nullptr ? "key" : "value", "encode: expected the encoder's key and value");
  }
  const std::int64_t B = batch, S64 = S;
  require_addressable("key", "the encoded keys and values", B * S64 * (k_width_ + std::int64_t{kv_width_}));
  require_addressable("key", "the rows", B * S64 * std::max(c.kdim, c.vdim));
  std::unique_ptr<KvCache> cache = create_cache(KvCacheConfig{batch, S, 0, dtype});

  const std::size_t k_floats = static_cast<std::size_t>(B * S64 * k_width_);
  scratch_.resize(k_floats + static_cast<std::size_t>(B * S64 * kv_width_));
  Projected x{nullptr, scratch_.data(), scratch_.data() + k_floats, c.num_heads, qk_width_, k_width_, kv_width_};
  const kernels::LinearTarget tk{wk_.get(), x.k, k_width_}, tv{wv_.get(), x.v, kv_width_};
  project_keys_values(key, value, batch * S, c.kdim, c.vdim, tk, tv);
  rotate(x, batch, 0, S, 0, nullptr);  // the k-norm of a qk-norm module; no RoPE (refused above)
  cache->append(x.k, S64 * k_width_, x.v, S64 * kv_width_, S, nullptr, batch);
  cache->read_only_ = true;
  return cache;
}

void MultiHeadAttention::check_encoded_forward(const MhaForwardArgs& a, const KvCache& cache) const {
  if (cache.owner_ != id_) {
    throw CacheError("cache", "cache: encoded by another module (encode() of the module that uses it)");
  }
  require_loaded();
  require_positive("batch", a.batch);
  require_positive("L", a.L);
  const int S = static_cast<int>(cache.length());
  if (a.batch != cache.config().batch) {
    throw ShapeError("query", "query: expected batch " + std::to_string(cache.config().batch) +
                                  " (the encoded cache's), got " + std::to_string(a.batch));
  }
  if (a.S != 0 || a.key != nullptr || a.value != nullptr) {
    throw CacheError("cache", "cache: an encoded cache (encode()) is read-only: pass null key and value, "
                              "the encoder's keys and values are in it");
  }
  if (a.attn_mask.kind != MaskKind::kNone) {
    throw ConfigError("attn_mask", "attn_mask: not supported with an encoded cache (use key_padding_mask)");
  }
  if (a.position_ids != nullptr) {
    throw ConfigError("position_ids", "position_ids: an encoded cache attends without positions");
  }
  const std::int64_t B = a.batch, L = a.L;
  require_addressable("query", "the projections' scratch", B * L * (qk_width_ + std::int64_t{v_width_}));
  require_addressable("query", "the rows", B * L * config_.embed_dim);
  key_padding_view(a.key_padding_mask, a.batch, S, "key_padding_mask");
  if (a.weights) {
    require_addressable("weights", "the attention weights", B * (a.average_weights ? 1 : config_.num_heads) * L * S);
  }
}

void MultiHeadAttention::forward_encoded(const MhaForwardArgs& a, const KvCache& cache) const {
  check_encoded_forward(a, cache);
  const MhaConfig& c = config_;
  const int B = a.batch, L = a.L, H = c.num_heads, S = static_cast<int>(cache.length());
  const std::size_t q_floats = static_cast<std::size_t>(B) * L * qk_width_;
  scratch_.resize(q_floats + static_cast<std::size_t>(B) * L * v_width_);
  float* heads = scratch_.data() + q_floats;
  const Projected x{scratch_.data(), nullptr, nullptr, H, qk_width_, k_width_, kv_width_};
  const kernels::LinearTarget tq{wq_.get(), x.q, qk_width_};
  project(a.query, B * L, c.embed_dim, &tq, 1);
  rotate(x, B, L, 0, 0, nullptr);  // the q-norm of a qk-norm module

  AttentionProblem p = head_problem(B, H, L, S, x.q, static_cast<std::ptrdiff_t>(L) * qk_width_, qk_width_, heads,
                                    static_cast<std::ptrdiff_t>(L) * v_width_);
  p.cache = cache.packed();
  p.causal = false;
  p.masks[0] = key_padding_view(a.key_padding_mask, B, S, "key_padding_mask");
  p.write_weights(a.weights, L, S, a.average_weights);
  run_attention(p);
  project_output(heads, B * L, a.output);
}

}  // namespace webattention
