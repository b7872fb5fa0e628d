// The kernel interface. Each kernel family lives in its own file named, as XNNPACK names them,
// <storage type>_<op>_<ISA>: `f32_linear_scalar.cpp` is the f32 projection in portable C++ (native
// builds and the no-SIMD WASM build), `f16_linear_simd128.cpp` the projection over f16 weights in
// WebAssembly SIMD128, `f32_attention_simd128.cpp` f32 attention in SIMD128; `packing.cpp` packs
// the weights of every storage type that every ISA reads. Every ISA reads the same packed layouts
// and is checked against the reference; attention's algorithm is written once
// (flash_attention.h), the projection once per ISA (linear_simd128.h, linear_scalar.h), and each
// type or ISA supplies its inner loads. Kernels assume validated shapes and never throw.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/attention_problem.h"
#include "kernels/kv_layout.h"
#include "kernels/storage_convert.h"
#include "webattention/aligned_bytes.h"
#include "webattention/storage_type.h"

namespace webattention::kernels {

// The weights of one linear layer y = x Wᵀ + b, packed once at load time for the projection
// kernel in the panel layout (kv_layout.h): panels of kPanelWidth output columns, each
// [in][kPanelWidth] contiguous, the last one zero-padded; elements of the module's storage type
// (webattention/storage_type.h). int8 adds one f32 scale per block of storage::kQuantBlock input
// values of each output column, [ceil(out / 8)][ceil(in / 32)][8] (the panel's 8 columns side
// by side, as its elements are); int8 in row pairs (int8 activations) keeps each block's scales
// after its codes instead (storage_convert.h's i8_pair_byte: 288-byte blocks). int4 stores its
// codes in groups of 4 panel rows, 16 bytes each, each block's 8 groups followed by its 8 scales
// (storage_convert.h's q4_byte: the layout), [ceil(out / 8)][ceil(in / 32)][160] bytes, and
// each block's 8 zero points in one word (storage_convert.h's q4_shift), [ceil(out / 8)][ceil(in
// / 32)] words: 4 + 1 + 1/8 bits per weight. A block's zero point is 8 where the weights were
// quantised at load (storage::kQ4Zero); it is stored per block for checkpoints that carry their
// own (ORT's MatMulNBits). Where every
// block's is 8, one panel's words serve all (share_eights_zero_points()): a decode step's far
// panels then read no zero-point stream each.
static_assert(storage::kScaleBytes == kPanelWidth * static_cast<int>(sizeof(float)),
              "an int4 or paired int8 block's scales are its panel's columns' f32s");
struct PackedLinear {
  int in = 0;
  int out = 0;
  StorageType type = StorageType::f32;
  // [ceil(out / 8)][in][8] elements of `type` (int8 codes in row pairs: i8_row_pairs()). Not a
  // std::vector: packing writes every element, and zero-filling megabytes first would touch each
  // fresh page of WASM memory twice at load time.
  AlignedBytes storage;
  std::unique_ptr<float[]> scales;  // int8 in rows of 8 only (int4's and row pairs' lie in `storage`)
  std::unique_ptr<std::uint32_t[]> zero_points;  // int4 only
  std::size_t zero_point_panel_words = 0;        // int4: scale_blocks(), or 0 where one panel's serve all
  // No stored Inf or NaN (f16: no exponent 31), so the f16 kernels may take their finite-only
  // widening (widen_simd128.h's load_f16x8_finite).
  bool finite = true;
  // f16 only: 0, or storage::kF16Rebias where the weights are stored rebiased (storage_convert.h's
  // rebias_f16): finite and all below 64 in magnitude, almost always. Readers widen through
  // storage::rebiased_f16_to_f32; the SIMD readers scale by 2^(112 - f16_rebias) instead of 2^112.
  int f16_rebias = 0;
  // int8 and int4 only: the layer's inputs are quantised to int8 blocks and multiplied in
  // integers (create()'s activations 'int8': q8_linear.h, docs/attention-math/storage.md §11). Set by
  // use_int8_activations(), which also lays int8 codes in row pairs (i8_row_pairs()).
  bool int8_activations = false;
  std::vector<float> bias;  // [out] zero-padded to whole panels, or empty for no bias

