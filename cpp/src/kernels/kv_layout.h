// The panel layout every kernel here streams, written once: a matrix stored as panels of
// kPanelWidth columns side by side, each panel [depth][kPanelWidth] contiguous, so a kernel
// reading one panel touches consecutive memory and one row of a panel is one register block's
// width (2 f32x4). The same layout holds
//  - a K block (a KV cache's, or the keys the flash kernel packs): Kᵀ, columns = key slots,
//    depth = d_k, so key j's feature c is at [j/8][c][j%8] (key_panels);
//  - a V block: columns = value features, depth = the slots, so value column c of slot j is at
//    [c/8][j][c%8] (value_panels);
//  - the weights of a linear layer, PyTorch's W [out, in] (kernels.h's PackedLinear):
//    columns = output features, depth = in.
// Templated on the element type T, the type of storage: the layout does not change with it.
#pragma once

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
  // Depth k of columns [0, n) from src[0 .. n): one slot of a V block.
  template <class Src>
  void set_row(int k, const Src* src, int n) const {
    for (int c = 0; c < n; ++c) at(c, k) = static_cast<T>(src[c]);
  }
};

// K block of d_k features per key: columns = key slots.
template <class T>
PanelMatrix<T> key_panels(T* block, int dk) {
  return {block, static_cast<std::size_t>(dk)};
}

// V block of `slots` keys (a multiple of kPanelWidth): columns = value features.
template <class T>
PanelMatrix<T> value_panels(T* block, int slots) {
  return {block, static_cast<std::size_t>(slots)};
}

// Element (slot, feature f) of a K block of dk features, and of a V block of `capacity` slots:
// key_panels(...).at(slot, f) and value_panels(...).at(f, slot) as flat indices, for blocks whose
// element type is known only at run time (a narrow cache's).
inline std::size_t key_index(int dk, int slot, int f) {
  return (static_cast<std::size_t>(slot / kPanelWidth) * dk + f) * kPanelWidth + slot % kPanelWidth;
}
inline std::size_t value_index(int capacity, int slot, int f) {
  return (static_cast<std::size_t>(f / kPanelWidth) * capacity + slot) * kPanelWidth + f % kPanelWidth;
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
