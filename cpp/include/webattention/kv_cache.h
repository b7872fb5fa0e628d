// A KV cache for incremental decoding (docs/attention-math.md §9): the projected (and rotated)
// keys and values of the positions appended so far, in storage allocated once, appended in place.
// Made by MultiHeadAttention::create_cache() and used only with that module.
#pragma once

#include <cstdint>
#include <memory>

namespace webattention {

struct KvCacheConfig {
  int batch = 1;
  // Most positions the cache will ever hold; appending past it throws. Required without a
  // window; with one it is optional (0: no limit) and bounds the storage when smaller.
  int max_length = 0;
  // > 0: sliding-window attention; the query at p sees only keys at positions > p - window, and
  // the storage is a ring of window + kRingSlack slots, so the length has no limit.
  int window = 0;
};

class KvCache {
 public:
  // Ring slots beyond the window: a call appends and attends at most kRingSlack + 1 rows at a
  // time, so that the oldest key its first row needs is not yet overwritten.
  static constexpr int kRingSlack = 63;

  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  std::int64_t length() const { return length_; }  // positions appended so far
  const KvCacheConfig& config() const { return config_; }
  int capacity() const { return capacity_; }  // slots of storage, a multiple of 8
  void reset();  // back to length 0; keeps the storage

 private:
  friend class MultiHeadAttention;
  KvCache(std::uint64_t owner, const KvCacheConfig& config, int kv_heads, int dk, int dv);

  // Rows that one append-and-attend step may take (all of them without a ring).
  int rows_per_step() const;
  // Writes `rows` positions of K [batch, rows, kv_heads·dk] and V [batch, rows, kv_heads·dv]
  // (row strides k_stride, v_stride per position, batch strides per batch) into their slots.
  void append(const float* k, std::ptrdiff_t k_batch, const float* v, std::ptrdiff_t v_batch,
              int rows);

  std::uint64_t owner_;
  KvCacheConfig config_;
  int kv_heads_, dk_, dv_, dv_pad_, capacity_;
  std::int64_t length_ = 0;
  std::unique_ptr<float[]> k_, v_;  // panel layouts of attention_problem.h's PackedKv
  std::size_t k_block_ = 0, v_block_ = 0;
};

}  // namespace webattention