  // Sets the bias from `n` values, zero-padded to whole panels: a kernel loads a panel's 8 bias
  // values at once, with no per-block bounds check.
  void set_bias(const float* values, int n) {
    bias.assign(static_cast<std::size_t>(whole_panels(n)), 0.0f);
    std::copy(values, values + n, bias.begin());
  }

  bool empty() const { return !storage; }
  // Whether the projection quantises its input rows for this layer (an integer kernel's).
  bool quantises_input() const { return int8_activations && (type == StorageType::i8 || type == StorageType::q4); }
  // int8 codes multiplied by int8 activations lie in row pairs, each block's scales after its
  // codes (storage_convert.h's i8_pair_byte), the last block's rows past `in` zero. The integer
  // kernels' i32x4.dot_i16x8_s multiplies a (k, k + 1) pair by the input's, so the codes load as
  // they lie (q8_linear_simd128.h's I8Codes); every other reader takes [in][8].
  bool i8_row_pairs() const { return type == StorageType::i8 && int8_activations; }
  // Rows stored per panel: `in`, or whole blocks in row pairs.
  std::size_t panel_depth() const {
    return static_cast<std::size_t>(i8_row_pairs() ? scale_blocks() * storage::kQuantBlock : in);
  }
  // The layout of int4's panels and int8's in row pairs: blocks of codes, each followed by its
  // scales (storage_convert.h's ScaledBlocks); null for the other layouts.
  const storage::ScaledBlocks* scaled_blocks() const {
    if (type == StorageType::q4) return &storage::kQ4Blocks;
    return i8_row_pairs() ? &storage::kI8PairBlocks : nullptr;
  }
  // Bytes of a panel in those layouts.
  std::size_t scaled_panel_bytes() const { return scaled_blocks()->panel_bytes(in); }
  // Panel p and its block b's scales in the layout the caller names: int4's (storage_convert.h's
  // q4_byte) or int8 row pairs' (i8_pair_byte). A kernel, which knows its type, gets them with no
  // branch (the constant layout folds into the arithmetic).
  std::uint8_t* scaled_panel(const storage::ScaledBlocks& blocks, int p) const {
    return storage.get() + static_cast<std::size_t>(p) * blocks.panel_bytes(in);
  }
  float* block_scales(const storage::ScaledBlocks& blocks, int p, int b) const {
    return reinterpret_cast<float*>(scaled_panel(blocks, p) + blocks.scales_byte(b));
  }
  std::uint8_t* q4_panel(int p) const { return scaled_panel(storage::kQ4Blocks, p); }
  std::int8_t* i8_pair_panel(int p) const { return reinterpret_cast<std::int8_t*>(scaled_panel(storage::kI8PairBlocks, p)); }
  // Column n's int8 code at depth k, in either layout.
  std::int8_t& i8_code(int n, int k) const {
    const int c = n % kPanelWidth;
    if (i8_row_pairs()) return i8_pair_panel(n / kPanelWidth)[storage::i8_pair_byte(k, c)];
    return elements<std::int8_t>().panel(n / kPanelWidth)[static_cast<std::size_t>(k) * kPanelWidth + c];
  }
  int panel_count() const { return whole_panels(out) / kPanelWidth; }
  // Output columns panel p holds (8, or fewer in the last panel), the rest being padding.
  int panel_columns(int p) const { return std::min(kPanelWidth, out - p * kPanelWidth); }
  int scale_blocks() const { return storage::quant_blocks(in); }
  // The panels as elements of T (T matching `type`: float, std::uint16_t or std::int8_t).
  template <class T>
  PanelMatrix<T> elements() const {
    return {reinterpret_cast<T*>(storage.get()), panel_depth()};
  }
  PanelMatrix<float> matrix() const { return elements<float>(); }  // f32 only
  const float* panel(int p) const { return matrix().panel(p); }    // f32 only
  // Panel p's block b's 8 scales, int8 or int4, where the layout keeps them: after the block's
  // codes (scaled_blocks()), or in `scales`, [scale_blocks()][8] a panel (int8 in rows of 8).
  float* block_scales(int p, int b) const {
    if (type == StorageType::q4) return block_scales(storage::kQ4Blocks, p, b);  // scaled_blocks()'s, each a constant
    if (i8_row_pairs()) return block_scales(storage::kI8PairBlocks, p, b);
    return panel_scales(p) + static_cast<std::size_t>(b) * kPanelWidth;
  }
  // Panel p's int8 scales in rows of 8: [scale_blocks()][8].
  float* panel_scales(int p) const { return scales.get() + static_cast<std::size_t>(p) * scale_blocks() * kPanelWidth; }
  // Floats from one block's scales to the next's in a panel (block_scales).
  int scale_stride() const {
    const storage::ScaledBlocks* blocks = scaled_blocks();
    return blocks ? blocks->scale_stride() : kPanelWidth;
  }
  // Panel p's int4 zero-point words ([scale_blocks()]).
  std::uint32_t* panel_zero_points(int p) const {
    return zero_points.get() + static_cast<std::size_t>(p) * zero_point_panel_words;
  }
  // int4: every panel's zero points read from one panel's words where all are 8 (after packing).
  void share_eights_zero_points();
  // Weight W[n][k] in PyTorch's [out, in] indexing, as stored (widened or dequantised to f32).
  float weight(int n, int k) const;
};

// Packs a PyTorch weight [out, in] (row-major, f32).
PackedLinear pack_linear(const float* weight, int out, int in);
// Packs a PyTorch weight [out, in] of `source` elements (f32, or 16-bit bits) into `storage`
// (storage_convert.h's rules; bits copied as they are when the types match). int8 storage takes
// finite values only (the caller checks: kernels never throw).
PackedLinear pack_linear(const void* weight, StorageType source, int out, int in, StorageType storage);
// Weights quantised already (a checkpoint's int8 or int4 blocks, taken as stored): [out, in]
// codes row-major (int8, or one 0-15 code per byte for int4), one f32 scale per block of 32 along
// a row ([out][ceil(in / 32)]), and for int4 one zero point 0-15 per block, laid out as the
// scales. The caller checks the codes, zero points and scales (finite): kernels never throw.
struct QuantisedSource {
  const void* codes;
  const float* scales;
  const std::uint8_t* zero_points;  // int4 only
};
// Packs them into `storage` (int8 or int4, matching the codes) with no rounding: weight(n, k)
// gives back (code - zero point) · scale.
PackedLinear pack_quantised(const QuantisedSource& source, int out, int in, StorageType storage);
// Packing in place, without a copy of the source (the JS side's loadStateDict, which must copy a
// caller's f32 weights into WASM memory anyway): rows_for_packing() makes f32 storage for
// [out, in] weights, the caller writes W there row-major (PyTorch's [out, in], out × in floats
// from the storage's start), and pack_rows_in_place() packs them where they lie.
PackedLinear rows_for_packing(int out, int in);
void pack_rows_in_place(PackedLinear& w);
// One panel ([depth][8], kv_layout.h) from `cols` (1 to 8) rows of a row-major f32 matrix, `stride`
// floats apart (row c becomes column c), columns past `cols` zero: a weight panel at load time, a
// unit's key panel in every prefill (flash_layout.h's unit_kv).
void pack_rows_into_panel(const float* rows, std::ptrdiff_t stride, int cols, int depth, float* panel);
// Output columns [begin, end) of a packed layer, packed on their own with the same stored values
// (and scales): the projection kernel then runs over those columns only.
PackedLinear slice_columns(const PackedLinear& w, int begin, int end);
// Makes an int8 or int4 layer multiply int8 activations (int8_activations): int8 codes move into
// row pairs (i8_row_pairs()), the same values.
void use_int8_activations(PackedLinear& w);

// One output of a projection: y[r, :out] = x[r, :] Wᵀ + b, row stride y_stride.
struct LinearTarget {
  const PackedLinear* weights;
  float* y;
  std::ptrdiff_t y_stride;
  // The weight panels computed, [panel_begin, panel_end) (clamped to panel_count()): output
  // columns [8·panel_begin, 8·panel_end). A few rows (a decode step) are split over threads by
  // panels (projection.cpp); each panel's results are the same whoever computes them.
  int panel_begin = 0;
  int panel_end = INT_MAX;
  int panels_end() const { return std::min(panel_end, weights->panel_count()); }
};

// Runs every target over the same input rows in one pass over x (Q, K and V projections of a
// shared input read each block of x once). x is [rows, in] with row stride x_stride.
void linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
            int target_count) noexcept;
