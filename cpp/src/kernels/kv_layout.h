// The panel layout every kernel here streams, written once: a matrix stored as panels of
// kPanelWidth columns side by side, each panel [depth][kPanelWidth] contiguous, so a kernel
// reading one panel touches consecutive memory and one row of a panel is one register block's
// width (2 f32x4). The same layout holds
//  - a K block (a KV cache's, or the keys the flash kernel packs): Kᵀ, columns = key slots,
//    depth = d_k, so key j's feature c is at [j/8][c][j%8] (key_panels);
//  - a V block: columns = value features, depth = the slots, cut into tiles of kValueTile slots
//    stored one after another, each tile's panels side by side: value column c of slot j is at
//    [j/kValueTile][c/8][j%kValueTile][c%8] (value_panels). A tile is contiguous, so the P·V loops,
//    which read a tile's panels one after another, stream one run of memory instead of dv/8 runs
//    a whole cache apart (on an AMD Zen 4, a decode step's P·V over an f32 cache of 8192 slots
//    stalled on its loads in that layout);
//  - the weights of a linear layer, PyTorch's W [out, in] (kernels.h's PackedLinear):
//    columns = output features, depth = in.
// Templated on the element type T, the type of storage: the layout does not change with it.
#pragma once

#include <algorithm>
#include <cstddef>

namespace webattention::kernels {

// Columns per panel: one row of a panel is the 4×8 register block's 8 columns, 2 f32x4 wide.
constexpr int kPanelWidth = 8;

// n rounded up to whole panels: a matrix's padded column count (or a cache's slot count).
template <class Int>
constexpr Int whole_panels(Int n) {
  return (n + kPanelWidth - 1) / kPanelWidth * kPanelWidth;
}

// A view of a panel-packed matrix of element type T (const T to read).
template <class T>
struct PanelMatrix {
  T* data = nullptr;
  std::size_t depth = 0;  // rows of each panel

  std::size_t panel_elements() const { return depth * kPanelWidth; }
  // Panel p: columns [p·kPanelWidth, (p + 1)·kPanelWidth).
  T* panel(int p) const { return data + static_cast<std::size_t>(p) * panel_elements(); }
  // Column `column`, depth k: row k of its panel, lane column % kPanelWidth.
  T& at(int column, int k) const {
    return panel(column / kPanelWidth)[static_cast<std::size_t>(k) * kPanelWidth + column % kPanelWidth];
  }
  // Column `column` at depths [0, n) from src[0 .. n): one key of a K block.
  template <class Src>
  void set_column(int column, const Src* src, int n) const {
    T* dst = &at(column, 0);
    for (int k = 0; k < n; ++k) dst[static_cast<std::size_t>(k) * kPanelWidth] = static_cast<T>(src[k]);
  }
};

// K block of d_k features per key: columns = key slots.
template <class T>
PanelMatrix<T> key_panels(T* block, int dk) {
  return {block, static_cast<std::size_t>(dk)};
}

// Slots per tile of a V block: the flash kernel's key tile (flash_layout.h asserts it).
constexpr int kValueTile = 256;

// A view of a V block of `slots` slots (a multiple of kPanelWidth) and `columns` value features
// (whole panels), of element type T. Within one tile, consecutive slots of a panel are
// kPanelWidth elements apart; the tile's next panel is panel_stride(slot) further on.
template <class T>
struct ValueMatrix {
  T* data = nullptr;
  int slots = 0;
  int columns = 0;

  // Elements from one panel of the tile that holds `slot` to the next: the tile's slots (the last
  // tile may be shorter) times kPanelWidth.
  std::size_t panel_stride(int slot) const {
    return static_cast<std::size_t>(std::min(kValueTile, slots - slot / kValueTile * kValueTile)) * kPanelWidth;
  }
  std::size_t index(int column, int slot) const {
    const int first = slot / kValueTile * kValueTile;  // the tile's first slot
    return static_cast<std::size_t>(first) * columns + (column / kPanelWidth) * panel_stride(slot) +
           static_cast<std::size_t>(slot - first) * kPanelWidth + column % kPanelWidth;
  }
  T& at(int column, int slot) const { return data[index(column, slot)]; }
};

// V block of `slots` slots (a multiple of kPanelWidth) and `columns` features (whole panels).
template <class T>
ValueMatrix<T> value_panels(T* block, int slots, int columns) {
  return {block, slots, columns};
}

// Element (slot, feature f) of a K block of dk features, and of a V block of `capacity` slots
// and `columns` features (whole panels): key_panels(...).at(slot, f) and value_panels(...).at(f,
// slot) as flat indices, for blocks whose element type is known only at run time (a narrow
// cache's).
inline std::size_t key_index(int dk, int slot, int f) {
  return (static_cast<std::size_t>(slot / kPanelWidth) * dk + f) * kPanelWidth + slot % kPanelWidth;
}
inline std::size_t value_index(int capacity, int columns, int slot, int f) {
  return ValueMatrix<const char>{nullptr, capacity, columns}.index(f, slot);
}

// Elements of a K block and of a V block of `slots` keys (a multiple of kPanelWidth); V's
// features padded to whole panels.
inline std::size_t key_block_elements(int slots, int dk) {
  return static_cast<std::size_t>(slots) * dk;
}
inline std::size_t value_block_elements(int slots, int dv) {
  return static_cast<std::size_t>(slots) * whole_panels(dv);
}

}  // namespace webattention::kernels
