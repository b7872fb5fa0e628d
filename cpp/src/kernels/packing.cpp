// Weight packing, shared by every projection kernel: PyTorch's W [out, in] into the panel layout
// (kv_layout.h) in the module's storage type, converted or quantised on the way
// (storage_convert.h), and column slices of packed weights.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"

namespace webattention::kernels {
namespace {

using storage::kQuantBlock;

// A source matrix [out, in] of `type` elements, read as f32 (exactly).
struct Source {
  const void* data;
  StorageType type;
  int in;
  float at(int n, int k) const {
    return storage::widen(data, type, static_cast<std::size_t>(n) * in + k);
  }
  std::uint16_t bits16(int n, int k) const {
    return static_cast<const std::uint16_t*>(data)[static_cast<std::size_t>(n) * in + k];
  }
};

// Panel p: W rows [8p, 8p + 8) (output columns), written [in][8] with zero padding past `out`.
// One call per panel and one function per storage type, never inlined: V8 swaps in optimised code
// between calls, never during one, so packing a large layer at load time leaves its slow
// first-tier code after a few panels; a small function per type is compiled by the optimising
// tier sooner than one that holds every type's loop (a cold start's first loadStateDict packs in
// the first tier while it waits).

// Four floats, for the 4×4 transposes below: plain vector types, which clang compiles to WASM
// SIMD where the module has it (and to scalar code where not), GCC to SSE for the native tests.
typedef float Floats4 __attribute__((vector_size(16), aligned(4)));

Floats4 load4(const float* p) {
  Floats4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The 4×4 block at depths [k, k + 4) of source rows r[0..4) into lanes [lane, lane + 4) of panel
// rows k .. k + 3 (8 floats apart).
void transpose4(const float* const r[4], int k, float* dst, int lane) {
  const Floats4 a = load4(r[0] + k), b = load4(r[1] + k), c = load4(r[2] + k), d = load4(r[3] + k);
  const Floats4 ab_lo = __builtin_shufflevector(a, b, 0, 4, 1, 5), ab_hi = __builtin_shufflevector(a, b, 2, 6, 3, 7);
  const Floats4 cd_lo = __builtin_shufflevector(c, d, 0, 4, 1, 5), cd_hi = __builtin_shufflevector(c, d, 2, 6, 3, 7);
  const Floats4 out[4] = {__builtin_shufflevector(ab_lo, cd_lo, 0, 1, 4, 5), __builtin_shufflevector(ab_lo, cd_lo, 2, 3, 6, 7),
                          __builtin_shufflevector(ab_hi, cd_hi, 0, 1, 4, 5), __builtin_shufflevector(ab_hi, cd_hi, 2, 3, 6, 7)};
  for (int i = 0; i < 4; ++i) std::memcpy(dst + static_cast<std::size_t>(k + i) * kPanelWidth + lane, &out[i], sizeof out[i]);
}

// f32 from f32, the common case: output column c is source row c (`rows`: the panel's first, W
// row 8p), pack_rows_into_panel's transposes. A cold start's first loadStateDict packs in V8's
// first tier, where the transposes' vector loads, shuffles and stores ran ~4× faster than the
// strided copy of one float at a time.
__attribute__((noinline)) void pack_panel_f32_copy(const float* rows, int p, const PackedLinear& w) {
  pack_rows_into_panel(rows, w.in, w.panel_columns(p), w.in, w.elements<float>().panel(p));
}

// f32 storage from a 16-bit or int8 source, widened exactly.
__attribute__((noinline)) void pack_panel_f32(const Source& src, int p, const PackedLinear& w) {
  const int n0 = p * kPanelWidth, in = w.in, cols = w.panel_columns(p);
  const PanelMatrix<float> m = w.elements<float>();
  for (int k = 0; k < in; ++k)
    for (int c = 0; c < kPanelWidth; ++c) m.at(n0 + c, k) = c < cols ? src.at(n0 + c, k) : 0.0f;
}

__attribute__((noinline)) void pack_panel_16(const Source& src, int p, const PackedLinear& w) {
  const int n0 = p * kPanelWidth, in = w.in, cols = w.panel_columns(p);
  const PanelMatrix<std::uint16_t> m = w.elements<std::uint16_t>();
  const bool same = src.type == w.type;  // bits kept as they are
  for (int k = 0; k < in; ++k) {
    for (int c = 0; c < kPanelWidth; ++c) {
      m.at(n0 + c, k) = c >= cols ? 0 : same ? src.bits16(n0 + c, k) : storage::narrow16(src.at(n0 + c, k), w.type);
    }
  }
}

// The quantised types' blocks of panel p: each column's blocks of 32 (padding columns all
// zeros) handed to quantise(c, k0, x, n), x[0, n) the block's values from depth k0, which stores
// the codes and returns the block's scale, stored here.
template <class Quantise>
void quantise_blocks(const Source& src, int p, const PackedLinear& w, Quantise&& quantise) {
  const int n0 = p * kPanelWidth, cols = w.panel_columns(p);
  for (int c = 0; c < kPanelWidth; ++c) {
    for (int b = 0; b < w.scale_blocks(); ++b) {
      const int k0 = b * kQuantBlock, n = std::min(kQuantBlock, w.in - k0);
      float x[kQuantBlock];
      for (int k = 0; k < n; ++k) x[k] = c < cols ? src.at(n0 + c, k0 + k) : 0.0f;
      w.block_scales(p, b)[c] = quantise(c, k0, x, n);
    }
  }
}

__attribute__((noinline)) void pack_panel_i8(const Source& src, int p, const PackedLinear& w) {
  const int n0 = p * kPanelWidth;
  quantise_blocks(src, p, w, [&](int c, int k0, const float* x, int n) {
    return storage::quantise_q8(x, n, [&](int k, std::int8_t q) { w.i8_code(n0 + c, k0 + k) = q; });
  });
}

// int4: each block's codes (storage::quantise_q4) into their nibbles of the panel's groups
// (padding columns: scale 0, code 8; padding rows: code 0); zero points 8.
__attribute__((noinline)) void pack_panel_q4(const Source& src, int p, const PackedLinear& w) {
  std::uint8_t* codes = w.q4_panel(p);
  std::fill(codes, codes + w.scaled_panel_bytes(), std::uint8_t{0});
  std::uint32_t* zeros = w.panel_zero_points(p);
  static_assert(storage::kQ4Zero == 8, "the zero-point words are 8 in every nibble");
  std::fill(zeros, zeros + w.scale_blocks(), 0x88888888u);
  quantise_blocks(src, p, w, [&](int c, int k0, const float* x, int n) {
    return storage::quantise_q4(x, n, [&](int k, std::uint8_t q) { storage::set_q4_code_at(codes, k0 + k, c, q); });
  });
}

void pack_panel(const Source& src, int p, const PackedLinear& w) {
  switch (w.type) {
    case StorageType::f32:
      if (src.type == StorageType::f32) {
        return pack_panel_f32_copy(static_cast<const float*>(src.data) + static_cast<std::size_t>(p) * kPanelWidth * src.in, p, w);
      }
      return pack_panel_f32(src, p, w);
    case StorageType::f16:
    case StorageType::bf16: return pack_panel_16(src, p, w);
    case StorageType::i8: return pack_panel_i8(src, p, w);
    case StorageType::q4: return pack_panel_q4(src, p, w);
  }
}

PackedLinear allocate(StorageType type, int out, int in, bool int8_activations = false) {
  PackedLinear w;
  w.in = in;
  w.out = out;
  w.type = type;
  w.int8_activations = int8_activations;
  const std::size_t elements = static_cast<std::size_t>(whole_panels(out)) * w.panel_depth();
  // int4 and int8 row pairs: blocks of codes and their scales, a panel's rows rounded up to whole blocks.
  const std::size_t panels = static_cast<std::size_t>(w.panel_count());
  if (w.scaled_blocks()) {
    w.storage = aligned_bytes(panels * w.scaled_panel_bytes());
  } else {
    w.storage = aligned_bytes(elements * storage_element_bytes(type));
  }
  if (type == StorageType::i8 && !w.i8_row_pairs()) w.scales.reset(new float[panels * w.scale_blocks() * kPanelWidth]);
  if (type == StorageType::q4) {
    w.zero_point_panel_words = static_cast<std::size_t>(w.scale_blocks());
    w.zero_points.reset(new std::uint32_t[w.panel_count() * w.zero_point_panel_words]);
  }
  return w;
}

}  // namespace

// Full panels 4×4 blocks transposed at a time, the depths left (depth % 4) and a short panel's
// columns copied down their lanes; the padding columns zeros.
void pack_rows_into_panel(const float* rows, std::ptrdiff_t stride, int cols, int depth, float* panel) {
  int done = 0;  // depths [0, done) of a full panel are packed
  if (cols == kPanelWidth) {
    const float* lo[4] = {rows, rows + stride, rows + 2 * stride, rows + 3 * stride};
    const float* hi[4] = {rows + 4 * stride, rows + 5 * stride, rows + 6 * stride, rows + 7 * stride};
    for (; done + 4 <= depth; done += 4) {
      transpose4(lo, done, panel, 0);
      transpose4(hi, done, panel, 4);
    }
  }
  for (int c = 0; c < cols; ++c) {
    const float* src = rows + c * stride;
    for (int k = done; k < depth; ++k) panel[static_cast<std::size_t>(k) * kPanelWidth + c] = src[k];
  }
  for (int c = cols; c < kPanelWidth; ++c) {
    for (int k = 0; k < depth; ++k) panel[static_cast<std::size_t>(k) * kPanelWidth + c] = 0.0f;
  }
}

float PackedLinear::weight(int n, int k) const {
  switch (type) {
    case StorageType::f32: return elements<const float>().at(n, k);
    case StorageType::f16: return storage::rebiased_f16_to_f32(elements<const std::uint16_t>().at(n, k), f16_rebias);
    case StorageType::bf16: return storage::bf16_to_f32(elements<const std::uint16_t>().at(n, k));
    case StorageType::i8:
      return storage::dequantise(i8_code(n, k),
                                 block_scales(n / kPanelWidth, k / kQuantBlock)[n % kPanelWidth]);
    case StorageType::q4: {
      const int p = n / kPanelWidth, c = n % kPanelWidth;
      return storage::dequantise_q4(storage::q4_code_at(q4_panel(p), k, c),
                                    storage::q4_code(panel_zero_points(p)[k / kQuantBlock], c),
                                    block_scales(p, k / kQuantBlock)[c]);
    }
  }
  return 0.0f;
}

void PackedLinear::share_eights_zero_points() {
  const std::size_t words = static_cast<std::size_t>(panel_count()) * zero_point_panel_words;
  if (std::any_of(zero_points.get(), zero_points.get() + words, [](std::uint32_t z) { return z != storage::kQ4EightEverywhere; })) return;
  zero_point_panel_words = 0;
  zero_points.reset(new std::uint32_t[static_cast<std::size_t>(scale_blocks())]);
  std::fill(zero_points.get(), zero_points.get() + scale_blocks(), storage::kQ4EightEverywhere);
}

PackedLinear pack_linear(const void* weight, StorageType source, int out, int in, StorageType type) {
  PackedLinear w = allocate(type, out, in);
  const Source src{weight, source, in};
  for (int p = 0; p < w.panel_count(); ++p) pack_panel(src, p, w);
  if (type == StorageType::q4) w.share_eights_zero_points();
  if (type == StorageType::f16) {
    std::uint16_t* bits = w.elements<std::uint16_t>().data;
    const std::size_t n = static_cast<std::size_t>(whole_panels(out)) * in;
    std::uint16_t widest = 0;  // the largest exponent field
    for (std::size_t i = 0; i < n; ++i) widest = std::max<std::uint16_t>(widest, bits[i] & 0x7C00u);
    w.finite = widest != 0x7C00u;
    if (widest <= storage::kF16RebiasLimit) {
      for (std::size_t i = 0; i < n; ++i) bits[i] = storage::rebias_f16(bits[i]);
      w.f16_rebias = storage::kF16Rebias;
    }
  }
  return w;
}

namespace {

// pack_quantised's panel p, compiled for size: its loops over the panel's columns, unrolled and
// vectorised for both types, were 18 KB of the module, which every cold start compiles, for a
// path only quantised checkpoints take, once per weight.
#if defined(__clang__)
#define WEBATTENTION_PACK_FOR_SIZE __attribute__((noinline, minsize))
#else
#define WEBATTENTION_PACK_FOR_SIZE __attribute__((noinline))
#endif

WEBATTENTION_PACK_FOR_SIZE void pack_quantised_scales(const QuantisedSource& src, int p, const PackedLinear& w) {
  const int n0 = p * kPanelWidth, cols = w.panel_columns(p), blocks = w.scale_blocks();
  // Padding columns as packing writes them: all-zero blocks (scale 0, int4 codes at the zero point 8).
  for (int c = 0; c < kPanelWidth; ++c) {
    for (int b = 0; b < blocks; ++b) w.block_scales(p, b)[c] = c < cols ? src.scales[static_cast<std::size_t>(n0 + c) * blocks + b] : 0.0f;
  }
}

WEBATTENTION_PACK_FOR_SIZE void pack_quantised_i8(const QuantisedSource& src, int p, const PackedLinear& w) {
  const int n0 = p * kPanelWidth, cols = w.panel_columns(p), in = w.in;
  const auto* codes = static_cast<const std::int8_t*>(src.codes);
  for (int c = 0; c < kPanelWidth; ++c)
    for (int k = 0; k < in; ++k) w.i8_code(n0 + c, k) = c < cols ? codes[static_cast<std::size_t>(n0 + c) * in + k] : 0;
}

WEBATTENTION_PACK_FOR_SIZE void pack_quantised_q4(const QuantisedSource& src, int p, const PackedLinear& w) {
  const int n0 = p * kPanelWidth, cols = w.panel_columns(p), in = w.in, blocks = w.scale_blocks();
  std::uint8_t* panel = w.q4_panel(p);
  std::fill(panel, panel + w.scaled_panel_bytes(), std::uint8_t{0});
  std::uint32_t* zeros = w.panel_zero_points(p);
  const auto* codes = static_cast<const std::uint8_t*>(src.codes);
  for (int c = 0; c < kPanelWidth; ++c) {
    const std::size_t row = static_cast<std::size_t>(n0 + c);
    for (int k = 0; k < in; ++k) storage::set_q4_code_at(panel, k, c, c < cols ? codes[row * in + k] : storage::kQ4Zero);
    for (int b = 0; b < blocks; ++b) storage::set_q4_code(zeros[b], c, c < cols ? src.zero_points[row * blocks + b] : storage::kQ4Zero);
  }
}

#undef WEBATTENTION_PACK_FOR_SIZE

}  // namespace

PackedLinear pack_quantised(const QuantisedSource& src, int out, int in, StorageType type) {
  PackedLinear w = allocate(type, out, in);
  for (int p = 0; p < w.panel_count(); ++p) {
    if (type == StorageType::i8) {
      pack_quantised_i8(src, p, w);
    } else {
      pack_quantised_q4(src, p, w);  // zero-fills the panel, its scales' places too
    }
    pack_quantised_scales(src, p, w);
  }
  if (type == StorageType::q4) w.share_eights_zero_points();
  return w;
}

PackedLinear rows_for_packing(int out, int in) { return allocate(StorageType::f32, out, in); }

void pack_rows_in_place(PackedLinear& w) {
  // Panel p takes the same floats, [8p·in, (8p + 8)·in), as W rows [8p, 8p + 8) do: each panel's
  // rows go through a copy the size of one panel, then down their lanes.
  std::vector<float> rows(static_cast<std::size_t>(kPanelWidth) * w.in);
  for (int p = 0; p < w.panel_count(); ++p) {
    const float* panel = w.panel(p);
    std::copy(panel, panel + static_cast<std::size_t>(w.panel_columns(p)) * w.in, rows.begin());
    pack_panel_f32_copy(rows.data(), p, w);
  }
}

PackedLinear pack_linear(const float* weight, int out, int in) {
  return pack_linear(weight, StorageType::f32, out, in, StorageType::f32);
}

namespace {

// Column `from` of w's scales into column n of s's, every block (a padding column's: 0), int8 or int4.
void copy_column_scales(const PackedLinear& w, int from, PackedLinear& s, int n, bool real) {
  for (int b = 0; b < s.scale_blocks(); ++b) {
    s.block_scales(n / kPanelWidth, b)[n % kPanelWidth] = real ? w.block_scales(from / kPanelWidth, b)[from % kPanelWidth] : 0.0f;
  }
}

// slice_columns for int4: each column's codes, scales and zero points moved nibble by nibble into
// its new panel and lane (padding columns: all-zero blocks, as packing writes them).
void slice_q4_columns(const PackedLinear& w, int begin, PackedLinear& s) {
  std::fill(s.q4_panel(0), s.q4_panel(s.panel_count()), std::uint8_t{0});  // padding rows too
  for (int n = 0; n < whole_panels(s.out); ++n) {
    const bool real = n < s.out;
    const int from = begin + n, c = n % kPanelWidth, fc = from % kPanelWidth;
    std::uint8_t* codes = s.q4_panel(n / kPanelWidth);
    std::uint32_t* zeros = s.panel_zero_points(n / kPanelWidth);
    for (int k = 0; k < w.in; ++k) {
      storage::set_q4_code_at(codes, k, c, real ? storage::q4_code_at(w.q4_panel(from / kPanelWidth), k, fc) : storage::kQ4Zero);
    }
    for (int b = 0; b < s.scale_blocks(); ++b) {
      storage::set_q4_code(zeros[b], c, real ? storage::q4_code(w.panel_zero_points(from / kPanelWidth)[b], fc) : storage::kQ4Zero);
    }
    copy_column_scales(w, from, s, n, real);
  }
}

// slice_columns for int8, and use_int8_activations: every code of w (either layout) into s's
// layout, with its scales, columns [begin, begin + s.out) to [0, s.out); padding columns, and the
// zero row after an odd last one, are zeros (all-zero blocks).
void copy_i8_columns(const PackedLinear& w, int begin, PackedLinear& s) {
  for (int n = 0; n < whole_panels(s.out); ++n) {
    const bool real = n < s.out;
    const int from = begin + n;
    for (int k = 0; k < static_cast<int>(s.panel_depth()); ++k) s.i8_code(n, k) = real && k < w.in ? w.i8_code(from, k) : 0;
    copy_column_scales(w, from, s, n, real);
  }
}

}  // namespace

PackedLinear slice_columns(const PackedLinear& w, int begin, int end) {
  PackedLinear s = allocate(w.type, end - begin, w.in, w.int8_activations);
  if (w.type == StorageType::q4 || w.type == StorageType::i8) {
    if (w.type == StorageType::q4) {
      slice_q4_columns(w, begin, s);
      s.share_eights_zero_points();
    } else {
      copy_i8_columns(w, begin, s);
    }
    if (!w.bias.empty()) s.set_bias(w.bias.data() + begin, end - begin);
    return s;
  }
  s.finite = w.finite;  // a slice of finite weights is finite (and a maybe-not stays maybe-not)
  s.f16_rebias = w.f16_rebias;  // the bits are copied as they are
  const int bytes = storage_element_bytes(w.type);
  const PanelMatrix<unsigned char> from{w.storage.get(), static_cast<std::size_t>(w.in) * bytes};
  const PanelMatrix<unsigned char> to{s.storage.get(), static_cast<std::size_t>(w.in) * bytes};
  // f32, f16, bf16: element bytes move as they are: column n at depth k is bytes [k·8·bytes + (n % 8)·bytes, ...)
  // of its panel, so a panel of `bytes`-wide elements is a panel of bytes with `bytes` rows per k.
  for (int n = 0; n < whole_panels(s.out); ++n) {
    const bool real = n < s.out;
    unsigned char* dst0 = to.panel(n / kPanelWidth) + (n % kPanelWidth) * bytes;
    const unsigned char* src0 = real ? from.panel((begin + n) / kPanelWidth) + ((begin + n) % kPanelWidth) * bytes : nullptr;
    for (int k = 0; k < w.in; ++k) {
      const std::size_t at = static_cast<std::size_t>(k) * kPanelWidth * bytes;
      for (int i = 0; i < bytes; ++i) dst0[at + i] = real ? src0[at + i] : 0;
    }
  }
  if (!w.bias.empty()) s.set_bias(w.bias.data() + begin, end - begin);
  return s;
}

void use_int8_activations(PackedLinear& w) {
  if (w.type != StorageType::i8 || w.int8_activations) {
    w.int8_activations = true;
    return;
  }
  PackedLinear paired = allocate(w.type, w.out, w.in, true);
  copy_i8_columns(w, 0, paired);
  paired.bias = std::move(w.bias);
  w = std::move(paired);
}

}  // namespace webattention::kernels
