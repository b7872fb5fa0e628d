// The int4 × int8 one-row loop's limit, per storage layout and instruction set (issue 37): one
// input row of int8 codes times an int4 weight matrix (K = N = 2048, blocks of 32, ~2 MB of codes:
// in L3, so the loops' instruction count bounds them, not memory), each form's exact integer
// block sums checked against a plain loop. The forms (storage_convert.h names the package's layout):
//   row words  + SIMD128   the layout before: a panel row's 8 codes in one 32-bit word; each nibble
//                          masked out of 4 rows' words, times the input codes doubled, i16x8.mul
//                          and add, the lanes regrouped per block (14 vector ops per 32 weights)
//   row words  + relaxed   the same words shuffled into (column, row pair) bytes, then
//                          i16x8.relaxed_dot_i8x16_i7x16_s (9 ops, two of them byte shuffles)
//   groups     + SIMD128   the package's layout (4 rows in 16 bytes, (column, rows k, k+1) byte
//                          pairs): nibbles widened, i32x4.dot_i16x8_s with the input pair (15 ops)
//   groups     + relaxed   the same bytes as they lie into the relaxed dot (7 ops)
// Built by run.sh; prints ns per weight (the best of 30 passes) per form.
#include <wasm_simd128.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>

#include <emscripten.h>

#include "kernels/simd128/relaxed_dot_simd128.h"

