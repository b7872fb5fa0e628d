// One position's row of a KV cache's storage, converted to and from the cache's type: what
// kv_cache.cpp (append, read, checks) and kv_keep.cpp (keep()) share. Private to the core.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"
#include "kernels/storage_convert.h"
#include "webattention/storage_type.h"

namespace webattention::kv_rows {

// One row (a position's keys or values of one K/V head, n values) into `slot` of a block,
// in the cache's storage type; `put(i, element)` writes element i where the layout keeps it.
// int8 returns the row's scale (storage_convert.h: NaN for a row with a non-finite value).
template <class Put>
float store_row(StorageType type, const float* row, int n, Put&& put) {
  switch (type) {
    case StorageType::f16:
    case StorageType::bf16:
      for (int i = 0; i < n; ++i) put(i, storage::narrow16(row[i], type));
      return 0.0f;
    case StorageType::i8:
      return storage::quantise_q8(row, n, put);
    case StorageType::q4:  // never a cache type (createCache refuses it)
    case StorageType::f32: break;
  }
  for (int i = 0; i < n; ++i) put(i, row[i]);
  return 0.0f;
}

// One key row (dk values) into `slot` of a K block; int8 returns its scale.
template <class T>
float store_key(StorageType type, unsigned char* k_block, int slot, const float* row, int dk) {
  const auto keys = kernels::key_panels(reinterpret_cast<T*>(k_block), dk);
  return store_row(type, row, dk, [&](int c, auto e) { keys.at(slot, c) = static_cast<T>(e); });
}

// Element i of a K or V block as stored, back to f32 as the attention kernels read it: widened
// (f16, bf16) or dequantised with its row's scale (int8).
inline float stored_element(StorageType type, const unsigned char* block, std::size_t i, const float* scales, int slot) {
  if (type == StorageType::i8) return storage::dequantise(reinterpret_cast<const std::int8_t*>(block)[i], scales[slot]);
  return storage::widen(block, type, i);
}

// Whether the K row (dk values) and V row (dv values) stored in `slot` of these blocks read back
// finite, as the attention kernels read them.
inline bool stored_row_finite(StorageType type, const unsigned char* k_block, const unsigned char* v_block,
                       const float* k_scales, const float* v_scales, int slot, int dk, int dv, int capacity) {
  for (int c = 0; c < dk; ++c)
    if (!std::isfinite(stored_element(type, k_block, kernels::key_index(dk, slot, c), k_scales, slot))) return false;
  for (int c = 0; c < dv; ++c)
    if (!std::isfinite(stored_element(type, v_block, kernels::value_index(capacity, kernels::whole_panels(dv), slot, c), v_scales, slot))) return false;
  return true;
}

}  // namespace webattention::kv_rows
