// The storage types' value rules, one scalar place (docs/attention-math/storage.md §11): f32 to and from
// f16 and bf16 (round to nearest-even, NaN stays NaN, overflow to ±Inf), and the int8 block rule
// (symmetric, scale = max|x| / 127, q = round-half-to-even(x / scale), llama.cpp's q8_0), and the
// int4 block rule (llama.cpp's q4_0: codes 0-15 about a zero point, d = the signed extreme / -8). Weight
// packing and the KV cache's append write through these; the SIMD kernels widen with integer
// vector ops that give the same f32 values (kernels/simd128/widen_simd128.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "webattention/storage_type.h"

namespace webattention::storage {

// int8 and int4 weights: one scale per 32 input values of an output column (storage_type.h's table).
constexpr int kQuantBlock = storage_type_info(StorageType::i8).block;
// Blocks along a row of `in` values (the last one may be shorter).
constexpr int quant_blocks(int in) { return (in + kQuantBlock - 1) / kQuantBlock; }
static_assert(storage_type_info(StorageType::q4).block == kQuantBlock, "int8 and int4 share the block the kernels assume");

inline std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Rounds off the low `shift` bits of m, to nearest with ties to even.
inline std::uint32_t round_off(std::uint32_t m, int shift) {
  const std::uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  return q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
}

inline std::uint16_t f32_to_f16(float f) {
  const std::uint32_t x = bits_of(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));  // quiet NaN
  if (ax >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 65520: rounds to Inf
  if (ax < 0x38800000u) {  // below 2^-14: an f16 subnormal (or 0), in units of 2^-24
    const int e = static_cast<int>(ax >> 23);
    if (e < 102) return static_cast<std::uint16_t>(sign);  // below 2^-25: rounds to 0
    return static_cast<std::uint16_t>(sign | round_off((ax & 0x7FFFFFu) | 0x800000u, 126 - e));
  }
  // Normal: rebias the exponent (127 → 15), round 23 mantissa bits to 10 (a carry may step the
  // exponent, which is the right result).
  return static_cast<std::uint16_t>(sign | round_off(ax - (112u << 23), 13));
}

inline float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0) return sign ? -static_cast<float>(m) * 0x1p-24f : static_cast<float>(m) * 0x1p-24f;
  if (e == 31) return float_of(sign | 0x7F800000u | (m << 13));
  return float_of(sign | ((e + 112u) << 23) | (m << 13));
}

// Finite f16 weights are stored with every exponent raised by kF16Rebias (PackedLinear::f16_rebias)
// where no weight reaches 64 in magnitude: a subnormal is stored normalised (its fraction shifted
// up, its exponent below the f16 range raised into it), so every nonzero stored value has a
// nonzero exponent field. The SIMD decode step widens a weight by moving its bits into an f32
// (kernels/pair_panels_simd128.h); an f16 subnormal read that way is an f32 subnormal, which the
// multiply takes in a slow microcode path on x86 (a decode step ~12 % slower with 0.2 % of its
// weights subnormal, docs/performance/decode_kernels.md#decode-kernels). The values are unchanged:
// rebiased_f16_to_f32 gives back exactly the f16 value.
constexpr int kF16Rebias = 10;
constexpr std::uint16_t kF16RebiasLimit = (30 - kF16Rebias) << 10;  // largest exponent field rebiased

// h (finite, exponent field <= kF16RebiasLimit) stored with its exponent raised by kF16Rebias.
inline std::uint16_t rebias_f16(std::uint16_t h) {
  const std::uint32_t sign = h & 0x8000u, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e != 0) return static_cast<std::uint16_t>(sign | ((e + kF16Rebias) << 10) | m);
  if (m == 0) return h;  // ±0
  // m · 2^-24 = 1.f · 2^(t - 24), t the position of m's top bit: exponent field t - 9 + kF16Rebias.
  const int t = 31 - __builtin_clz(m);
  const std::uint32_t f = (m << (10 - t)) & 0x3FFu;
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(t - 9 + kF16Rebias) << 10) | f);
}

// 2^-rebias (rebias 0 or kF16Rebias): what a stored element of weights rebiased by `rebias`, read
// as an f16, is multiplied by to give its value (exactly: the f16 reading is a normal f32).
inline float rebias_unit(int rebias) { return rebias ? 0x1p-10f : 1.0f; }
static_assert(kF16Rebias == 10, "rebias_unit: 2^-kF16Rebias");