namespace {

constexpr int K = 2048, N = 2048, kPanels = N / 8, kBlocks = K / 32;
std::vector<int> codes_of;  // [N][K], 0-15
std::vector<int> x_of;      // [K], -127..127
alignas(16) std::uint32_t row_words[kPanels * K];
alignas(16) std::uint8_t groups[kPanels * K * 4];
alignas(16) std::int16_t x_doubled[2 * K];    // (x_0, x_0, x_1, x_1, ...)
alignas(16) std::int16_t x_row_pairs[2 * K];  // per 4 rows: (x_k, x_k+1) bytes ×4, then (x_k+2, x_k+3) ×4
alignas(16) std::int16_t x_wide[K];           // int16 codes
alignas(16) std::int8_t x_bytes[K];           // int8 codes
alignas(16) std::int32_t out[N];

// i16x8.relaxed_dot_i8x16_i7x16_s: the package's stand-in (relaxed_dot_simd128.h), whose opcode
// run.sh rewrites as the package's build does (scripts/relaxed_simd_opcodes.py).
using webattention::kernels::relaxed_dot_i16;

v128_t pair_columns(v128_t a, v128_t c) {
  const v128_t rows02 = wasm_i16x8_add(wasm_i32x4_shuffle(a, c, 0, 1, 4, 5), wasm_i32x4_shuffle(a, c, 2, 3, 6, 7));
  return wasm_i32x4_dot_i16x8(wasm_i16x8_shuffle(rows02, rows02, 0, 2, 1, 3, 4, 6, 5, 7), wasm_i16x8_splat(1));
}

// out = the codes times x, panel by panel: block(p, b, lo, hi) adds panel p's block b (columns 0-3
// into lo, 4-7 into hi).
template <class Block>
__attribute__((always_inline)) inline void each_panel(Block&& block) {
  for (int p = 0; p < kPanels; ++p) {
    v128_t lo = wasm_i32x4_splat(0), hi = lo;
    for (int b = 0; b < kBlocks; ++b) block(p, b, lo, hi);
    wasm_v128_store(out + 8 * p, lo);
    wasm_v128_store(out + 8 * p + 4, hi);
  }
}

// A block's 8 groups of 4 row words: f(v, x) per group, x the input table (8 int16 per 4 rows) there.
template <class F>
__attribute__((always_inline)) inline void each_row_words(int p, int b, const std::int16_t* x_table, F&& f) {
  const std::uint32_t *w = row_words + p * K + b * 32, *end = w + 32;
  const std::int16_t* x = x_table + 2 * b * 32;
  __asm__("" : "+r"(end));
#pragma clang loop unroll_count(2)
  for (; w != end; w += 4, x += 8) f(wasm_v128_load(w), wasm_v128_load(x));
}

__attribute__((noinline)) void row_words_simd128() {
  const v128_t mask = wasm_i16x8_splat(0x000F);
  each_panel([&](int p, int b, v128_t& lo, v128_t& hi) {
    v128_t a0 = wasm_i16x8_splat(0), a1 = a0, a2 = a0, a3 = a0;
    each_row_words(p, b, x_doubled, [&](v128_t v, v128_t xk) {
      a0 = wasm_i16x8_add(a0, wasm_i16x8_mul(wasm_v128_and(v, mask), xk));
      a1 = wasm_i16x8_add(a1, wasm_i16x8_mul(wasm_v128_and(wasm_u16x8_shr(v, 4), mask), xk));
      a2 = wasm_i16x8_add(a2, wasm_i16x8_mul(wasm_v128_and(wasm_u16x8_shr(v, 8), mask), xk));
      a3 = wasm_i16x8_add(a3, wasm_i16x8_mul(wasm_u16x8_shr(v, 12), xk));
    });
    lo = wasm_i32x4_add(lo, pair_columns(a0, a1));
    hi = wasm_i32x4_add(hi, pair_columns(a2, a3));
  });
}

__attribute__((noinline)) void row_words_relaxed() {
  const v128_t mask = wasm_i8x16_splat(0x0F);
  each_panel([&](int p, int b, v128_t& lo, v128_t& hi) {
    v128_t al = wasm_i16x8_splat(0), ah = al;
    each_row_words(p, b, x_row_pairs, [&](v128_t v, v128_t xx) {
      const v128_t l = wasm_v128_and(v, mask), h = wasm_v128_and(wasm_u16x8_shr(v, 4), mask);
      al = wasm_i16x8_add(al, relaxed_dot_i16(xx, wasm_i8x16_shuffle(l, l, 0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15)));
      ah = wasm_i16x8_add(ah, relaxed_dot_i16(xx, wasm_i8x16_shuffle(h, h, 0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15)));
    });
    // al: columns 0, 4, 1, 5 (rows k, k+1) then the same (k+2, k+3); ah: 2, 6, 3, 7.
    const v128_t sl = wasm_i32x4_add(wasm_i32x4_extend_low_i16x8(al), wasm_i32x4_extend_high_i16x8(al));
    const v128_t sh = wasm_i32x4_add(wasm_i32x4_extend_low_i16x8(ah), wasm_i32x4_extend_high_i16x8(ah));
    lo = wasm_i32x4_add(lo, wasm_i32x4_shuffle(sl, sh, 0, 2, 4, 6));
    hi = wasm_i32x4_add(hi, wasm_i32x4_shuffle(sl, sh, 1, 3, 5, 7));
  });
}

// A block's 8 groups of 4 rows: f(v, x) per group, v its 16 bytes, x the input at its first row.
template <class X, class F>
__attribute__((always_inline)) inline void each_group(int p, int b, const X* x_row, F&& f) {
  const std::uint8_t *w = groups + (p * K + b * 32) * 4, *end = w + 32 * 4;
  const X* x = x_row + b * 32;
  __asm__("" : "+r"(end));
#pragma clang loop unroll_count(2)
  for (; w != end; w += 16, x += 4) f(wasm_v128_load(w), x);
}

__attribute__((noinline)) void groups_simd128() {
  const v128_t mask = wasm_i8x16_splat(0x0F);
  each_panel([&](int p, int b, v128_t& lo, v128_t& hi) {
    v128_t al = wasm_i32x4_splat(0), ah = al;
    each_group(p, b, x_wide, [&](v128_t v, const std::int16_t* x) {
      const v128_t x01 = wasm_v128_load32_splat(x), x23 = wasm_v128_load32_splat(x + 2);
      const v128_t l = wasm_v128_and(v, mask), h = wasm_v128_and(wasm_u16x8_shr(v, 4), mask);
      al = wasm_i32x4_add(al, wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_u16x8_extend_low_u8x16(l), x01),
                                             wasm_i32x4_dot_i16x8(wasm_u16x8_extend_low_u8x16(h), x23)));
      ah = wasm_i32x4_add(ah, wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_u16x8_extend_high_u8x16(l), x01),
                                             wasm_i32x4_dot_i16x8(wasm_u16x8_extend_high_u8x16(h), x23)));
    });
    lo = wasm_i32x4_add(lo, al);
    hi = wasm_i32x4_add(hi, ah);
  });
}

