// The one-row loops of attention over a narrow KV cache (f16, bf16, int8), WebAssembly SIMD128:
// one query row's scores against key panels and its weighted sum of value panels, a few panels at
// a time (row_times_panel_rows, each reader's kRowPanels), each panel row widened as it is loaded (panels_simd128.h's
// readers). The SIMD kernel's Isa::narrow_row_scores and narrow_row_pv (kv_widen.h).
#pragma once

#include <wasm_simd128.h>

#include "kernels/kv_widen.h"
#include "kernels/panels_simd128.h"

namespace webattention::kernels::simd128_narrow {

// The K panel of keys [slot, slot + 8) (slot a multiple of 8), as a reader of its dk rows.
// kFinite: the cache holds no Inf or NaN (NarrowKv::finite), so f16 may widen the cheap way.
template <StorageType T, bool kFinite>
using HalfOf = HalfPanel<T == StorageType::bf16 ? load_bf16x8 : kFinite ? load_f16x8_finite : load_f16x8>;

template <StorageType T, bool kFinite>
inline auto key_panel(const flash::NarrowKv& c, int dk, int slot) {
  const std::size_t at = flash::key_index(dk, slot, 0);
  if constexpr (T == StorageType::i8) {
    return I8KeyPanel(static_cast<const std::int8_t*>(c.k) + at, c.k_scales + slot);
  } else {
    return HalfOf<T, kFinite>(static_cast<const std::uint16_t*>(c.k) + at);
  }
}

// Value columns [column, column + 8) from slot `slot` on, as a reader of one row per slot.
template <StorageType T, bool kFinite>
inline auto value_panel(const flash::NarrowKv& c, int column, int slot) {
  const std::size_t at = flash::value_index(c.capacity, slot, column);
  if constexpr (T == StorageType::i8) {
    return I8RowPanel(static_cast<const std::int8_t*>(c.v) + at, c.v_scales + slot);
  } else {
    return HalfOf<T, kFinite>(static_cast<const std::uint16_t*>(c.v) + at);
  }
}

// s[0 .. 8·kPanels) = q · the keys [slot, slot + 8·kPanels).
template <StorageType T, bool kFinite, int kPanels>
void score_panels(const float* q, int dk, const flash::NarrowKv& c, int slot, float* s) {
  decltype(key_panel<T, kFinite>(c, dk, slot)) panels[kPanels];
  for (int i = 0; i < kPanels; ++i) panels[i] = key_panel<T, kFinite>(c, dk, slot + i * kPanelWidth);
  v128_t acc[2 * kPanels];
  for (auto& a : acc) a = wasm_f32x4_splat(0.0f);
  row_times_panel_rows<kPanels>(q, 0, dk, panels, acc);
  for (int i = 0; i < 2 * kPanels; ++i) wasm_v128_store(s + 4 * i, acc[i]);
}

// out[0 .. 8·kPanels) += Σ_j p[j] · value columns [column, column + 8·kPanels) of slot + j.
template <StorageType T, bool kFinite, int kPanels>
void pv_panels(const float* p, int n, const flash::NarrowKv& c, int column, int slot, float* out) {
  decltype(value_panel<T, kFinite>(c, column, slot)) panels[kPanels];
  for (int i = 0; i < kPanels; ++i) panels[i] = value_panel<T, kFinite>(c, column + i * kPanelWidth, slot);
  v128_t acc[2 * kPanels];
  for (int i = 0; i < 2 * kPanels; ++i) acc[i] = wasm_v128_load(out + 4 * i);
  row_times_panel_rows<kPanels>(p, 0, n, panels, acc);
  for (int i = 0; i < 2 * kPanels; ++i) wasm_v128_store(out + 4 * i, acc[i]);
}

template <StorageType T, bool kFinite>
void row_scores_as(const float* q, int dk, const flash::NarrowKv& c, int slot, int n, float* s) {
  constexpr int kPanels = decltype(key_panel<T, kFinite>(c, dk, slot))::kRowPanels;
  int jb = 0;
  for (; jb + kPanels * kPanelWidth <= n; jb += kPanels * kPanelWidth) score_panels<T, kFinite, kPanels>(q, dk, c, slot + jb, s + jb);
  for (; jb < n; jb += kPanelWidth) score_panels<T, kFinite, 1>(q, dk, c, slot + jb, s + jb);
}

template <StorageType T, bool kFinite>
void row_pv_as(const float* p, int n, const flash::NarrowKv& c, int dv_pad, int slot, float* acc) {
  constexpr int kPanels = decltype(value_panel<T, kFinite>(c, 0, slot))::kRowPanels;
  int cb = 0;
  for (; cb + kPanels * kPanelWidth <= dv_pad; cb += kPanels * kPanelWidth) pv_panels<T, kFinite, kPanels>(p, n, c, cb, slot, acc + cb);
  for (; cb < dv_pad; cb += kPanelWidth) pv_panels<T, kFinite, 1>(p, n, c, cb, slot, acc + cb);
}

template <StorageType T>
void row_scores(const float* q, int dk, const flash::NarrowKv& c, int slot, int n, float* s) {
  if (T == StorageType::f16 && c.finite) {
    row_scores_as<T, true>(q, dk, c, slot, n, s);
  } else {
    row_scores_as<T, false>(q, dk, c, slot, n, s);
  }
}

template <StorageType T>
void row_pv(const float* p, int n, const flash::NarrowKv& c, int dv_pad, int slot, float* acc) {
  if (T == StorageType::f16 && c.finite) {
    row_pv_as<T, true>(p, n, c, dv_pad, slot, acc);
  } else {
    row_pv_as<T, false>(p, n, c, dv_pad, slot, acc);
  }
}

}  // namespace webattention::kernels::simd128_narrow