inline float rebiased_f16_to_f32(std::uint16_t code, int rebias) { return f16_to_f32(code) * rebias_unit(rebias); }

inline std::uint16_t f32_to_bf16(float f) {
  const std::uint32_t x = bits_of(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<std::uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

inline float bf16_to_f32(std::uint16_t b) { return float_of(static_cast<std::uint32_t>(b) << 16); }

// Element i of `count` values of type `type` at data, as f32 (exact: every storage value is an f32).
inline float widen(const void* data, StorageType type, std::size_t i) {
  switch (type) {
    case StorageType::f16: return f16_to_f32(static_cast<const std::uint16_t*>(data)[i]);
    case StorageType::bf16: return bf16_to_f32(static_cast<const std::uint16_t*>(data)[i]);
    case StorageType::i8: return static_cast<float>(static_cast<const std::int8_t*>(data)[i]);
    case StorageType::q4:  // never a source (the core refuses it as one)
    case StorageType::f32: break;
  }
  return static_cast<const float*>(data)[i];
}

// An f32 value rounded to a 16-bit type's bits (f16 or bf16).
inline std::uint16_t narrow16(float f, StorageType type) {
  return type == StorageType::bf16 ? f32_to_bf16(f) : f32_to_f16(f);
}

// One int8 block or row: q[i] = round-half-to-even(x[i] / scale) in [-127, 127], scale =
// max|x| / 127 (f32 arithmetic), each q[i] handed to put(i, q) where the caller's layout keeps it
// (no buffer between: the cache quantises a row per head at every decoding step). Returns the
// scale: 0 for an all-zero block (and for one whose scale underflows to 0: it stores zeros); NaN
// when a value is not finite (every q 0, so the block dequantises to NaN: q · NaN).
// max |x[i]| / 127 over n values (an f32 division): an int8 block's scale; NaN when a value is not finite.
inline float q8_scale(const float* x, int n) {
  float amax = 0.0f;
  bool finite = true;
  for (int i = 0; i < n; ++i) {
    finite = finite && std::isfinite(x[i]);
    amax = std::max(amax, std::fabs(x[i]));
  }
  return finite ? amax / 127.0f : NAN;
}

template <class Put>
float quantise_q8(const float* x, int n, Put&& put) {
  const float scale = q8_scale(x, n);
  for (int i = 0; i < n; ++i) {
    const float r = scale > 0.0f ? std::nearbyint(x[i] / scale) : 0.0f;
    put(i, static_cast<std::int8_t>(std::clamp(r, -127.0f, 127.0f)));
  }
  return scale;
}

// The same into q[0, n).
inline float quantise_q8(const float* x, int n, std::int8_t* q) {
  return quantise_q8(x, n, [q](int i, std::int8_t v) { q[i] = v; });
}

// One block of a projection's input row under activations 'int8' (docs/attention-math/storage.md §11):
// llama.cpp's quantize_row_q8_0 rule with d kept in f32, d = max|x| / 127 and q[i] = round(x[i] / d),
// halves away from zero (std::round; f32 division, so every ISA quantises alike); every q 0 for
// d = 0 (an all-zero block, or one whose max underflows). A non-finite value makes d NaN (every q
// 0): the block's products, and so the row's outputs, are NaN. Returns d.
inline float quantise_activations_q8(const float* x, int n, std::int8_t* q) {
  const float d = q8_scale(x, n);
  for (int i = 0; i < n; ++i) {
    const float r = d > 0.0f ? std::round(x[i] / d) : 0.0f;
    q[i] = static_cast<std::int8_t>(std::clamp(r, -127.0f, 127.0f));
  }
  return d;
}

// The stored value of one int8 element: the f32 product q · scale.
inline float dequantise(std::int8_t q, float scale) { return static_cast<float>(q) * scale; }

// One int4 block: llama.cpp's quantize_row_q4_0 rule, in f32 as it computes it. m = the value of
// largest magnitude, with its sign (the first of equal magnitudes); d = m / -8, id = 1 / d (0 for
// d = 0); q[i] = min(15, trunc(x[i] · id + 8.5)), handed to put(i, q); zero point 8, so the value
// of code q is (q - 8) · d: m itself is code 0, exactly, and -m would be 16, clamped to 15 (one
// step short). Returns d: 0 for an all-zero block (every code 8); NaN where a value is not finite
// (every code 8: the block dequantises to NaN). Where d is so small that 1 / d overflows, llama.cpp's
// cast of ±Inf or NaN is undefined; here an infinite t clamps to 0 or 15 and a NaN (0 · Inf) is
// code 8: the values that a finite id would round to.
constexpr int kQ4Zero = 8;  // the zero point of weights quantised at load
template <class Put>
float quantise_q4(const float* x, int n, Put&& put) {
  float amax = 0.0f, m = 0.0f;
  bool finite = true;
  for (int i = 0; i < n; ++i) {
    finite = finite && std::isfinite(x[i]);
    if (amax < std::fabs(x[i])) {
      amax = std::fabs(x[i]);
      m = x[i];
    }
  }
  const float d = finite ? m / -8.0f : NAN;
  const float id = finite && d != 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < n; ++i) {
    const float t = x[i] * id + 8.5f;
    const int q = t >= 15.0f ? 15 : t >= 0.0f ? static_cast<int>(t) : std::isnan(t) ? kQ4Zero : 0;
    put(i, static_cast<std::uint8_t>(q));
  }
  return d;
}

// The integer kernels' panels (int4, and int8 in row pairs) are each one stream of blocks: a
// block's codes for 32 rows of the panel's 8 columns, then those columns' 8 f32 scales. With the
// scales in an array of their own, a decode step's far panels (far_panels.h) were twice as many
// streams, and on a Zen 5 VM the int4 × int8 projection streamed from memory at 0.67x the rate it
// reached with the scales' streams taken away, int8 × int8 at 0.82x (bench/decode/projection/run.sh,
// COPIES=48; docs/performance/decode_kernels.md#decode-kernels).
constexpr int kScaleBytes = 8 * static_cast<int>(sizeof(float));  // a block's 8 columns' scales (kernels.h checks 8 = kPanelWidth)
struct ScaledBlocks {
  int code_bytes;  // a block's codes
  constexpr int block_bytes() const { return code_bytes + kScaleBytes; }
  // Bytes of a panel of `in` rows: whole blocks (a short last one padded).
  constexpr std::size_t panel_bytes(int in) const { return static_cast<std::size_t>(quant_blocks(in)) * block_bytes(); }
  // The scales' bytes that lie before row k's codes: those of the blocks before its own.
  constexpr std::size_t scales_before(int k) const { return static_cast<std::size_t>(k / kQuantBlock) * kScaleBytes; }
  // Block b's 8 scales: their byte in the panel.
  constexpr std::size_t scales_byte(int b) const { return static_cast<std::size_t>(b) * block_bytes() + code_bytes; }
  // Floats from one block's scales to the next's.
  constexpr int scale_stride() const { return block_bytes() / static_cast<int>(sizeof(float)); }
};

// int8 codes multiplied by int8 activations lie in row pairs (kernels.h's PackedLinear::i8_row_pairs):
// rows k and k + 1 (k even) of a column side by side, 16 bytes a pair of the panel's 8 columns,
// so that i32x4.dot_i16x8_s takes a pair as it loads; a block's 16 pairs (256 bytes), then its
// scales: 288-byte blocks, the rows past `in` zero codes.
constexpr int kI8PairBytes = 2 * 8;
constexpr ScaledBlocks kI8PairBlocks{kQuantBlock / 2 * kI8PairBytes};
// Row k's byte of column `column` in its panel (the pair's first byte: i8_pair_byte(k & ~1, 0)).
constexpr std::size_t i8_pair_byte(int k, int column) {
  return static_cast<std::size_t>(k / 2) * kI8PairBytes + kI8PairBlocks.scales_before(k) + 2 * column + (k & 1);
}
static_assert(i8_pair_byte(kQuantBlock, 0) == static_cast<std::size_t>(kI8PairBlocks.block_bytes()),
              "an int8 block's pairs, then its scales, then the next block's pairs");

// An int4 panel's codes (kernels.h's PackedLinear) lie in groups of 4 rows, 16 bytes a group:
// byte 2c + j holds column c's row 4g + j in its low nibble and its row 4g + 2 + j in its high one
// (j = 0, 1). The low nibbles of a group are then (column, rows 4g, 4g + 1) byte pairs, the high
// ones (column, rows 4g + 2, 4g + 3): with int8 activations each pair meets the input pair
// (x_k, x_k+1) in one dot product per lane and no shuffle (i32x4.dot_i16x8_s on the codes widened
// to int16, i16x8.relaxed_dot_i8x16_i7x16_s on the bytes: q4_codes_simd128.h,
// q8_relaxed_simd128.h). Read as 32-bit lanes, lane i holds the column pair (2i, 2i + 1), row j of
// the group at bit q4_row_shift(j) (pair_panels_simd128.h). Padding rows hold code 0 and meet
// inputs that are zero or never read.
// A block's 8 groups (128 bytes) are followed by its 8 columns' f32 scales (32 bytes): a panel
// is one stream of 160-byte blocks (ScaledBlocks above).
constexpr int kQ4GroupRows = 4;
constexpr int kQ4GroupBytes = 16;
constexpr ScaledBlocks kQ4Blocks{kQuantBlock / kQ4GroupRows * kQ4GroupBytes};
constexpr int q4_stored_rows(int in) { return (in + kQ4GroupRows - 1) / kQ4GroupRows * kQ4GroupRows; }
// Row k's byte of column `column` in its panel: its group's, past the scales of the blocks before it.
constexpr std::size_t q4_byte(int k, int column) {
  return static_cast<std::size_t>(k / kQ4GroupRows) * kQ4GroupBytes + kQ4Blocks.scales_before(k) + 2 * column + (k & 1);
}
// The end of the groups that hold rows [k0, k1) of one block (k0 a multiple of 4): a loop over
// them steps kQ4GroupBytes from q4_byte(k0, 0).
constexpr std::size_t q4_groups_end(int k0, int k1) {
  return q4_byte(k0, 0) + static_cast<std::size_t>(q4_stored_rows(k1 - k0)) / kQ4GroupRows * kQ4GroupBytes;
}
static_assert(q4_byte(kQuantBlock, 0) == static_cast<std::size_t>(kQ4Blocks.block_bytes()) &&
                  q4_groups_end(0, kQuantBlock) == static_cast<std::size_t>(kQ4Blocks.code_bytes),
              "a block's groups, then its scales, then the next block's groups");
// Row j (0-3) of a group: its bit in a 32-bit lane of the group (its even column's; the odd
// column's is 16 on), and in its byte, (k & 2) · 2.
constexpr int q4_row_shift(int j) { return (j & 1) * 8 + (j >> 1) * 4; }
inline int q4_code_at(const std::uint8_t* panel, int k, int column) {
  return (panel[q4_byte(k, column)] >> ((k & 2) * 2)) & 0xF;
}
inline void set_q4_code_at(std::uint8_t* panel, int k, int column, int code) {
  std::uint8_t& byte = panel[q4_byte(k, column)];
  const int shift = (k & 2) * 2;
  byte = static_cast<std::uint8_t>((byte & ~(0xF << shift)) | (code << shift));
}

// A block's 8 zero points lie in one 32-bit word: column 2i at bits [4i, 4i + 4), column 2i + 1 at
// [16 + 4i, 20 + 4i).
constexpr int q4_shift(int column) { return (column & 1) * 16 + (column >> 1) * 4; }
inline int q4_code(std::uint32_t word, int column) { return static_cast<int>((word >> q4_shift(column)) & 0xFu); }
// The zero-point word of a block whose 8 columns all have z = 8: every block quantised at load
// (llama.cpp's rule), every Q4_0 block, and MatMulNBits' default.
constexpr std::uint32_t kQ4EightEverywhere = 0x88888888u;
inline void set_q4_code(std::uint32_t& word, int column, int code) {
  word = (word & ~(0xFu << q4_shift(column))) | (static_cast<std::uint32_t>(code) << q4_shift(column));
}

// The stored value of one int4 element: the f32 product (q - z) · scale.
inline float dequantise_q4(int q, int z, float scale) { return static_cast<float>(q - z) * scale; }

// Whether n f32 values are all finite (no Inf, no NaN): an exponent that is not all ones, an
// integer test clang vectorises, where std::isfinite would be a compare and a branch per element.
inline bool all_finite(const float* x, std::size_t n) {
  std::uint32_t non_finite = 0;
  for (std::size_t i = 0; i < n; ++i) {
    non_finite |= static_cast<std::uint32_t>((bits_of(x[i]) & 0x7f800000u) == 0x7f800000u);
  }
  return non_finite == 0;
}

}  // namespace webattention::storage
