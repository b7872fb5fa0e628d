// cache.keep() (docs/attention-math/decoding.md §9): the last forward's kept positions moved down to
// consecutive ones, a key rotated at another position than its new one turned to it.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/attention_problem.h"
#include "kv_rows.h"
#include "webattention/kv_cache.h"

namespace webattention {

using kv_rows::store_key;
using kv_rows::stored_element;
using kv_rows::stored_row_finite;

void KvCache::record_call(std::int64_t first, int rows, const std::int32_t* positions) {
  last_first_ = first;
  last_call_per_row_ = false;
  last_rows_ = rows;
  const std::size_t n = static_cast<std::size_t>(config_.batch) * rows;
  if (positions) last_positions_.assign(positions, positions + n); else last_positions_.clear();
}

void KvCache::keep(const std::int32_t* indices, int count, const KeyRotation* rotate) {
  // Kept position t moves down from last_first_ + indices[t] to last_first_ + t: a slot no later
  // source uses (the whole last call is in the ring, fewer than capacity positions apart).
  for (int b = 0; b < config_.batch; ++b) {
    for (int t = 0; t < count; ++t) move_position(b, indices[t], last_first_ + t, rotate);
  }
  const std::int64_t length = last_first_ + count;
  const std::int64_t held = lengths_[0];  // every row's: keep() takes a call on rows of one length
  clear_positions(std::max(length, held - capacity_), held);
  set_lengths(length);  // keep() takes a call on every row of a cache whose rows were equal
  forget_call();
  if (!finite_) finite_ = held_rows_finite();
}

void KvCache::move_position(int b, int index, std::int64_t to, const KeyRotation* rotate) {
  const std::int64_t from = last_first_ + index, rotated_at = last_position(b, index);
  const bool rotates = rotate && rotated_at != to;
  if (from == to && !rotates) return;
  const std::size_t bytes = storage_element_bytes(config_.dtype);
  const int src = static_cast<int>(from % capacity_), dst = static_cast<int>(to % capacity_);
  for (int g = 0; g < kv_heads_; ++g) {
    const auto [kb, vb, ks, vs] = block(b, g);
    // Values, and keys already rotated at their new position, move as stored: bit for bit.
    for (int c = 0; c < dv_; ++c) {
      std::memcpy(vb + kernels::value_index(capacity_, dv_pad_, dst, c) * bytes, vb + kernels::value_index(capacity_, dv_pad_, src, c) * bytes, bytes);
    }
    if (vs) vs[dst] = vs[src];
    if (rotates) continue;
    for (int c = 0; c < dk_; ++c) std::memcpy(kb + kernels::key_index(dk_, dst, c) * bytes, kb + kernels::key_index(dk_, src, c) * bytes, bytes);
    if (ks) ks[dst] = ks[src];
  }
  if (!rotates) return;
  // A key rotated at another position (docs/attention-math/decoding.md §9): from the call's projected row,
  // k-normed and rotated at `to` as a fresh run does (the same bits); a call whose rows were not
  // kept (record_call()) rotates the stored key on by the difference instead.
  std::vector<float> row(static_cast<std::size_t>(kv_heads_) * dk_);
  if (!last_keys_.empty()) {
    const float* projected = last_keys_.data() + (static_cast<std::size_t>(b) * last_rows_ + index) * row.size();
    std::copy(projected, projected + row.size(), row.begin());
    rotate->from_projection(row.data(), to);
  } else {
    for (int g = 0; g < kv_heads_; ++g) {
      const Block at = block(b, g);
      const unsigned char* kb = at.k;
      const float* ks = at.k_scales;
      float* key = row.data() + static_cast<std::size_t>(g) * dk_;
      for (int c = 0; c < dk_; ++c) key[c] = stored_element(config_.dtype, kb, kernels::key_index(dk_, src, c), ks, src);
      rotate->from_stored(key, rotated_at, to);
    }
  }
  store_key_row(b, dst, row.data());
}

void KvCache::store_key_row(int b, int slot, const float* row) {
  const StorageType type = config_.dtype;
  const std::size_t bytes = storage_element_bytes(type);
  for (int g = 0; g < kv_heads_; ++g) {
    const auto [kb, vb, ks, vs] = block(b, g);
    const float* key = row + static_cast<std::size_t>(g) * dk_;
    const float scale = bytes == 4   ? store_key<float>(type, kb, slot, key, dk_)
                        : bytes == 2 ? store_key<std::uint16_t>(type, kb, slot, key, dk_)
                                     : store_key<std::int8_t>(type, kb, slot, key, dk_);
    if (ks) ks[slot] = scale;
    if (finite_) finite_ = stored_row_finite(type, kb, vb, ks, vs, slot, dk_, dv_, capacity_);
  }
}

}  // namespace webattention
