// KV cache storage: the kernels' packed K and V layouts (kernels/kv_layout.h), one block per
// (batch, K/V head), allocated and zeroed once; positions land in slot position % capacity.
#include "webattention/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/attention_problem.h"

#include "checks.h"
#include "kv_rows.h"
#include "kernels/kernels.h"
#include "kernels/storage_convert.h"
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
      dv_pad_(kernels::whole_panels(dv)), lengths_(static_cast<std::size_t>(std::max(config.batch, 1)), 0) {
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
  // Zeroed: a value slot not yet written is multiplied by a weight of 0, which must give 0 (an
  // int8 slot: q = 0 and scale 0).
  const std::size_t bytes = storage_element_bytes(config.dtype);
  k_ = aligned_bytes(blocks * k_block_ * bytes, true);
  v_ = aligned_bytes(blocks * v_block_ * bytes, true);
  if (config.dtype == StorageType::i8) {
    k_scales_.reset(new float[blocks * capacity_]());
    v_scales_.reset(new float[blocks * capacity_]());
  }
}

KvCache::~KvCache() = default;

void KvCache::reset() {
  // Zero again, so that the old sequence's values (maybe Inf or NaN) cannot leak into padding.
  const std::size_t blocks = static_cast<std::size_t>(config_.batch) * kv_heads_;
  const std::size_t bytes = storage_element_bytes(config_.dtype);
  std::fill(k_.get(), k_.get() + blocks * k_block_ * bytes, 0);
  std::fill(v_.get(), v_.get() + blocks * v_block_ * bytes, 0);
  if (k_scales_) {
    std::fill(k_scales_.get(), k_scales_.get() + blocks * capacity_, 0.0f);
    std::fill(v_scales_.get(), v_scales_.get() + blocks * capacity_, 0.0f);
  }
  finite_ = true;  // nothing stored any more: the finite f16 widening applies again
  set_lengths(0);
  forget_call();
}

namespace {

using kv_rows::store_key;
using kv_rows::store_row;
using kv_rows::stored_element;
using kv_rows::stored_row_finite;

// Whether n values stay finite once stored as f16: |x| < 65520, the first magnitude f32_to_f16
// rounds to Inf (a NaN fails the comparison too).
bool stays_finite_f16(const float* row, int n) {
  for (int i = 0; i < n; ++i)
    if (!(std::fabs(row[i]) < 65520.0f)) return false;
  return true;
}

template <class T>
void append_typed(StorageType type, unsigned char* k_block, unsigned char* v_block, float* k_scale,
                  float* v_scale, int slot, int capacity, const float* krow, int dk,
                  const float* vrow, int dv) {
  const auto keys = kernels::key_panels(reinterpret_cast<T*>(k_block), dk);
  const auto values = kernels::value_panels(reinterpret_cast<T*>(v_block), capacity, kernels::whole_panels(dv));
  const float ks = store_row(type, krow, dk, [&](int c, auto e) { keys.at(slot, c) = static_cast<T>(e); });
  const float vs = store_row(type, vrow, dv, [&](int c, auto e) { values.at(c, slot) = static_cast<T>(e); });
  if (k_scale) k_scale[slot] = ks, v_scale[slot] = vs;
}

// One position's K and V rows of one head into `slot`, in storage type kType (elements T), and
// whether the cache stays finite. append() picks one of these per call: inlined there, every
// type's conversion (and its finiteness check) was compiled into it, a quarter of them for each
// other type too (19 KB of the module, compiled at every cold start).
template <StorageType kType, class T>
[[gnu::noinline]] bool append_row(unsigned char* k_block, unsigned char* v_block, float* k_scale, float* v_scale,
                                  int slot, int capacity, const float* krow, int dk, const float* vrow, int dv, bool finite) {
  // f32 and f16 know from the input whether what they store is finite; bf16 (rounding up
  // to Inf) and int8 (scale · 127) are read back as the kernels will read them.
  if (finite && kType == StorageType::f32) finite = storage::all_finite(krow, dk) && storage::all_finite(vrow, dv);
  if (finite && kType == StorageType::f16) finite = stays_finite_f16(krow, dk) && stays_finite_f16(vrow, dv);
  append_typed<T>(kType, k_block, v_block, k_scale, v_scale, slot, capacity, krow, dk, vrow, dv);
  if (finite && (kType == StorageType::bf16 || kType == StorageType::i8)) {
    finite = stored_row_finite(kType, k_block, v_block, k_scale, v_scale, slot, dk, dv, capacity);
  }
  return finite;
}

using AppendRow = bool (*)(unsigned char*, unsigned char*, float*, float*, int, int, const float*, int, const float*, int, bool);

AppendRow append_row_of(StorageType type) {
  switch (type) {
    case StorageType::f16: return append_row<StorageType::f16, std::uint16_t>;
    case StorageType::bf16: return append_row<StorageType::bf16, std::uint16_t>;
    case StorageType::i8: return append_row<StorageType::i8, std::int8_t>;
    case StorageType::q4:  // never a cache type (createCache refuses it)
    case StorageType::f32: break;
  }
  return append_row<StorageType::f32, float>;
}

}  // namespace

