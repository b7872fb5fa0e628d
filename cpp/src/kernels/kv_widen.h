// A narrow KV cache (f16, int8) read by the f32 attention loops: each run of consecutive slots the
// flash kernel reads (flash_layout.h's slot_runs, at most a key tile) is first widened into the
// unit's K and V tiles of the workspace, in the same panel layout, so the tiles stay in L1/L2
// while every query row of the block reads them. Values come out exactly as storage_convert.h
// defines them (f16 widened, int8 q · scale).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/flash_layout.h"
#include "storage_convert.h"

namespace webattention::kernels::flash {

// Where a run of n slots from `slot` is for the kernels: (kt, v, v_rows) and the slot to read
// from. An f32 cache is read in place; a narrow one is widened into kv's tiles, read from slot 0.
struct KvRun {
  KvPanels panels;
  int slot;
};

namespace widen_detail {

// Elements [first, first + n) of src widened into dst; `scale(i)` is element first + i's int8 scale.
template <class Scale>
inline void widen(const NarrowKv& kv, const void* src, std::size_t first, std::size_t n, float* dst, Scale&& scale) {
  switch (kv.type) {
    case StorageType::f16: {
      const std::uint16_t* s = static_cast<const std::uint16_t*>(src) + first;
      for (std::size_t i = 0; i < n; ++i) dst[i] = storage::f16_to_f32(s[i]);
      break;
    }
    case StorageType::bf16: {
      const std::uint16_t* s = static_cast<const std::uint16_t*>(src) + first;
      for (std::size_t i = 0; i < n; ++i) dst[i] = storage::bf16_to_f32(s[i]);
      break;
    }
    case StorageType::i8: {
      const std::int8_t* s = static_cast<const std::int8_t*>(src) + first;
      for (std::size_t i = 0; i < n; ++i) dst[i] = storage::dequantise(s[i], scale(i));
      break;
    }
    case StorageType::f32: break;
  }
}

}  // namespace widen_detail

// Keys of slots [slot, slot + n) (whole panels: one contiguous stretch [n/8][dk][8]).
inline KvRun keys_run(const KvPanels& kv, int slot, int n) {
  if (kv.narrow.type == StorageType::f32) return {kv, slot};
  const NarrowKv& c = kv.narrow;
  const std::size_t first = static_cast<std::size_t>(slot) * c.dk;
  float* tile = const_cast<float*>(kv.kt);
  // Element i of the stretch is key slot + (i / (8·dk))·8 + i % 8.
  widen_detail::widen(c, c.k, first, static_cast<std::size_t>(n) * c.dk, tile, [&](std::size_t i) {
    return c.k_scales[slot + static_cast<int>(i / (kPanelWidth * c.dk)) * kPanelWidth + static_cast<int>(i % kPanelWidth)];
  });
  return {kv, 0};
}

// Values of slots [slot, slot + n): per column panel, the stretch [n][8] from row `slot`.
inline KvRun values_run(const KvPanels& kv, int slot, int n) {
  if (kv.narrow.type == StorageType::f32) return {kv, slot};
  const NarrowKv& c = kv.narrow;
  float* tile = const_cast<float*>(kv.v);
  for (int cp = 0; cp < c.dv_pad / kPanelWidth; ++cp) {
    const std::size_t first = (static_cast<std::size_t>(cp) * c.capacity + slot) * kPanelWidth;
    widen_detail::widen(c, c.v, first, static_cast<std::size_t>(n) * kPanelWidth,
                        tile + static_cast<std::size_t>(cp) * kv.v_rows * kPanelWidth,
                        [&](std::size_t i) { return c.v_scales[slot + static_cast<int>(i / kPanelWidth)]; });
  }
  return {kv, 0};
}

}  // namespace webattention::kernels::flash
