// Attention over a narrow KV cache read in pairs (pair_panels_simd128.h), WebAssembly SIMD128: a
// decode step's loops with the fewest operations per stored element. The one-row loops (multi-head
// attention: one query row per K/V head) and the 4-row register block's (grouped-query attention:
// the group's query heads are the block's rows, so each widened K/V row serves all of them).
//
// Each reader's values are the stored ones times a power of two, which the loops undo once, on the
// other operand or on the result, never per element:
//   f16 (a cache with no Inf or NaN)  value · 2^-112: q, or the weights p, times 2^112 (exact:
//        the products are the same reals, so they round the same; where a finite q would
//        overflow, operand() says so and the caller takes the f32x4 readers instead)
//   bf16                              value itself
//   int8                              q · 2^16: a key's scale (one per key, all of its dk rows)
//        multiplies its score once; a value's (one per slot) multiplies that slot's weight p
#pragma once

#include <wasm_simd128.h>

#include <cmath>
#include <cstdint>

#include "kernels/flash/touch_ahead.h"
#include "kernels/simd128/f32_block_simd128.h"
#include "kernels/kv_layout.h"
#include "kernels/simd128/pair_panels_simd128.h"
#include "kernels/simd128/panels_simd128.h"

namespace webattention::kernels::simd128_narrow {

// Operands the loops scale into a buffer on the stack: up to 4 query rows of dk <= 256 (a longer
// head takes the f32x4 readers), or 4 rows of a key tile's weights.
constexpr int kMaxOperand = 4 * 256;
static_assert(kMaxOperand >= 4 * flash::kKeyTile, "the weights of a 4-row block must fit");

template <StorageType T>
using PairPanelOf = std::conditional_t<T == StorageType::f16, F16PairPanel,
                                       std::conditional_t<T == StorageType::bf16, BF16PairPanel, I8PairPanel>>;
template <StorageType T>
using Element = std::conditional_t<T == StorageType::i8, std::int8_t, std::uint16_t>;

// The K panel of keys [slot, slot + 8) (slot a multiple of 8), as a reader of its dk rows.
template <StorageType T>
inline PairPanelOf<T> key_pairs(const flash::NarrowKv& c, int dk, int slot) {
  return PairPanelOf<T>(static_cast<const Element<T>*>(c.k) + flash::key_index(dk, slot, 0));
}
// Value columns [column, column + 8) from slot `slot` on, as a reader of one row per slot.
template <StorageType T>
inline PairPanelOf<T> value_pairs(const flash::NarrowKv& c, int column, int slot) {
  return PairPanelOf<T>(static_cast<const Element<T>*>(c.v) + c.value_index(slot, column));
}

// q rows (n floats) as the key readers need them: f16 times 2^112 into buf, or false where a
// finite q would overflow; bf16 and int8 as they are.
template <StorageType T>
inline bool key_operand(const float* q, int n, float* buf, const float*& out) {
  out = q;
  if constexpr (T == StorageType::f16) {
    if (n > kMaxOperand) return false;
    for (int k = 0; k < n; ++k) {
      buf[k] = q[k] * 0x1p112f;
      if (std::isinf(buf[k]) && std::isfinite(q[k])) return false;
    }
    out = buf;
  }
  return true;
}

// Weights p[r·stride + j] (rows < rows, j < n; p in [0, 1] or NaN) as the value readers need them,
// into buf at the same indices: f16 times 2^112, int8 times slot j's scale · 2^-16; bf16 as is.
template <StorageType T>
inline const float* value_operand(const float* p, int rows, int stride, int n, const flash::NarrowKv& c,
                                  int slot, float* buf) {
  if constexpr (T == StorageType::bf16) return p;
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < n; ++j) {
      if constexpr (T == StorageType::f16) {
        buf[r * stride + j] = p[r * stride + j] * 0x1p112f;
      } else {
        buf[r * stride + j] = p[r * stride + j] * c.v_scales[slot + j] * 0x1p-16f;
      }
    }
  }
  return buf;
}

// Even and odd columns of 8 scores (or any 8 results) to memory in column order; int8 keys times
// their scales (· 2^-16) first.
template <StorageType T>
inline void store_scores(v128_t even, v128_t odd, const flash::NarrowKv& c, int slot, float* s) {
  if constexpr (T == StorageType::i8) {
    v128_t se, so;
    to_pairs(wasm_v128_load(c.k_scales + slot), wasm_v128_load(c.k_scales + slot + 4), se, so);
    even = wasm_f32x4_mul(even, wasm_f32x4_mul(se, wasm_f32x4_splat(0x1p-16f)));
    odd = wasm_f32x4_mul(odd, wasm_f32x4_mul(so, wasm_f32x4_splat(0x1p-16f)));
  }
  v128_t lo, hi;
  from_pairs(even, odd, lo, hi);
  wasm_v128_store(s, lo);
  wasm_v128_store(s + 4, hi);
}