void KvCache::append(const float* k, std::ptrdiff_t k_batch, const float* v,
                     std::ptrdiff_t v_batch, int rows, const std::int32_t* cache_rows, int count) {
  const int k_width = kv_heads_ * dk_, v_width = kv_heads_ * dv_;
  const AppendRow append_one = append_row_of(config_.dtype);
  for (int n = 0; n < count; ++n) {
    const int b = cache_rows ? cache_rows[n] : n;
    std::int64_t& length = lengths_[static_cast<std::size_t>(b)];
    for (int i = 0; i < rows; ++i) {
      const int slot = static_cast<int>((length + i) % capacity_);
      const float* krow = k + n * k_batch + static_cast<std::ptrdiff_t>(i) * k_width;
      const float* vrow = v + n * v_batch + static_cast<std::ptrdiff_t>(i) * v_width;
      for (int g = 0; g < kv_heads_; ++g) {
        const auto [kb, vb, ks, vs] = block(b, g);
        finite_ = append_one(kb, vb, ks, vs, slot, capacity_, krow + g * dk_, dk_, vrow + g * dv_, dv_, finite_);
      }
    }
    length += rows;
  }
}

bool KvCache::uniform() const {
  return std::all_of(lengths_.begin(), lengths_.end(), [&](std::int64_t n) { return n == lengths_[0]; });
}

std::int64_t KvCache::length() const { return *std::max_element(lengths_.begin(), lengths_.end()); }

void KvCache::set_lengths(std::int64_t length) { std::fill(lengths_.begin(), lengths_.end(), length); }

void KvCache::read(std::int64_t first, int count, float* k, float* v) const {
  if (!uniform()) {
    throw CacheError("lengths", "cache.read: the rows hold different numbers of positions (one length per row); "
                                "read() copies the same positions of every row: truncate(lengths) them to one length first");
  }
  const std::int64_t length = lengths_[0];
  const std::int64_t oldest = std::max<std::int64_t>(0, length - capacity_);
  if (count < 0 || first < oldest || first + count > length) {
    throw CacheError("cache", "cache.read: positions [" + std::to_string(first) + ", " +
                                  std::to_string(first + count) + ") are not all held; it holds [" +
                                  std::to_string(oldest) + ", " + std::to_string(length) + ")");
  }
  const StorageType type = config_.dtype;
  const std::size_t bytes = storage_element_bytes(type);
  for (int b = 0; b < config_.batch; ++b) {
    for (int g = 0; g < kv_heads_; ++g) {
      const std::size_t block = static_cast<std::size_t>(b) * kv_heads_ + g;
      const unsigned char* kb = k_.get() + block * k_block_ * bytes;
      const unsigned char* vb = v_.get() + block * v_block_ * bytes;
      const float* ks = k_scales_ ? k_scales_.get() + block * capacity_ : nullptr;
      const float* vs = v_scales_ ? v_scales_.get() + block * capacity_ : nullptr;
      float* krows = k + block * static_cast<std::size_t>(count) * dk_;
      float* vrows = v + block * static_cast<std::size_t>(count) * dv_;
      for (int i = 0; i < count; ++i) {
        const int slot = static_cast<int>((first + i) % capacity_);
        for (int c = 0; c < dk_; ++c) {
          krows[static_cast<std::size_t>(i) * dk_ + c] = stored_element(type, kb, kernels::key_index(dk_, slot, c), ks, slot);
        }
        for (int c = 0; c < dv_; ++c) {
          vrows[static_cast<std::size_t>(i) * dv_ + c] = stored_element(type, vb, kernels::value_index(capacity_, dv_pad_, slot, c), vs, slot);
        }
      }
    }
  }
}