// The same for targets of one storage type, one kernel per type (<type>_linear_<ISA>.cpp).
void f32_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets, int target_count) noexcept;
void f16_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets, int target_count) noexcept;
void bf16_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets, int target_count) noexcept;
void i8_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets, int target_count) noexcept;
void q4_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets, int target_count) noexcept;
// The same for int8 / int4 weights with int8 activations (PackedLinear::int8_activations): each
// input row quantised once per call, each block's dot product in int32 (<type>q8_linear_<ISA>.cpp).
void i8q8_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets, int target_count) noexcept;
void q4q8_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets, int target_count) noexcept;
// int8 activations for a call split over threads (projection.cpp): x [rows, in] quantised once by
// this ISA's kernels' rule (q8_rows.h), then each thread's targets (all int8_activations) over
// those rows, with the bits linear() gives. The ISA's i8q8 file defines quantise_activations.
struct Q8Rows;
void quantise_activations(const float* x, int rows, std::ptrdiff_t x_stride, int in, Q8Rows& q) noexcept;
void linear_quantised(const Q8Rows& q, const LinearTarget* targets, int target_count) noexcept;
void i8q8_linear_rows(const Q8Rows& q, const LinearTarget* targets, int target_count) noexcept;
void q4q8_linear_rows(const Q8Rows& q, const LinearTarget* targets, int target_count) noexcept;

