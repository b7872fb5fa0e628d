// A KV cache for incremental decoding (docs/attention-math/decoding.md §9): the projected (and rotated)
// keys and values of the positions appended so far, in storage allocated once, appended in place.
// Made by MultiHeadAttention::create_cache() and used only with that module.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "webattention/aligned_bytes.h"
#include "webattention/storage_type.h"

namespace webattention {

struct PackedKv;  // the kernels' view of the storage (private: cpp/src/kernels/attention_problem.h)

struct KvCacheConfig {
  int batch = 1;
  // Most positions the cache will ever hold; appending past it throws. Required without a
  // window; with one it is optional (0: no limit) and bounds the storage when smaller.
  int max_length = 0;
  // > 0: sliding-window attention; the query at p sees only keys at positions > p - window, and
  // the storage is a ring (ring_geometry below), so the length has no limit.
  int window = 0;
  // How keys and values are stored (docs/attention-math/storage.md §11): f32, f16 (rounded to
  // nearest-even) or int8 (one scale per position and K/V head). bf16 is not a cache type.
  StorageType dtype = StorageType::f32;
};

// The storage of a cache, as both backends size it (web/src/kv_ring.js is the same rule):
//  - capacity: the slots, position p in slot p mod capacity. Without a window max_length; with a
//    window W a ring of W + kRingSlack slots, or max_length when that is smaller (it then never
//    wraps); rounded up to whole key panels (a multiple of 8) for the kernels' layout.
//  - rows_per_pass: the most rows one pass of a forward may append and attend. A ring that can
//    wrap takes capacity - W + 1: the first row of a pass needs keys from its position - W + 1
//    on, which a longer pass would already have overwritten. Storage that never wraps takes
//    capacity (a call never appends more).
struct RingGeometry {
  std::int64_t capacity = 0;
  std::int64_t rows_per_pass = 0;
};
// Ring slots beyond the window: a ring's pass takes kRingSlack + 1 rows at least.
constexpr int kRingSlack = 63;
// Throws ConfigError for a window < 0, or a max_length < 1 without a window (< 0 with one).
RingGeometry ring_geometry(int max_length, int window);

class KvCache {
 public:
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // Positions appended so far: the longest row's. The rows hold as many each unless a forward
  // listed rows (MhaForwardArgs::rows) or truncate(lengths) cut them apart.
  std::int64_t length() const;
  std::int64_t row_length(int b) const { return lengths_[static_cast<std::size_t>(b)]; }
  bool uniform() const;  // every row holds the same number of positions
  // Made by MultiHeadAttention::encode(): an encoder's keys and values, attended to, never appended
  // to or truncated (a forward that would change it throws CacheError).
  bool read_only() const { return read_only_; }
  const KvCacheConfig& config() const { return config_; }
  int capacity() const { return capacity_; }  // slots of storage, a multiple of 8 (RingGeometry)
  void reset();  // back to length 0; keeps the storage
  // The first length truncate() accepts for row b: 0 unless its ring has wrapped, else the oldest
  // position it holds plus the window (a later query, and read(), need the window's keys before
  // `length`). Without b: the largest of the rows'.
  std::int64_t min_truncated_length(int b) const;
  std::int64_t min_truncated_length() const;
  // Drops positions >= length: a later append continues there, exactly as if they had never been
  // appended (their slots are zeroed). Throws CacheError, changing nothing, unless
  // min_truncated_length(b) <= length <= row_length(b) for every row b.
  void truncate(std::int64_t length);
  // truncate() per row: row b keeps lengths[b] positions (one per row); CacheError naming
  // `lengths`, changing nothing, unless each is in [min_truncated_length(b), row_length(b)].
  // (argument: the name its CacheError gives the lengths.)
  void truncate_rows(const std::int64_t* lengths, const char* argument = "lengths");
  // A new cache of the same module holding a copy of this one's storage and length.
  std::unique_ptr<KvCache> fork() const;
  // Copies positions [first, first + count) out in position order: keys into k [batch, kv_heads,
  // count, d_k], values into v [batch, kv_heads, count, d_v] (keys as stored: rotated). Throws
  // CacheError unless they are all held (a ring holds the last `capacity` positions) in every row
  // (rows of unequal lengths: CacheError naming `lengths`).
  void read(std::int64_t first, int count, float* k, float* v) const;
  // Whether a forward appended positions since the cache was made, reset, truncated or kept:
  // what keep() (MultiHeadAttention::keep()) chooses among.
  bool has_last_call() const { return last_first_ >= 0; }

 private:
  friend class MultiHeadAttention;
  KvCache(std::uint64_t owner, const KvCacheConfig& config, int kv_heads, int dk, int dv);

