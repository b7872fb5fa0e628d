// Attention over a narrow KV cache (f16, bf16, int8), WebAssembly SIMD128: the SIMD kernel's
// Isa::narrow_row_scores / narrow_row_pv (one query row) and narrow_tile_scores / narrow_tile_pv
// (the 4-row block: a GQA decode step's query heads), as kv_widen.h calls them. They read the
// cache in pairs (narrow_pairs_simd128.h). An f16 cache that holds an Inf or NaN, or a query too
// large to scale by 2^112, takes the f32x4 readers instead (panels_simd128.h's HalfPanel for one
// row, kv_widen.h's 4-row loops), which widen every element to its f32 value.
#pragma once

#include <wasm_simd128.h>

#include "kernels/far_panels.h"
#include "kernels/flash/kv_widen.h"
#include "kernels/flash/touch_ahead.h"
#include "kernels/simd128/narrow_pairs_simd128.h"
#include "kernels/simd128/panels_simd128.h"

namespace webattention::kernels::simd128_narrow {

// The f16 fallback's one-row loops: kFinite, the cache holds no Inf or NaN (NarrowKv::finite).
template <bool kFinite>
using F16Of = HalfPanel<kFinite ? load_f16x8_finite : load_f16x8>;

template <bool kFinite>
void f16_score_panel(const float* q, int dk, const flash::NarrowKv& c, int slot, float* s) {
  const F16Of<kFinite> panel(static_cast<const std::uint16_t*>(c.k) + flash::key_index(dk, slot, 0));
  v128_t acc[2] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f)};
  row_times_panel_rows<1>(q, 0, dk, &panel, acc);
  wasm_v128_store(s, acc[0]);
  wasm_v128_store(s + 4, acc[1]);
}

template <bool kFinite>
void f16_pv_panel(const float* p, int n, const flash::NarrowKv& c, int column, int slot, float* out) {
  const F16Of<kFinite> panel(static_cast<const std::uint16_t*>(c.v) + c.value_index(slot, column));
  v128_t acc[2] = {wasm_v128_load(out), wasm_v128_load(out + 4)};
  row_times_panel_rows<1>(p, 0, n, &panel, acc);
  wasm_v128_store(out, acc[0]);
  wasm_v128_store(out + 4, acc[1]);
}

// Calls body(offset) for each panel of 8 over [0, n), one at a time: the f16 fallback's loops (a
// cache with an Inf or NaN, or a query too large to scale), which are rare and keep it simple. The
// pair readers' loops below read kFarCachePanels far panels at once (far_panels.h).
template <class Body>
inline void by_panels(int n, Body&& body) {
  for (int at = 0; at < n; at += kPanelWidth) body(at);
}

template <StorageType T>
void row_scores(const float* q, int dk, const flash::NarrowKv& c, int slot, int n, float* s) {
  alignas(16) float buf[kMaxOperand];
  const float* qx;
  if ((T != StorageType::f16 || c.finite) && key_operand<T>(q, dk, buf, qx)) {
    flash::TouchAhead values = flash::value_tile_ahead(c, slot, n / kPanelWidth);  // touch_ahead.h
    far_panel_counts<kFarCachePanels>(0, (n + kPanelWidth - 1) / kPanelWidth, [&](auto count, int p0, int stride) {
      for (int i = 0; i < count; ++i) values.piece(p0 + i * stride);
      const int j0 = p0 * kPanelWidth;
      score_pairs<T, decltype(count)::value>(qx, dk, c, slot + j0, stride * kPanelWidth, s + j0);
    });
  } else if constexpr (T == StorageType::f16) {  // key_operand fails for f16 only
    if (c.finite) {
      by_panels(n, [&](int jb) { f16_score_panel<true>(q, dk, c, slot + jb, s + jb); });
    } else {
      by_panels(n, [&](int jb) { f16_score_panel<false>(q, dk, c, slot + jb, s + jb); });
    }
  }
}

template <StorageType T>
void row_pv(const float* p, int n, const flash::NarrowKv& c, int dv_pad, int slot, float* acc) {
  if (T != StorageType::f16 || c.finite) {
    alignas(16) float buf[flash::kKeyTile];
    const float* px = value_operand<T>(p, 1, 0, n, c, slot, buf);
    flash::TouchAhead next_keys = flash::next_key_tile_ahead(c, slot, n, dv_pad / kPanelWidth);  // touch_ahead.h
    far_panel_counts<kFarCachePanels>(0, dv_pad / kPanelWidth, [&](auto count, int p0, int stride) {
      for (int i = 0; i < count; ++i) next_keys.piece(p0 + i * stride);
      pv_pairs<T, decltype(count)::value>(px, n, c, p0 * kPanelWidth, stride * kPanelWidth, slot, acc);
    });
  } else if constexpr (T == StorageType::f16) {
    by_panels(dv_pad, [&](int cb) { f16_pv_panel<false>(p, n, c, cb, slot, acc + cb); });
  }
}

// The 4-row block's (q rows dk apart; scores and weights rows kKeyTile apart).
template <class Isa, StorageType T>
void tile_scores(const float* q, int dk, const flash::NarrowKv& c, int slot, int n, float* s) {
  alignas(16) float buf[kMaxOperand];
  const float* qx;
  if ((T != StorageType::f16 || c.finite) && key_operand<T>(q, 4 * dk, buf, qx)) {
    tile_score_pairs<T>(qx, dk, c, slot, n, s);
  } else if constexpr (T == StorageType::f16) {  // key_operand fails for f16 only
    flash::narrow_tile_scores<Isa, T>(q, dk, c, slot, n, s);
  }
}

template <class Isa, StorageType T>
void tile_pv(const float* p, int n, const flash::NarrowKv& c, int dv_pad, int slot, float* acc) {
  if (T != StorageType::f16 || c.finite) {
    alignas(16) float buf[4 * flash::kKeyTile];
    tile_pv_pairs<T>(value_operand<T>(p, 4, flash::kKeyTile, n, c, slot, buf), n, c, dv_pad, slot, acc);
  } else if constexpr (T == StorageType::f16) {  // an f16 cache with an Inf or NaN only
    flash::narrow_accumulate_pv<Isa, T>(p, n, c, dv_pad, slot, acc);
  }
}

}  // namespace webattention::kernels::simd128_narrow
