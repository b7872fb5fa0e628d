// Attention over a narrow KV cache (f16, int8; docs/attention-math/storage.md §11), the ISA-independent
// part: the stored elements are widened to f32 as they are loaded, inside the loops, never into
// a copy. The 4-row register block's loops are written here once for every ISA (each panel row
// of 8 elements widened into the block's operand), for the scalar kernel and as the SIMD kernel's
// fallback; the one-row loops of a decode step, and the SIMD kernel's 4-row ones, are each ISA's
// own (Isa::narrow_row_scores, Isa::narrow_row_pv, Isa::narrow_tile_*: narrow_rows_simd128.h, and
// the scalar kernel's). Values come out exactly as storage_convert.h defines them (f16 and bf16
// widened); int8 keys have one scale per key, values one per slot, applied once per dot product
// (key_scaled, value_weight below).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/flash/flash_layout.h"
#include "kernels/large_rows.h"
#include "kernels/storage_convert.h"
#ifdef __wasm_simd128__
#include "kernels/simd128/widen_simd128.h"
#endif

namespace webattention::kernels::flash {

using kernels::key_index;  // kv_layout.h: the panel layout's element indices

// Value column c of `slot`, as f32, from the unit's K/V panels whatever their storage type (the
// rare per-element reads: flash_hidden_keys.h's poisoned keys).
inline float value_at(const KvPanels& kv, int c, int slot) {
  const NarrowKv& n = kv.narrow;
  if (n.type == StorageType::f32) return kv.v.at(c, slot);
  const std::size_t i = n.value_index(slot, c);
  if (n.type == StorageType::i8) return storage::dequantise(static_cast<const std::int8_t*>(n.v)[i], n.v_scales[slot]);
  return storage::widen(n.v, n.type, i);
}

// Elements [i, i + 8) of src (type T) into dst[0 .. 8); an int8 lane l times scales[l].
template <StorageType T>
inline void widen8(const void* src, std::size_t i, const float* scales, float* dst) {
#ifdef __wasm_simd128__
  v128_t lo, hi;
  if constexpr (T == StorageType::i8) {
    load_i8x8(static_cast<const std::int8_t*>(src) + i, wasm_v128_load(scales), wasm_v128_load(scales + 4), lo, hi);
  } else if constexpr (T == StorageType::f16) {
    load_f16x8(static_cast<const std::uint16_t*>(src) + i, lo, hi);
  } else {
    load_bf16x8(static_cast<const std::uint16_t*>(src) + i, lo, hi);
  }
  wasm_v128_store(dst, lo);
  wasm_v128_store(dst + 4, hi);
#else
  for (int l = 0; l < kPanelWidth; ++l) {
    if constexpr (T == StorageType::i8) {
      dst[l] = storage::dequantise(static_cast<const std::int8_t*>(src)[i + l], scales[l]);
    } else {
      dst[l] = storage::widen(src, T, i + l);
    }
  }
#endif
}

// Element i of src (type T) as f32; `scale` is an int8 element's.
template <StorageType T>
inline float widen1(const void* src, std::size_t i, float scale) {
  if constexpr (T == StorageType::i8) return storage::dequantise(static_cast<const std::int8_t*>(src)[i], scale);
  return storage::widen(src, T, i);
}

// An int8 cache's scales are applied once per dot product, in every module (§11): a key's to its
// score (key_scaled: the sum of q · its stored q8 values, times its scale), a slot's to its
// weight p (value_weight: p · scale times the stored q8 values). Other types: unchanged.
template <StorageType T>
inline float key_scaled(float score, const NarrowKv& c, int slot) {
  return T == StorageType::i8 ? score * c.k_scales[slot] : score;
}
template <StorageType T>
inline float value_weight(float p, const NarrowKv& c, int slot) {
  return T == StorageType::i8 ? p * c.v_scales[slot] : p;
}

// scores[r][0 .. n) = q rows (r0..r0+4) · keys [slot, slot + n) of a narrow block (n a multiple
// of 8), as tile_scores.
template <class Isa, StorageType T>
void narrow_tile_scores(const float* q, int dk, const NarrowKv& c, int slot, int n, float* scores) {
  const float* q0 = q;
  const float* q1 = q + dk;
  const float* q2 = q + 2 * dk;
  const float* q3 = q + 3 * dk;
  alignas(16) static constexpr float kOnes[kPanelWidth] = {1, 1, 1, 1, 1, 1, 1, 1};
  for (int jb = 0; jb < n; jb += kPanelWidth) {
    auto acc = Isa::Block::zero();
    const std::size_t first = key_index(dk, slot + jb, 0);
    for (int f = 0; f < dk; ++f) {
      alignas(16) float w[kPanelWidth];
      widen8<T>(c.k, first + static_cast<std::size_t>(f) * kPanelWidth, kOnes, w);
      acc.madd(q0[f], q1[f], q2[f], q3[f], w);
    }
    for (int r = 0; r < kRows; ++r) {
      float* s = scores + r * kKeyTile + jb;
      acc.store_row(r, s);
      for (int l = 0; l < kPanelWidth; ++l) s[l] = key_scaled<T>(s[l], c, slot + jb + l);
    }
  }
}

// acc[r][0 .. dv_pad) += Σ_j p[r][j] · V[slot + j][:] over a narrow block, as accumulate_pv.
template <class Isa, StorageType T>
void narrow_accumulate_pv(const float* p, int n, const NarrowKv& c, int dv_pad, int slot, float* acc) {
  alignas(16) static constexpr float kOnes[kPanelWidth] = {1, 1, 1, 1, 1, 1, 1, 1};
  float pw[kRows][kKeyTile];  // the weights times their slots' int8 scales (value_weight)
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < n; ++j) pw[r][j] = value_weight<T>(p[r * kKeyTile + j], c, slot + j);
  for (int cb = 0; cb < dv_pad; cb += kPanelWidth) {
    typename Isa::Block block;
    for (int r = 0; r < kRows; ++r) block.load_row(r, acc + r * dv_pad + cb);
    for (int j = 0; j < n; ++j) {
      alignas(16) float w[kPanelWidth];
      widen8<T>(c.v, c.value_index(slot + j, cb), kOnes, w);
      block.madd(pw[0][j], pw[1][j], pw[2][j], pw[3][j], w);
    }
    for (int r = 0; r < kRows; ++r) block.store_row(r, acc + r * dv_pad + cb);
  }
}