  KvCache(const KvCache& from, bool);  // fork()'s copy (the public copy constructor is deleted)
  // Zeroes the slots of positions [first, last) (all in the ring: last - first <= capacity) of
  // batch row b, or of every row (b < 0).
  void clear_positions(std::int64_t first, std::int64_t last, int b = -1);
  void clear_slots(int first, int last, int b);  // slots [first, last) of row b's blocks (b < 0: every row's)
  void set_lengths(std::int64_t length);  // every row's
  bool held_rows_finite() const;  // whether every slot held reads back finite

  // Rows that one append-and-attend pass may take (RingGeometry::rows_per_pass).
  int rows_per_pass() const { return rows_per_pass_; }
  // Writes `rows` positions of K [count, rows, kv_heads·dk] and V [count, rows, kv_heads·dv]
  // (batch strides k_batch, v_batch) into their slots: batch i of them to cache row
  // cache_rows[i] (null: row i, count = batch), after that row's own positions.
  void append(const float* k, std::ptrdiff_t k_batch, const float* v, std::ptrdiff_t v_batch,
              int rows, const std::int32_t* cache_rows, int count);
  PackedKv packed() const;  // the storage as the attention kernels read it

  // A forward's new positions [first, first + rows), remembered for keep(); positions: each row's
  // rotary position per batch, [batch, rows] (null: first + i). Called once the call can no longer
  // fail, after project_keys() (whose rows it then holds).
  void record_call(std::int64_t first, int rows, const std::int32_t* positions);
  // The call's K rows as projected, before the k-norm and RoPE, [batch, rows, kv_heads·dk]
  // (null: not kept), into storage the cache keeps (no allocation once it holds as many).
  void project_keys(const float* keys, std::size_t count) {
    if (keys) last_keys_.assign(keys, keys + count); else last_keys_.clear();
  }
  // per_row: the call that ends it appended to rows at positions of their own (keep() refuses).
  void forget_call(bool per_row = false) {
    last_first_ = -1, last_rows_ = 0, last_positions_.clear(), last_keys_.clear(), last_call_per_row_ = per_row;
  }
  // The rotary position row i of batch b of the last call was rotated at.
  std::int64_t last_position(int b, int i) const {
    return last_positions_.empty() ? last_first_ + i : last_positions_[static_cast<std::size_t>(b) * last_rows_ + i];
  }
  // How keep() turns a key to its new position (MultiHeadAttention's RoPE and k-norm).
  struct KeyRotation {
    // A position's K row as projected (kv_heads·dk), k-normed and rotated at `to`, in place.
    std::function<void(float* row, std::int64_t to)> from_projection;
    // One K/V head's key as stored (d_k), rotated at `from`, rotated on to `to`, in place.
    std::function<void(float* key, std::int64_t from, std::int64_t to)> from_stored;
  };
  // MultiHeadAttention::keep()'s storage side; the indices are checked. rotate: null without RoPE.
  void keep(const std::int32_t* indices, int count, const KeyRotation* rotate);
  // Moves batch b's row `index` of the last call (position last_first_ + index) to position `to`.
  void move_position(int b, int index, std::int64_t to, const KeyRotation* rotate);
  void store_key_row(int b, int slot, const float* row);  // every K/V head of one position's K row
  // Block (batch b, K/V head g) of the storage: its K and V elements and int8's scales (else null).
  struct Block {
    unsigned char *k, *v;
    float *k_scales, *v_scales;
  };
  Block block(int b, int g) const;

  std::uint64_t owner_;
  KvCacheConfig config_;
  int kv_heads_, dk_, dv_, dv_pad_, capacity_, rows_per_pass_;
  std::vector<std::int64_t> lengths_;  // each batch row's positions
  // Panel layouts of attention_problem.h's PackedKv, elements of config_.dtype; int8 adds one
  // scale per (batch, K/V head, slot): [batch·kv_heads][capacity] for K and for V.
  AlignedBytes k_, v_;
  std::unique_ptr<float[]> k_scales_, v_scales_;
  // Nothing stored, in any slot, reads back as Inf or NaN (cleared by an append that stores one;
  // unwritten slots are zeros): the f16 kernels' cheap widening, and no hidden key to keep out of
  // P·V (kernels/flash_hidden_keys.h).
  bool finite_ = true;
  bool read_only_ = false;
  std::size_t k_block_ = 0, v_block_ = 0;  // elements
  // The last forward's positions (record_call()); last_first_ -1: none to keep().
  std::int64_t last_first_ = -1;
  int last_rows_ = 0;
  bool last_call_per_row_ = false;
  std::vector<std::int32_t> last_positions_;
  std::vector<float> last_keys_;
};

}  // namespace webattention