// Optimised code early, for a cold start. V8 runs a WASM function in its baseline tier first and
// compiles it optimised, in the background, once the function has used a budget (~1.8 MB of
// baseline code run; each return counts the function's whole size, 3.6-4.4 KB for these kernels
// in V8 11.3, so ~500 calls). A kernel called with no work kRequestCalls times thus asks for its
// optimised code at once, which is then ready when the work comes, where a first forward used to
// run its projection's first panels and all its attention in the baseline tier while the compiler
// caught up (docs/performance/memory_and_startup.md#cold-start). Other engines only run the empty calls.
// Each asks once per module instance; later calls return at once.
constexpr int kRequestCalls = 800;
// The projection kernel of w's storage type (f32 on the SIMD128 modules; a no-op elsewhere).
void request_optimised_linear(const PackedLinear& w) noexcept;
// The flash attention's per-tile kernels over f32 K/V (key scores, weighted values).
void request_optimised_attention() noexcept;

// Scratch (in floats) that attention_unit() needs for this problem.
std::size_t attention_workspace_floats(const AttentionProblem& p);

// Attention for one unit of the problem (unit u: batch u / kv_heads, K/V head u % kv_heads, with
// its kv_group query heads), written to p.out (and p.weights when set). Never builds an L×S
// matrix unless weights are asked for. `workspace` holds attention_workspace_floats(p) floats,
// 16-byte aligned.
void attention_unit(const AttentionProblem& p, int unit, float* workspace) noexcept;

}  // namespace webattention::kernels