// Calls body.template operator()<T>() with the cache's type as a constant.
template <class Body>
void with_narrow_type(StorageType type, Body&& body) {
  switch (type) {
    case StorageType::f16: body(std::integral_constant<StorageType, StorageType::f16>{}); break;
    case StorageType::bf16: body(std::integral_constant<StorageType, StorageType::bf16>{}); break;
    case StorageType::i8: body(std::integral_constant<StorageType, StorageType::i8>{}); break;
    case StorageType::q4:  // never a cache type
    case StorageType::f32: break;
  }
}

// An int8 cache's scores for query rows of which at least one is large (large_rows.h): every
// ISA sums q times the keys' codes (q, or q · 2^16 read in pairs) and applies each key's scale
// after the sum, so a query past kLargeInput overflowed where the float32 cache's q · k stays
// finite. The large rows are scaled by kLargeDown and their scores (row r at s + r · kKeyTile)
// times kLargeUp; scores(q) computes them. Out of line: rare, and the tile loop stays small.
template <class Scores>
__attribute__((noinline)) void large_query_scores(int rows, const float* q, int dk, int n, float* s, Scores&& scores) {
  static thread_local std::vector<float> scaled;
  scaled.assign(q, q + static_cast<std::size_t>(rows) * dk);
  bool large[kRows];
  for (int r = 0; r < rows; ++r) {
    large[r] = row_is_large(q + r * dk, dk);
    if (large[r]) scale_down_row(q + r * dk, dk, scaled.data() + r * dk);
  }
  scores(scaled.data());
  for (int r = 0; r < rows; ++r) {
    if (!large[r]) continue;
    for (int j = 0; j < n; ++j) s[r * kKeyTile + j] *= kLargeUp;
  }
}

// Scores of keys [slot, slot + n) from a narrow cache, for a block of one row or 4.
template <class Isa>
void narrow_key_scores(bool one_row, const float* q, int dk, const NarrowKv& c, int slot, int n, float* s) {
  with_narrow_type(c.type, [&](auto type) {
    const auto scores = [&](const float* qx) {
      if (one_row) Isa::template narrow_row_scores<type.value>(qx, dk, c, slot, n, s);
      else Isa::template narrow_tile_scores<type.value>(qx, dk, c, slot, n, s);
    };
    // One pass over the block's dk or 4·dk query values, against its n·dk or 4·n·dk products.
    const int rows = one_row ? 1 : kRows;
    if (type.value == StorageType::i8 && row_is_large(q, rows * dk)) return large_query_scores(rows, q, dk, n, s, scores);
    scores(q);
  });
}

// acc += the block's weights of slots [slot, slot + n) · their values from a narrow cache.
template <class Isa>
void narrow_weighted_values(bool one_row, const float* p, int n, const NarrowKv& c, int dv_pad, int slot, float* acc) {
  with_narrow_type(c.type, [&](auto type) {
    if (one_row) Isa::template narrow_row_pv<type.value>(p, n, c, dv_pad, slot, acc);
    else Isa::template narrow_tile_pv<type.value>(p, n, c, dv_pad, slot, acc);
  });
}

}  // namespace webattention::kernels::flash