KvCache::KvCache(const KvCache& from, bool)
    : owner_(from.owner_), config_(from.config_), kv_heads_(from.kv_heads_), dk_(from.dk_), dv_(from.dv_),
      dv_pad_(from.dv_pad_), capacity_(from.capacity_), rows_per_pass_(from.rows_per_pass_),
      lengths_(from.lengths_), finite_(from.finite_), read_only_(from.read_only_), k_block_(from.k_block_), v_block_(from.v_block_),
      last_first_(from.last_first_), last_rows_(from.last_rows_), last_positions_(from.last_positions_),
      last_keys_(from.last_keys_) {
  // Not zeroed first: every byte is copied, so a fork costs one copy of the storage.
  const std::size_t blocks = static_cast<std::size_t>(config_.batch) * kv_heads_;
  const std::size_t bytes = storage_element_bytes(config_.dtype);
  k_ = aligned_bytes(blocks * k_block_ * bytes);
  v_ = aligned_bytes(blocks * v_block_ * bytes);
  std::memcpy(k_.get(), from.k_.get(), blocks * k_block_ * bytes);
  std::memcpy(v_.get(), from.v_.get(), blocks * v_block_ * bytes);
  if (from.k_scales_) {
    k_scales_.reset(new float[blocks * capacity_]);
    v_scales_.reset(new float[blocks * capacity_]);
    std::memcpy(k_scales_.get(), from.k_scales_.get(), blocks * capacity_ * sizeof(float));
    std::memcpy(v_scales_.get(), from.v_scales_.get(), blocks * capacity_ * sizeof(float));
  }
}

std::unique_ptr<KvCache> KvCache::fork() const {
  return std::unique_ptr<KvCache>(new KvCache(*this, true));
}

std::int64_t KvCache::min_truncated_length(int b) const {
  const std::int64_t length = lengths_[static_cast<std::size_t>(b)];
  const std::int64_t oldest = std::max<std::int64_t>(0, length - capacity_);
  return oldest == 0 ? 0 : oldest + config_.window;
}

std::int64_t KvCache::min_truncated_length() const {
  std::int64_t lowest = 0;
  for (int b = 0; b < config_.batch; ++b) lowest = std::max(lowest, min_truncated_length(b));
  return lowest;
}

void KvCache::truncate(std::int64_t length) {
  const std::vector<std::int64_t> lengths(lengths_.size(), length);
  truncate_rows(lengths.data(), "length");
}

void KvCache::truncate_rows(const std::int64_t* lengths, const char* argument) {
  if (read_only_) {
    throw CacheError("cache", "cache.truncate: an encoded cache (encode()) holds an encoder's keys and values "
                              "and is read-only");
  }
  const bool per_row = std::string(argument) == "lengths" || !uniform();  // else every row is refused alike
  for (int b = 0; b < config_.batch; ++b) {  // every row checked before any changes
    const std::int64_t length = lengths[b], lowest = min_truncated_length(b), held_length = row_length(b);
    if (length >= lowest && length <= held_length) continue;
    const std::string held = "[" + std::to_string(lowest) + ", " + std::to_string(held_length) + "]";
    const std::string row = per_row ? " for row " + std::to_string(b) : "";
    throw CacheError(argument, length > held_length || lowest == 0
        ? "cache.truncate: expected a length in " + held + row + ", got " + std::to_string(length)
        : "cache.truncate: positions below " + std::to_string(lowest - config_.window) + " of row " + std::to_string(b) +
          " have left the ring of the window (" + std::to_string(config_.window) + "), and a later query would need "
          "them; expected a length in " + held + row + ", got " + std::to_string(length));
  }
  // The dropped positions the ring still holds read back as zeros, as never-written slots do (a
  // kernel's padding multiplies them by a weight of 0, so an old Inf or NaN there would leak).
  for (int b = 0; b < config_.batch; ++b) {
    std::int64_t& held = lengths_[static_cast<std::size_t>(b)];
    clear_positions(std::max(lengths[b], held - capacity_), held, b);
    held = lengths[b];
  }
  forget_call();
  // A dropped Inf or NaN no longer disables the finite-only paths: the flag is what a cache that
  // never held it has (checked only when it is off: a scan of the held rows).
  if (!finite_) finite_ = held_rows_finite();
}

