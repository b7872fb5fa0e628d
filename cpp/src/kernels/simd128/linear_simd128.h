// Projection kernel, WebAssembly SIMD128, written once for every storage type: one Block4x8 of
// accumulators per 4 input rows × 8 output columns, streaming one packed panel, whose rows a
// Panel type (panels_simd128.h) loads as f32x4 (widening or dequantising on the way: a narrow
// panel once per block of input rows, panel_rows). Each <type>_linear_simd128.cpp instantiates
// linear_panels<its Panel> (or pairs_or_panels<its Panel, its PairPanel>).
#pragma once

#include <wasm_simd128.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/far_panels.h"
#include "kernels/simd128/f32_block_simd128.h"
#include "kernels/simd128/f32_row_panels_simd128.h"
#include "kernels/kernels.h"
#include "kernels/large_rows.h"
#include "kernels/simd128/large_rows_simd128.h"
#include "kernels/simd128/pair_panels_simd128.h"
#include "kernels/simd128/panels_simd128.h"

namespace webattention::kernels::simd128_linear {
namespace {

constexpr int kRows = 4;

// y[0..rows)[n0..n0+8) = x rows · panel p (+ bias), rows <= 4; x_rows[r] point at the input rows;
// `panel` holds panel p's rows as f32 (the packed f32 weights, or a narrow panel widened).
inline void block_4x8(const float* const x_rows[kRows], int rows, const PackedLinear& w, int p,
                      const float* panel, float* y, std::ptrdiff_t y_stride) {
  const int n0 = p * kPanelWidth;
  Block4x8 acc = Block4x8::filled(bias_or_zero(w, n0), bias_or_zero(w, n0 + 4));
  const float* x0 = x_rows[0];
  const float* x1 = x_rows[1];
  const float* x2 = x_rows[2];
  const float* x3 = x_rows[3];
  for (int k = 0; k < w.in; ++k) acc.madd(x0[k], x1[k], x2[k], x3[k], panel + k * kPanelWidth);
  const int cols = w.panel_columns(p);
  if (cols == kPanelWidth) {
    for (int r = 0; r < rows; ++r) acc.store_row(r, y + r * y_stride + n0);
    return;
  }
  // A last panel narrower than 8: every row out of the registers before the first copy. A copy
  // may be a call (memmove), and SpiderMonkey keeps a vector that lives across a call in the stack
  // frame for its whole life: the rows still in registers at the copies used to be, so row 3's
  // accumulators went through memory at every k of the loop above in Firefox (1.4-3x slower
  // prefill; bench/prefill/firefox_hot_code.mjs shows the loop,
  // docs/performance/prefill.md#prefill-kernels the numbers).
  alignas(16) float tmp[kRows][kPanelWidth];
  for (int r = 0; r < kRows; ++r) acc.store_row(r, tmp[r]);
  for (int r = 0; r < rows; ++r) std::copy(tmp[r], tmp[r] + cols, y + r * y_stride + n0);
}

// block_4x8 over int8 or int4 weights (I8Panel: q · 2^16 in `panel`; Q4Panel): each block of 32 input values
// summed apart, from zero, and added times its scales to accumulators that start at the bias,
// exactly the decode step's arithmetic (one_row_pair_panels, I8PairPanel::scale_block). So a row
// projects to the same bits whether it comes alone or among others, and a narrow cache stores the
// same rows whatever the chunks a sequence comes in (at an exact rounding tie of the cache's type,
// an ulp of difference would move a stored value by a whole step). The accumulators stay in
// memory: two register blocks would not fit V8's 16 registers.
template <class Panel>
void block_4x8_scaled(const float* const x_rows[kRows], int rows, const PackedLinear& w, int p,
                      const Panel& reader, const float* panel, float* y, std::ptrdiff_t y_stride) {
  const int n0 = p * kPanelWidth;
  alignas(16) float acc[kRows][kPanelWidth];
  for (auto& row : acc) {
    wasm_v128_store(row, bias_or_zero(w, n0));
    wasm_v128_store(row + 4, bias_or_zero(w, n0 + 4));
  }
  const float* x0 = x_rows[0];
  const float* x1 = x_rows[1];
  const float* x2 = x_rows[2];
  const float* x3 = x_rows[3];
  for (int k0 = 0; k0 < w.in; k0 += Panel::kBlock) {
    Block4x8 part = Block4x8::zero();
    const int k1 = std::min(w.in, k0 + Panel::kBlock);
    for (int k = k0; k < k1; ++k) part.madd(x0[k], x1[k], x2[k], x3[k], panel + k * kPanelWidth);
    v128_t s0, s1;
    reader.block_scales(k0, s0, s1);
    for (int r = 0; r < kRows; ++r) {
      wasm_v128_store(acc[r], wasm_f32x4_add(wasm_v128_load(acc[r]), wasm_f32x4_mul(part.lo[r], s0)));
      wasm_v128_store(acc[r] + 4, wasm_f32x4_add(wasm_v128_load(acc[r] + 4), wasm_f32x4_mul(part.hi[r], s1)));
    }
  }
  const int cols = w.panel_columns(p);
  for (int r = 0; r < rows; ++r) {
    store_panel_row(y + r * y_stride + n0, wasm_v128_load(acc[r]), wasm_v128_load(acc[r] + 4), cols);
  }
}

// Panel p's w.in rows as f32, by the f32x4 reader Panel, into out (w.in × 8 floats).
template <class Panel>
void widen_panel(const PackedLinear& w, int p, float* out) {
  Panel panel(w, p);
  for (int k0 = 0; k0 < w.in; k0 += Panel::kBlock) {
    panel.start(k0);
    const int k1 = std::min(w.in, k0 + Panel::kBlock);
    for (int k = k0; k < k1; ++k) {
      v128_t lo, hi;
      panel.row(k, lo, hi);
      wasm_v128_store(out + k * kPanelWidth, lo);
      wasm_v128_store(out + k * kPanelWidth + 4, hi);
    }
  }
}

// Rows [r_begin, r_end) of x times one weight panel: output columns [8p, 8p + 8) of one target.
// A narrow panel is widened once into `widened` (w.in × 8 floats) for all these rows: the inner
// loop is then f32's, and the widening (f16 8 operations per row of 8, int8 10) is shared by the
// block's rows (64 at in = 768, up to 256) instead of 4: narrow readers in the 4-row loop kept
// the whole prefill at 1.8-2.1x f32's time (docs/performance/prefill.md#prefill-kernels). Exact:
// the stored values (int8: q · 2^16, its scales applied per block by block_4x8_scaled).
// Never inlined: V8 swaps in optimised code between calls of a function, never during one, so a
// first forward() reaches TurboFan code after a few panels only if each panel is its own call
// (CMakeLists.txt keeps Binaryen from inlining it too).
template <class Panel>
__attribute__((noinline)) void panel_rows(const float* x, int r_begin, int r_end,
                                          std::ptrdiff_t x_stride, const LinearTarget& target,
                                          int p, float* widened) {
  const PackedLinear& w = *target.weights;
  const float* panel = widened;
  if constexpr (std::is_same_v<Panel, F32Panel>) {
    panel = w.elements<const float>().panel(p);
  } else {
    widen_panel<Panel>(w, p, widened);
  }
  for (int r0 = r_begin; r0 < r_end; r0 += kRows) {
    const int block_rows = std::min(kRows, r_end - r0);
    const float* x_rows[kRows];
    // A short last block repeats its last row; only block_rows rows are stored.
    for (int r = 0; r < kRows; ++r) x_rows[r] = x + (r0 + std::min(r, block_rows - 1)) * x_stride;
    if constexpr (Panel::kBlockScales) {
      block_4x8_scaled(x_rows, block_rows, w, p, Panel(w, p), panel, target.y + r0 * target.y_stride, target.y_stride);
    } else {
      block_4x8(x_rows, block_rows, w, p, panel, target.y + r0 * target.y_stride, target.y_stride);
    }
  }
}

// Panel p's 8 results (lo: columns 0-3, hi: 4-7) of a decode step into the target's output: a
// whole panel stored straight, the narrower last one into `last`, for copy_if_narrow once every
// accumulator is stored. No call while the caller's other accumulators are live: a copy may be a
// call (memmove), and SpiderMonkey keeps a vector that lives across a call in the stack frame for
// its whole life, so accumulators still in registers at a copy went through memory at every step
// of the loop before it (Firefox's f16 decode kernel ran at 14 GFLOP/s against 21 after this;
// block_4x8 has the same rule).
inline void store_panel_row(const PackedLinear& w, const LinearTarget& target, int p, v128_t lo, v128_t hi,
                            float* last) {
  float* at = w.panel_columns(p) == kPanelWidth ? target.y + p * kPanelWidth : last;
  wasm_v128_store(at, lo);
  wasm_v128_store(at + 4, hi);
}
// Panel p's columns from `last` into the output if store_panel_row put them there. Only a
// group's last panel can be narrow: the one narrow panel is the weights' last.
inline void copy_if_narrow(const PackedLinear& w, const LinearTarget& target, int p, const float* last) {
  const int cols = w.panel_columns(p);
  if (cols < kPanelWidth) std::copy(last, last + cols, target.y + p * kPanelWidth);
}

// One input row (a decode step) times kPanels consecutive weight panels from p0
// (row_times_panel_rows): a matrix-vector product where the 4-row block would compute 3 rows of
// padding. Never inlined, as panel_rows.
template <class Panel, int kPanels>
__attribute__((noinline)) void one_row_panels(const float* x, const LinearTarget& target, int p0, int stride) {
  const PackedLinear& w = *target.weights;
  v128_t acc[2 * kPanels];
  for (int i = 0; i < kPanels; ++i) {
    acc[2 * i] = bias_or_zero(w, (p0 + i * stride) * kPanelWidth);
    acc[2 * i + 1] = bias_or_zero(w, (p0 + i * stride) * kPanelWidth + 4);
  }
  if constexpr (std::is_same_v<Panel, F32Panel>) {
    // f32 panels lie in·8 floats apart: one pointer and a constant stride (attention's one-row
    // loop, f32_row_panels_simd128.h) instead of a pointer per panel, which V8 keeps in fewer
    // registers; the per-panel readers made an f32 decode step ~10 % slower
    // (docs/performance/decode_kernels.md#decode-kernels).
    row_times_panels<kPanels>(x, w.in, w.elements<const float>().panel(p0),
                              static_cast<std::size_t>(stride) * w.in * kPanelWidth, acc);
  } else {
    Panel panels[kPanels];
    for (int i = 0; i < kPanels; ++i) panels[i] = Panel(w, p0 + i * stride);
    for (int k0 = 0; k0 < w.in; k0 += Panel::kBlock) {
      for (auto& panel : panels) panel.start(k0);
      row_times_panel_rows<kPanels>(x, k0, std::min(w.in, k0 + Panel::kBlock), panels, acc);
    }
  }
  alignas(16) float last[kPanelWidth];
  for (int i = 0; i < kPanels; ++i) store_panel_row(w, target, p0 + i * stride, acc[2 * i], acc[2 * i + 1], last);
  copy_if_narrow(w, target, p0 + (kPanels - 1) * stride, last);
}

// Panels p0, p0 + stride, ... (kPanels of them): their accumulators (even, odd columns) into the
// target's output.
template <int kPanels>
inline void store_pair_panels(const PackedLinear& w, const LinearTarget& target, int p0, int stride, const v128_t* acc) {
  alignas(16) float last[kPanelWidth];
  for (int i = 0; i < kPanels; ++i) {
    v128_t lo, hi;
    from_pairs(acc[2 * i], acc[2 * i + 1], lo, hi);
    store_panel_row(w, target, p0 + i * stride, lo, hi, last);
  }
  copy_if_narrow(w, target, p0 + (kPanels - 1) * stride, last);
}

// one_row_panels over panels read in pairs (pair_panels_simd128.h), kPanels of them `stride`
// apart (far_panels.h): the accumulators hold even and odd columns; a reader with block scales
// sums each block apart and scales the sum once.
template <class Panel, int kPanels>
__attribute__((noinline)) void one_row_pair_panels(const float* x, const LinearTarget& target, int p0, int stride) {
  const PackedLinear& w = *target.weights;
  v128_t acc[2 * kPanels];
  for (int i = 0; i < kPanels; ++i) {
    const int n0 = (p0 + i * stride) * kPanelWidth;
    to_pairs(bias_or_zero(w, n0), bias_or_zero(w, n0 + 4), acc[2 * i], acc[2 * i + 1]);
  }
  Panel panels[kPanels];
  for (int i = 0; i < kPanels; ++i) panels[i] = Panel(w, p0 + i * stride);
  if constexpr (Panel::kBlockScales) {
    for (int k0 = 0; k0 < w.in; k0 += Panel::kBlock) {
      v128_t part[2 * kPanels];
      for (auto& v : part) v = wasm_f32x4_splat(0.0f);
      block_times_panel_rows<kPanels>(x, k0, std::min(w.in, k0 + Panel::kBlock), panels, part);
      for (int i = 0; i < kPanels; ++i) panels[i].scale_block(k0, part[2 * i], part[2 * i + 1], acc[2 * i], acc[2 * i + 1]);
    }
  } else {
    row_times_pair_rows<kPanels>(x, 0, w.in, panels, acc);
  }
  store_pair_panels<kPanels>(w, target, p0, stride, acc);
}

// one_row_pair_panels with the sums in memory (`acc`, touched once a block of rows and sub-group),
// for the readers whose kSumsInMemory says so: the rows in blocks of kRowBlock, the panels in
// sub-groups of up to kFarPanels, each sub-group's sums of a block in registers. So 4 panels'
// sums (8 registers) share a row's broadcast of x without spilling in V8's 15 registers (int8's
// accumulators and partial sums both in registers fit only 2 panels, and a decode step at (2048,
// 32, 8) took 1.10-1.16x as long), and kFarPanelsInMemory panels read as many streams with 4
// panels' registers (far_panels.h). A reader with block scales sums each
// block from zero and adds it times the block's scales (scale_block); the others add each row to
// the sums themselves. Per column the same operations in the same order as one_row_pair_panels:
// the same bits. docs/performance/decode_kernels.md#decode-kernels.
template <class Panel, int kPanels>
__attribute__((noinline)) void one_row_pairs_in_memory(const float* x, const LinearTarget& target, int p0, int stride) {
  constexpr int kSub = kPanels < kFarPanels ? kPanels : kFarPanels;
  static_assert(kPanels % kSub == 0, "whole sub-groups");
  // A reader's blocks, or for f16 32 rows: its sums' load and store then come once per 32 rows.
  constexpr int kRowBlock = Panel::kBlockScales ? Panel::kBlock : 32;
  const PackedLinear& w = *target.weights;
  alignas(16) float acc[2 * kPanels][4];
  // The array's address escapes into an empty asm: clang keeps it in memory, not in registers.
  __asm__ volatile("" : : "r"(&acc[0][0]) : "memory");
  Panel panels[kPanels];
  for (int i = 0; i < kPanels; ++i) {
    const int n0 = (p0 + i * stride) * kPanelWidth;
    v128_t even, odd;
    to_pairs(bias_or_zero(w, n0), bias_or_zero(w, n0 + 4), even, odd);
    wasm_v128_store(acc[2 * i], even);
    wasm_v128_store(acc[2 * i + 1], odd);
    panels[i] = Panel(w, p0 + i * stride);
  }
  for (int k0 = 0; k0 < w.in; k0 += kRowBlock) {
    const int k1 = std::min(w.in, k0 + kRowBlock);
    for (int g = 0; g < kPanels; g += kSub) {
      v128_t part[2 * kSub];
      for (int i = 0; i < 2 * kSub; ++i) part[i] = Panel::kBlockScales ? wasm_f32x4_splat(0.0f) : wasm_v128_load(acc[2 * g + i]);
      if constexpr (Panel::kBlockScales) {
        block_times_panel_rows<kSub>(x, k0, k1, panels + g, part);
      } else {
        row_times_pair_rows<kSub>(x, k0, k1, panels + g, part);
      }
      for (int i = 0; i < kSub; ++i) {
        v128_t even = part[2 * i], odd = part[2 * i + 1];
        if constexpr (Panel::kBlockScales) {
          even = wasm_v128_load(acc[2 * (g + i)]);
          odd = wasm_v128_load(acc[2 * (g + i) + 1]);
          panels[g + i].scale_block(k0, part[2 * i], part[2 * i + 1], even, odd);
        }
        wasm_v128_store(acc[2 * (g + i)], even);
        wasm_v128_store(acc[2 * (g + i) + 1], odd);
      }
      __asm__ volatile("" : : "r"(&acc[0][0]) : "memory");
    }
  }
  v128_t sums[2 * kPanels];
  for (int i = 0; i < 2 * kPanels; ++i) sums[i] = wasm_v128_load(acc[i]);
  store_pair_panels<kPanels>(w, target, p0, stride, sums);
}

// kPanels panels `stride` apart, one input row: one_row_pairs_in_memory or one_row_pair_panels.
template <class Panel, int kPanels>
void one_row_pair_group(const float* x, const LinearTarget& target, int p0, int stride) {
  if constexpr (Panel::kSumsInMemory) {
    one_row_pairs_in_memory<Panel, kPanels>(x, target, p0, stride);
  } else {
    one_row_pair_panels<Panel, kPanels>(x, target, p0, stride);
  }
}

// x[0, n) times `scale` into xs, if exact for every element (no finite x overflows); else false.
// A power of two scales exactly otherwise, subnormals included, Inf and NaN staying themselves.
inline bool scaled_row(const float* x, int n, float scale, std::vector<float>& xs) {
  xs.resize(n);
  for (int k = 0; k < n; ++k) {
    xs[k] = x[k] * scale;
    if (std::isinf(xs[k]) && std::isfinite(x[k])) return false;
  }
  return true;
}

// A decode step's projections (one input row) over narrow panels read in pairs, Panel::kFarGroup
// panels at a time (4, or kFarPanelsInMemory), each group's panels that fraction of the target's
// range apart (far_panels.h). 4 such panels, against 4 side by
// side, the projection streamed from memory ran 1.06-1.31× in Node, Chromium and Firefox, f16,
// int8 and int4 alike, and 0.99-1.11× in the L3. int4 read 2 (its partial sums and zero points
// take registers too) until a Xeon VM streamed its pairs at two thirds of their in-cache rate:
// 4 ran 1.40-1.68× there streamed, 1.00× in the L3. x is multiplied by each target's
// reader scale (Panel::x_scale: f16 2^112, or 2^102 for rebiased weights), once per run of
// targets with the same scale. Returns false where x times a scale would overflow (f16: |x| >=
// 2^16, or 2^26): the caller then takes the f32x4 readers for every target, which compute the
// same values (over whatever this wrote).
template <class Panel>
bool one_row_pairs(const float* x, const LinearTarget* targets, int target_count) {
  int in = 0;  // the x values any target reads
  for (int t = 0; t < target_count; ++t) in = std::max(in, targets[t].weights->in);
  // Kept between calls (one per thread): a decode step would otherwise allocate it every step.
  static thread_local std::vector<float> scaled;
  float scaled_by = 1.0f;
  for (int t = 0; t < target_count; ++t) {
    const float scale = Panel::x_scale(*targets[t].weights);
    if (scale != 1.0f && scale != scaled_by) {
      if (!scaled_row(x, in, scale, scaled)) return false;
      scaled_by = scale;
    }
    const float* xt = scale == 1.0f ? x : scaled.data();
    const LinearTarget& target = targets[t];
    far_panel_counts<Panel::kFarGroup>(target.panel_begin, target.panels_end(), [&](auto count, int p0, int stride) {
      one_row_pair_group<Panel, decltype(count)::value>(xt, target, p0, stride);
    });
  }
  return true;
}

template <class Panel>
void linear_panels(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
                   int target_count) {
  // One row: the matrix-vector loop. int8's is one_row_pairs, which its caller takes; were it to
  // come here, the 4-row block below gives the same bits.
  if constexpr (!Panel::kBlockScales) {
    if (rows == 1) {
      for (int t = 0; t < target_count; ++t) {
        const LinearTarget& target = targets[t];
        far_panel_counts<Panel::kRowPanels>(target.panel_begin, target.panels_end(), [&](auto count, int p0, int stride) {
          one_row_panels<Panel, decltype(count)::value>(x, target, p0, stride);
        });
      }
      return;
    }
  }
  // Cache blocking: a block of input rows (<= ~192 KiB) stays in L2 while every weight panel
  // streams past it once; each panel (in × 8 elements) stays in L1 across the block's rows.
  const int in = target_count ? targets[0].weights->in : 0;
  const int row_block = std::max(kRows, std::min(256, (48 * 1024 / std::max(in, 1)) / kRows * kRows));
  int widest = 0;  // the longest panel, for the narrow types' widened copy
  for (int t = 0; t < target_count; ++t) widest = std::max(widest, targets[t].weights->in);
  std::vector<float> widened(std::is_same_v<Panel, F32Panel> ? 0 : static_cast<std::size_t>(widest) * kPanelWidth);
  for (int rb = 0; rb < rows; rb += row_block) {
    const int rb_rows = std::min(row_block, rows - rb);
    for (int t = 0; t < target_count; ++t) {
      for (int p = targets[t].panel_begin; p < targets[t].panels_end(); ++p)
        panel_rows<Panel>(x, rb, rb + rb_rows, x_stride, targets[t], p, widened.data());
    }
  }
}

// A narrow type's whole kernel: a single row (a decode step) read in pairs (PairPanel,
// one_row_pairs) where that applies, else Panel's blocks. bf16, int8 and int4 are this. int8 and
// int4 multiply x by their codes (q · 2^16, q - z), so a row holding a value past kLargeInput
// takes large_row_pairs (large_rows.h: the plain loops' sums would overflow where the float32
// module's stay finite).
template <class Panel, class PairPanel>
void pairs_or_panels(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
                     int target_count) {
  const auto plain = [](const float* xs, int n, std::ptrdiff_t stride, const LinearTarget* ts, int count) {
    if (n == 1 && one_row_pairs<PairPanel>(xs, ts, count)) return;
    linear_panels<Panel>(xs, n, stride, ts, count);
  };
  if constexpr (PairPanel::kBlockScales) {
    linear_by_large_rows(x, rows, x_stride, targets, target_count, plain, large_row_pairs<PairPanel>);
  } else {
    plain(x, rows, x_stride, targets, target_count);
  }
}

}  // namespace
}  // namespace webattention::kernels::simd128_linear
