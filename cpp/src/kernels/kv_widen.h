// A narrow KV cache (f16, int8) read by the f32 attention loops: each run of consecutive slots the
// flash kernel reads (flash_layout.h's slot_runs, at most a key tile) is first widened into the
// unit's K and V tiles of the workspace, in the same panel layout, so the tiles stay in L1/L2
// while every query row of the block reads them. Eight elements at a time (one panel row), with
// the SIMD128 loads of widen_simd128.h in the SIMD modules; values come out exactly as
// storage_convert.h defines them (f16 widened, int8 q · scale).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/flash_layout.h"
#include "storage_convert.h"
#ifdef __wasm_simd128__
#include "kernels/widen_simd128.h"
#endif

namespace webattention::kernels::flash {

// Where a run of n slots from `slot` is for the kernels: (kt, v, v_rows) and the slot to read
// from. An f32 cache is read in place; a narrow one is widened into kv's tiles, read from slot 0.
struct KvRun {
  KvPanels panels;
  int slot;
};

// Elements [i, i + 8) of src (`type`) into dst[0 .. 8); an int8 element times scales[lane].
inline void widen8(StorageType type, const void* src, std::size_t i, const float* scales, float* dst) {
#ifdef __wasm_simd128__
  v128_t lo, hi;
  if (type == StorageType::i8) {
    load_i8x8(static_cast<const std::int8_t*>(src) + i, wasm_v128_load(scales), wasm_v128_load(scales + 4), lo, hi);
  } else if (type == StorageType::f16) {
    load_f16x8(static_cast<const std::uint16_t*>(src) + i, lo, hi);
  } else {
    load_bf16x8(static_cast<const std::uint16_t*>(src) + i, lo, hi);
  }
  wasm_v128_store(dst, lo);
  wasm_v128_store(dst + 4, hi);
#else
  for (int l = 0; l < kPanelWidth; ++l) {
    dst[l] = type == StorageType::i8 ? storage::dequantise(static_cast<const std::int8_t*>(src)[i + l], scales[l])
                                     : storage::widen(src, type, i + l);
  }
#endif
}

// Keys of slots [slot, slot + n) (whole panels: one contiguous stretch [n/8][dk][8]); an int8
// panel row's 8 lanes are 8 keys, each with its own scale.
inline KvRun keys_run(const KvPanels& kv, int slot, int n) {
  if (kv.narrow.type == StorageType::f32) return {kv, slot};
  const NarrowKv& c = kv.narrow;
  float* tile = const_cast<float*>(kv.kt);  // the unit's own workspace
  for (int p = 0; p < n / kPanelWidth; ++p) {
    const std::size_t first = (static_cast<std::size_t>(slot / kPanelWidth) + p) * c.dk * kPanelWidth;
    const float* scales = c.k_scales ? c.k_scales + slot + p * kPanelWidth : nullptr;
    for (int f = 0; f < c.dk; ++f) {
      widen8(c.type, c.k, first + static_cast<std::size_t>(f) * kPanelWidth, scales,
             tile + (static_cast<std::size_t>(p) * c.dk + f) * kPanelWidth);
    }
  }
  return {kv, 0};
}

// Values of slots [slot, slot + n): per column panel, the rows [slot, slot + n) of 8 features;
// an int8 row's 8 lanes share the slot's scale.
inline KvRun values_run(const KvPanels& kv, int slot, int n) {
  if (kv.narrow.type == StorageType::f32) return {kv, slot};
  const NarrowKv& c = kv.narrow;
  float* tile = const_cast<float*>(kv.v);
  for (int j = 0; j < n; ++j) {
    alignas(16) float scales[kPanelWidth];
    if (c.v_scales) std::fill(scales, scales + kPanelWidth, c.v_scales[slot + j]);
    for (int cp = 0; cp < c.dv_pad / kPanelWidth; ++cp) {
      widen8(c.type, c.v, (static_cast<std::size_t>(cp) * c.capacity + slot + j) * kPanelWidth, scales,
             tile + (static_cast<std::size_t>(cp) * kv.v_rows + j) * kPanelWidth);
    }
  }
  return {kv, 0};
}

}  // namespace webattention::kernels::flash
