// KV cache storage: the kernels' packed K and V layouts (kernels/kv_layout.h), one block per
// (batch, K/V head), allocated and zeroed once; positions land in slot position % capacity.
#include "webattention/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "checks.h"
#include "kernels/kernels.h"
#include "webattention/errors.h"

namespace webattention {

RingGeometry ring_geometry(int max_length, int window) {
  if (window < 0) {
    throw ConfigError("window", "window: expected an integer >= 1, got " + std::to_string(window));
  }
  if (max_length < (window > 0 ? 0 : 1)) {
    throw ConfigError("max_length", "max_length: expected an integer >= 1" +
                                        std::string(window > 0 ? " (or 0 with a window)" : "") +
                                        ", got " + std::to_string(max_length));
  }
  std::int64_t slots = max_length;
  if (window > 0) {
    slots = std::int64_t{window} + kRingSlack;
    if (max_length > 0) slots = std::min<std::int64_t>(slots, max_length);
  }
  RingGeometry g;
  g.capacity = kernels::whole_panels(slots);
  const bool wraps = window > 0 && (max_length == 0 || g.capacity < max_length);
  g.rows_per_pass = wraps ? g.capacity - window + 1 : g.capacity;
  return g;
}

KvCache::KvCache(std::uint64_t owner, const KvCacheConfig& config, int kv_heads, int dk, int dv)
    : owner_(owner), config_(config), kv_heads_(kv_heads), dk_(dk), dv_(dv),
      dv_pad_(kernels::whole_panels(dv)) {
  const RingGeometry ring = ring_geometry(config.max_length, config.window);
  // The option the caller gave that makes the storage too large: the window (a ring) or max_length
  // that sets the capacity, or the batch size that multiplies it. The key check also bounds the
  // capacity itself (at least one K/V head of at least one float per slot).
  const bool ring_sized = config.window > 0 && (config.max_length == 0 || ring.capacity < config.max_length);
  const std::int64_t per_batch = std::int64_t{kv_heads} * ring.capacity * std::max(dk, dv_pad_);
  const char* too_large = config.batch > 1 && per_batch <= kMaxBufferFloats ? "batch_size"
                          : ring_sized                                      ? "window"
                                                                            : "max_length";
  const std::int64_t blocks = std::int64_t{config.batch} * kv_heads;
  require_addressable(too_large, "the cache's keys", blocks * ring.capacity * dk);
  require_addressable(too_large, "the cache's values", blocks * ring.capacity * dv_pad_);
  capacity_ = static_cast<int>(ring.capacity);
  rows_per_pass_ = static_cast<int>(ring.rows_per_pass);
  k_block_ = kernels::key_block_elements(capacity_, dk);
  v_block_ = kernels::value_block_elements(capacity_, dv);
  // Zeroed: a value slot not yet written is multiplied by a weight of 0, which must give 0.
  k_.reset(new float[blocks * k_block_]());
  v_.reset(new float[blocks * v_block_]());
}

KvCache::~KvCache() = default;

void KvCache::reset() {
  // Zero again, so that the old sequence's values (maybe Inf or NaN) cannot leak into padding.
  const std::size_t blocks = static_cast<std::size_t>(config_.batch) * kv_heads_;
  std::fill(k_.get(), k_.get() + blocks * k_block_, 0.0f);
  std::fill(v_.get(), v_.get() + blocks * v_block_, 0.0f);
  length_ = 0;
}

void KvCache::append(const float* k, std::ptrdiff_t k_batch, const float* v,
                     std::ptrdiff_t v_batch, int rows) {
  const int k_width = kv_heads_ * dk_, v_width = kv_heads_ * dv_;
  for (int b = 0; b < config_.batch; ++b) {
    for (int i = 0; i < rows; ++i) {
      const int slot = static_cast<int>((length_ + i) % capacity_);
      const float* krow = k + b * k_batch + static_cast<std::ptrdiff_t>(i) * k_width;
      const float* vrow = v + b * v_batch + static_cast<std::ptrdiff_t>(i) * v_width;
      for (int g = 0; g < kv_heads_; ++g) {
        const std::size_t block = static_cast<std::size_t>(b) * kv_heads_ + g;
        kernels::key_panels(k_.get() + block * k_block_, dk_).set_column(slot, krow + g * dk_, dk_);
        kernels::value_panels(v_.get() + block * v_block_, capacity_).set_row(slot, vrow + g * dv_, dv_);
      }
    }
  }
  length_ += rows;
}

void KvCache::read(std::int64_t first, int count, float* k, float* v) const {
  const std::int64_t oldest = std::max<std::int64_t>(0, length_ - capacity_);
  if (count < 0 || first < oldest || first + count > length_) {
    throw CacheError("cache", "cache.read: positions [" + std::to_string(first) + ", " +
                                  std::to_string(first + count) + ") are not all held; it holds [" +
                                  std::to_string(oldest) + ", " + std::to_string(length_) + ")");
  }
  for (int b = 0; b < config_.batch; ++b) {
    for (int g = 0; g < kv_heads_; ++g) {
      const std::size_t block = static_cast<std::size_t>(b) * kv_heads_ + g;
      const auto keys = kernels::key_panels(k_.get() + block * k_block_, dk_);
      const auto values = kernels::value_panels(v_.get() + block * v_block_, capacity_);
      float* krows = k + block * static_cast<std::size_t>(count) * dk_;
      float* vrows = v + block * static_cast<std::size_t>(count) * dv_;
      for (int i = 0; i < count; ++i) {
        const int slot = static_cast<int>((first + i) % capacity_);
        for (int c = 0; c < dk_; ++c) krows[static_cast<std::size_t>(i) * dk_ + c] = keys.at(slot, c);
        for (int c = 0; c < dv_; ++c) vrows[static_cast<std::size_t>(i) * dv_ + c] = values.at(c, slot);
      }
    }
  }
}

}  // namespace webattention