__attribute__((noinline)) void groups_relaxed() {
  const v128_t mask = wasm_i8x16_splat(0x0F);
  each_panel([&](int p, int b, v128_t& lo, v128_t& hi) {
    v128_t a01 = wasm_i16x8_splat(0), a23 = a01;
    each_group(p, b, x_bytes, [&](v128_t v, const std::int8_t* x) {
      a01 = wasm_i16x8_add(a01, relaxed_dot_i16(wasm_v128_load16_splat(x), wasm_v128_and(v, mask)));
      a23 = wasm_i16x8_add(a23, relaxed_dot_i16(wasm_v128_load16_splat(x + 2), wasm_v128_and(wasm_u16x8_shr(v, 4), mask)));
    });
    lo = wasm_i32x4_add(lo, wasm_i32x4_add(wasm_i32x4_extend_low_i16x8(a01), wasm_i32x4_extend_low_i16x8(a23)));
    hi = wasm_i32x4_add(hi, wasm_i32x4_add(wasm_i32x4_extend_high_i16x8(a01), wasm_i32x4_extend_high_i16x8(a23)));
  });
}

void fill() {
  std::srand(1);
  codes_of.resize(static_cast<std::size_t>(N) * K);
  x_of.resize(K);
  for (auto& q : codes_of) q = std::rand() % 16;
  for (auto& x : x_of) x = std::rand() % 255 - 127;
  const auto code = [](int n, int k) { return codes_of[static_cast<std::size_t>(n) * K + k]; };
  for (int p = 0; p < kPanels; ++p)
    for (int k = 0; k < K; ++k)
      for (int c = 0; c < 8; ++c) row_words[p * K + k] |= static_cast<std::uint32_t>(code(8 * p + c, k)) << ((c & 1) * 16 + (c >> 1) * 4);
  for (int p = 0; p < kPanels; ++p)
    for (int k = 0; k < K; ++k)
      for (int c = 0; c < 8; ++c) groups[(p * K + k / 4 * 4) * 4 + 2 * c + (k & 1)] |= code(8 * p + c, k) << ((k & 2) * 2);
  const auto byte_pair = [](int a, int b) { return static_cast<std::int16_t>(static_cast<std::uint8_t>(a) | static_cast<std::uint8_t>(b) << 8); };
  for (int k = 0; k < K; ++k) x_doubled[2 * k] = x_doubled[2 * k + 1] = x_wide[k] = static_cast<std::int16_t>(x_of[k]), x_bytes[k] = static_cast<std::int8_t>(x_of[k]);
  for (int k = 0; k < K; k += 4)
    for (int i = 0; i < 4; ++i) x_row_pairs[2 * k + i] = byte_pair(x_of[k], x_of[k + 1]), x_row_pairs[2 * k + 4 + i] = byte_pair(x_of[k + 2], x_of[k + 3]);
}

// scripts/relaxed_simd_opcodes.py rewrites both prototype opcodes and wants each present.
__attribute__((noinline)) float fma_present(float a) {
  const v128_t v = wasm_f32x4_splat(a);
  return wasm_f32x4_extract_lane(__builtin_wasm_fma_f32x4(v, v, v), 0);
}

int wrong() {
  int bad = 0;
  for (int n = 0; n < N; ++n) {
    long sum = 0;
    for (int k = 0; k < K; ++k) sum += static_cast<long>(codes_of[static_cast<std::size_t>(n) * K + k]) * x_of[k];
    bad += out[n] != sum;
  }
  return bad;
}

}  // namespace

int main(int argc, char**) {
  if (argc > 99) std::printf("%f\n", fma_present(static_cast<float>(argc)));
  fill();
  const struct { const char* name; void (*run)(); } forms[] = {
      {"row words + SIMD128", row_words_simd128}, {"row words + relaxed", row_words_relaxed},
      {"groups + SIMD128", groups_simd128}, {"groups + relaxed", groups_relaxed}};
  for (const auto& form : forms) {
    double best = 1e30;
    for (int pass = 0; pass < 30; ++pass) {
      const double t0 = emscripten_get_now();
      form.run();
      best = std::min(best, emscripten_get_now() - t0);
    }
    std::printf("%-22s %.4f ns/weight  (%d of %d sums wrong)\n", form.name, best * 1e6 / (double(K) * N), wrong(), N);
  }
}