void KvCache::clear_positions(std::int64_t first, std::int64_t last, int b) {
  if (first >= last) return;
  // Their slots: one run from first's on, and a second from slot 0 where they wrap.
  const int from = static_cast<int>(first % capacity_);
  const int count = static_cast<int>(last - first);
  const int tail = std::min(count, capacity_ - from);
  clear_slots(from, from + tail, b);
  clear_slots(0, count - tail, b);
}

void KvCache::clear_slots(int first, int last, int b) {
  const std::size_t bytes = storage_element_bytes(config_.dtype);
  const std::size_t begin = b < 0 ? 0 : static_cast<std::size_t>(b) * kv_heads_;
  const std::size_t blocks = b < 0 ? static_cast<std::size_t>(config_.batch) * kv_heads_ : begin + kv_heads_;
  const int whole_first = kernels::whole_panels(first), whole_last = last / kernels::kPanelWidth * kernels::kPanelWidth;
  for (std::size_t block = begin; block < blocks; ++block) {
    unsigned char* kb = k_.get() + block * k_block_ * bytes;
    unsigned char* vb = v_.get() + block * v_block_ * bytes;
    // Keys: the whole 8-slot panels in one run, the slots of partial panels a feature at a time.
    if (whole_first < whole_last) {
      std::memset(kb + kernels::key_index(dk_, whole_first, 0) * bytes, 0, static_cast<std::size_t>(whole_last - whole_first) * dk_ * bytes);
    }
    for (int slot = first; slot < last; ++slot) {
      if (slot >= whole_first && slot < whole_last) continue;
      for (int c = 0; c < dk_; ++c) std::memset(kb + kernels::key_index(dk_, slot, c) * bytes, 0, bytes);
    }
    // Values: within a tile, a column panel's consecutive slots are one run.
    for (int slot = first; slot < last;) {
      const int end = std::min(last, (slot / kernels::kValueTile + 1) * kernels::kValueTile);
      for (int c = 0; c < dv_pad_; c += kernels::kPanelWidth) {
        std::memset(vb + kernels::value_index(capacity_, dv_pad_, slot, c) * bytes, 0,
                    static_cast<std::size_t>(end - slot) * kernels::kPanelWidth * bytes);
      }
      slot = end;
    }
    if (k_scales_) {
      std::fill(k_scales_.get() + block * capacity_ + first, k_scales_.get() + block * capacity_ + last, 0.0f);
      std::fill(v_scales_.get() + block * capacity_ + first, v_scales_.get() + block * capacity_ + last, 0.0f);
    }
  }
}

bool KvCache::held_rows_finite() const {
  const StorageType type = config_.dtype;
  const std::size_t bytes = storage_element_bytes(type);
  const std::size_t blocks = static_cast<std::size_t>(config_.batch) * kv_heads_;
  for (std::size_t block = 0; block < blocks; ++block) {
    const unsigned char* kb = k_.get() + block * k_block_ * bytes;
    const unsigned char* vb = v_.get() + block * v_block_ * bytes;
    const float* ks = k_scales_ ? k_scales_.get() + block * capacity_ : nullptr;
    const float* vs = v_scales_ ? v_scales_.get() + block * capacity_ : nullptr;
    const std::int64_t length = lengths_[block / static_cast<std::size_t>(kv_heads_)];
    for (std::int64_t p = std::max<std::int64_t>(0, length - capacity_); p < length; ++p) {
      if (!stored_row_finite(type, kb, vb, ks, vs, static_cast<int>(p % capacity_), dk_, dv_, capacity_)) return false;
    }
  }
  return true;
}

KvCache::Block KvCache::block(int b, int g) const {
  const std::size_t n = static_cast<std::size_t>(b) * kv_heads_ + g;
  const std::size_t bytes = storage_element_bytes(config_.dtype);
  return {k_.get() + n * k_block_ * bytes, v_.get() + n * v_block_ * bytes,
          k_scales_ ? k_scales_.get() + n * capacity_ : nullptr, v_scales_ ? v_scales_.get() + n * capacity_ : nullptr};
}

PackedKv KvCache::packed() const {
  return {k_.get(), v_.get(), static_cast<std::ptrdiff_t>(k_block_),
          static_cast<std::ptrdiff_t>(v_block_), capacity_, config_.dtype, k_scales_.get(),
          v_scales_.get(), finite_};
}

}  // namespace webattention