// One row, kCount key panels at once (narrow_rows_simd128.h's row_scores, far_panels.h): for
// each i < kCount, s[i·stride + (0 .. 8)) = q · the keys [slot + i·stride, + 8) (q from
// key_operand; slot and stride multiples of 8). Each panel's sums in the order of one panel alone.
template <StorageType T, int kCount>
void score_pairs(const float* q, int dk, const flash::NarrowKv& c, int slot, int stride, float* s) {
  PairPanelOf<T> panels[kCount];
  v128_t acc[2 * kCount];
  for (int i = 0; i < kCount; ++i) panels[i] = key_pairs<T>(c, dk, slot + i * stride);
  for (auto& a : acc) a = wasm_f32x4_splat(0.0f);
  row_times_pair_rows<kCount>(q, 0, dk, panels, acc);
  for (int i = 0; i < kCount; ++i) store_scores<T>(acc[2 * i], acc[2 * i + 1], c, slot + i * stride, s + i * stride);
}

// One row, kCount value panels at once: for each i < kCount, with columns [column + i·stride,
// + 8): out[those columns] += Σ_j p[j] · their values of slot + j (p from value_operand).
template <StorageType T, int kCount>
void pv_pairs(const float* p, int n, const flash::NarrowKv& c, int column, int stride, int slot, float* out) {
  PairPanelOf<T> panels[kCount];
  v128_t acc[2 * kCount];
  for (int i = 0; i < kCount; ++i) {
    const float* o = out + column + i * stride;
    panels[i] = value_pairs<T>(c, column + i * stride, slot);
    to_pairs(wasm_v128_load(o), wasm_v128_load(o + 4), acc[2 * i], acc[2 * i + 1]);
  }
  row_times_pair_rows<kCount>(p, 0, n, panels, acc);
  for (int i = 0; i < kCount; ++i) {
    v128_t lo, hi;
    from_pairs(acc[2 * i], acc[2 * i + 1], lo, hi);
    wasm_v128_store(out + column + i * stride, lo);
    wasm_v128_store(out + column + i * stride + 4, hi);
  }
}

// 4 rows (q rows dk apart, from key_operand): scores[r][0 .. n) = q_r · keys [slot, slot + n).
template <StorageType T>
void tile_score_pairs(const float* q, int dk, const flash::NarrowKv& c, int slot, int n, float* scores) {
  flash::TouchAhead values = flash::value_tile_ahead(c, slot, n / kPanelWidth);  // touch_ahead.h
  for (int jb = 0; jb < n; jb += kPanelWidth) {
    values.piece(jb / kPanelWidth);
    Block4x8 acc = Block4x8::zero();
    block_times_pair_rows(q, q + dk, q + 2 * dk, q + 3 * dk, dk, key_pairs<T>(c, dk, slot + jb), acc);
    for (int r = 0; r < 4; ++r) store_scores<T>(acc.lo[r], acc.hi[r], c, slot + jb, scores + r * flash::kKeyTile + jb);
  }
}

// 4 rows (weights kKeyTile apart, from value_operand): acc[r][0 .. dv_pad) += Σ_j p[r][j] · V[slot + j].
template <StorageType T>
void tile_pv_pairs(const float* p, int n, const flash::NarrowKv& c, int dv_pad, int slot, float* acc) {
  constexpr int kTile = flash::kKeyTile;
  flash::TouchAhead next_keys = flash::next_key_tile_ahead(c, slot, n, dv_pad / kPanelWidth);  // touch_ahead.h
  for (int cb = 0; cb < dv_pad; cb += kPanelWidth) {
    next_keys.piece(cb / kPanelWidth);
    Block4x8 block;
    for (int r = 0; r < 4; ++r) {
      const float* a = acc + r * dv_pad + cb;
      to_pairs(wasm_v128_load(a), wasm_v128_load(a + 4), block.lo[r], block.hi[r]);
    }
    block_times_pair_rows(p, p + kTile, p + 2 * kTile, p + 3 * kTile, n, value_pairs<T>(c, cb, slot), block);
    for (int r = 0; r < 4; ++r) {
      v128_t lo, hi;
      from_pairs(block.lo[r], block.hi[r], lo, hi);
      wasm_v128_store(acc + r * dv_pad + cb, lo);
      wasm_v128_store(acc + r * dv_pad + cb + 4, hi);
    }
  }
}

}  // namespace webattention::kernels::simd128_narrow
