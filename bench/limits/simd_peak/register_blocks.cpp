// What a matrix kernel's inner loop reaches in WASM, per engine: an R × C register block of f32x4
// accumulators, acc[r][c] += broadcast(x[r][k]) · w[k][c], over operands that stay in L1 (as in
// the flash kernel's 4 × 8 block and the one-row panel loop), for each of
//   madd:      relaxed FMA (f32x4.relaxed_madd) or f32x4.mul + f32x4.add;
//   broadcast: v128.load32_splat (with AVX a vbroadcastss from memory, on a load port; clang 14
//              emits it for f32x4.splat of a loaded float too) or a v128.load of a pre-broadcast
//              copy;
// and the latency-bound limit: N independent chains c = c·x + y with no loads; and the integer
// dot products' own rate (the int8-activation kernels' multiply-adds, issue 37): N chains
// c = dot(c, b) + d of i32x4.dot_i16x8_s (8 products), or of i16x8.relaxed_dot_i8x16_i7x16_s
// (16 products) with an i16x8.add, reported as 2 operations per product so that a line compares
// with the f32 lines' GFLOP/s (f32x4 mul + add: 4 products per 2 instructions).
// Built by run.sh (one module, relaxed SIMD; the mul + add rows are what the SIMD128 module can do)
// and run in Node, Chromium and Firefox (bench/limits/simd_peak/engines.mjs). Prints one line per case.
// Measured results and what they mean: docs/performance/platform.md#relaxed-simd and #machine-limits.
#include <emscripten.h>
#include <wasm_simd128.h>

#include <cstdio>

#include "kernels/simd128/relaxed_dot_simd128.h"

namespace {

enum class Madd { fma, mul_add };
enum class Broadcast { load_splat, prebroadcast };

template <Madd M>
__attribute__((always_inline)) inline v128_t madd(v128_t a, v128_t b, v128_t c) {
  if constexpr (M == Madd::fma) return __builtin_wasm_fma_f32x4(a, b, c);  // a·b + c, patched by run.sh
  else return wasm_f32x4_add(wasm_f32x4_mul(a, b), c);
}

constexpr int kDepth = 64;                 // k per pass: x is R × 64 floats, w 64 × 4C: in L1
alignas(16) float g_x[8 * kDepth * 4];     // x[r][k] (and its ×4 broadcast copy)
alignas(16) float g_w[kDepth * 4 * 8];
volatile float g_sink;
volatile float g_one = 1.0f, g_zero = 0.0f;  // read at run time: no constant folding
// The start time, kept in memory: a double live in a register through the loop would take one of
// the registers the loop gets.
volatile double g_t0;

template <Broadcast B, int R>
__attribute__((always_inline)) inline v128_t broadcast(const float* x, int r, int k) {
  if constexpr (B == Broadcast::load_splat) return wasm_v128_load32_splat(x + r * kDepth + k);
  else return wasm_v128_load(x + 4 * (r * kDepth + k));
}

// `passes` sweeps of k over the block; returns GFLOP/s.
template <Madd M, Broadcast B, int R, int C>
__attribute__((noinline)) double block(int passes) {
  v128_t acc[R][C];
  for (auto& row : acc)
    for (auto& a : row) a = wasm_f32x4_splat(0.0f);
  g_t0 = emscripten_get_now();
  for (int p = 0; p < passes; ++p) {
    const float* w = g_w;
    for (int k = 0; k < kDepth; ++k, w += 4 * C) {
      v128_t wv[C];
      for (int c = 0; c < C; ++c) wv[c] = wasm_v128_load(w + 4 * c);
      for (int r = 0; r < R; ++r) {
        const v128_t s = broadcast<B, R>(g_x, r, k);
        for (int c = 0; c < C; ++c) acc[r][c] = madd<M>(s, wv[c], acc[r][c]);
      }
    }
  }
  // The accumulators are consumed before the clock is read: live across that call (an import),
  // SpiderMonkey would keep them in the stack frame through the whole loop.
  v128_t sum = wasm_f32x4_splat(0.0f);
  for (auto& row : acc)
    for (auto& a : row) sum = wasm_f32x4_add(sum, a);
  g_sink = wasm_f32x4_extract_lane(sum, 0);
  const double ms = emscripten_get_now() - g_t0;
  return 8.0 * R * C * kDepth * passes / ms / 1e6;
}

// N chains c = c·x + y: only latency and the FP ports limit it.
template <Madd M, int N>
__attribute__((noinline)) double chains(int iterations, float x, float y) {
  const v128_t xv = wasm_f32x4_splat(x), yv = wasm_f32x4_splat(y);
  v128_t c[N];
  for (int i = 0; i < N; ++i) c[i] = wasm_f32x4_splat(static_cast<float>(i));
  g_t0 = emscripten_get_now();
  for (int n = 0; n < iterations; ++n)
    for (int i = 0; i < N; ++i) c[i] = madd<M>(c[i], xv, yv);
  float s = 0;
  for (int i = 0; i < N; ++i) s += wasm_f32x4_extract_lane(c[i], 0);
  g_sink = s;  // before the clock, as in block()
  const double ms = emscripten_get_now() - g_t0;
  return 8.0 * N * iterations / ms / 1e6;
}

// The integer dot products' chains (products per instruction pair: 8 for dot_i16x8, 16 for the
// relaxed dot): b holds (1, 0) pairs, so each chain keeps its low halves' values; no overflow.
enum class IntDot { dot_i16x8, relaxed_i8x16 };

// i16x8.relaxed_dot_i8x16_i7x16_s: the package's stand-in (relaxed_dot_simd128.h), whose opcode
// run.sh rewrites as the package's build does.
using webattention::kernels::relaxed_dot_i16;

template <IntDot D, int N>
__attribute__((noinline)) double int_chains(int iterations) {
  const v128_t b = D == IntDot::dot_i16x8 ? wasm_i32x4_splat(1) : wasm_i16x8_splat(1);
  const v128_t d = wasm_i32x4_splat(static_cast<int>(g_zero));
  v128_t c[N];
  for (int i = 0; i < N; ++i) c[i] = wasm_i32x4_splat(i + static_cast<int>(g_one));
  g_t0 = emscripten_get_now();
  for (int n = 0; n < iterations; ++n)
    for (int i = 0; i < N; ++i) {
      if constexpr (D == IntDot::dot_i16x8) c[i] = wasm_i32x4_add(wasm_i32x4_dot_i16x8(c[i], b), d);
      else c[i] = wasm_i16x8_add(relaxed_dot_i16(c[i], b), d);
    }
  v128_t s = d;
  for (int i = 0; i < N; ++i) s = wasm_i32x4_add(s, c[i]);
  g_sink = static_cast<float>(wasm_i32x4_extract_lane(s, 0));  // before the clock, as in block()
  const double ms = emscripten_get_now() - g_t0;
  const double products = D == IntDot::dot_i16x8 ? 8.0 : 16.0;
  return 2.0 * products * N * iterations / ms / 1e6;
}

// Best of 7 calls after 0.3 s of warm-up calls (engines swap baseline code for optimized code
// between calls, Firefox after a hotness count, and compile it on a background thread).
template <class F>
double best(F run) {
  for (const double t0 = emscripten_get_now(); emscripten_get_now() - t0 < 300;) run();
  double b = 0;
  for (int i = 0; i < 7; ++i) {
    const double g = run();
    if (g > b) b = g;
  }
  return b;
}

const char* name(Madd m) { return m == Madd::fma ? "relaxed FMA" : "mul + add  "; }
const char* name(Broadcast b) {
  return b == Broadcast::load_splat ? "v128.load32_splat " : "pre-broadcast load";
}

template <Madd M, Broadcast B, int R, int C>
void report_block() {
  const int passes = 4'000'000 / (R * C);
  std::printf("block %d×%d (%2d acc)  %s  %s  %6.1f GFLOP/s\n", R, C, R * C, name(M), name(B),
              best([&] { return block<M, B, R, C>(passes); }));
}

template <Madd M, int N>
void report_chains() {
  std::printf("chains %2d            %s                       %6.1f GFLOP/s\n", N, name(M),
              best([] { return chains<M, N>(200'000'000 / N, g_one, g_zero); }));
}

template <IntDot D, int N>
void report_int_chains() {
  std::printf("chains %2d            %s                 %6.1f GFLOP/s\n", N,
              D == IntDot::dot_i16x8 ? "int dot_i16x8 + add      " : "int relaxed dot i8 + add ",
              best([] { return int_chains<D, N>(200'000'000 / N); }));
}

template <Madd M, Broadcast B>
void blocks() {
  report_block<M, B, 4, 2>();  // the flash kernel's 4 × 8 block
  report_block<M, B, 1, 8>();  // the one-row loop (4 panels)
  report_block<M, B, 2, 4>();
  report_block<M, B, 3, 4>();
  report_block<M, B, 4, 3>();
}

}  // namespace

int main() {
  for (int i = 0; i < 8 * kDepth * 4; ++i) g_x[i] = 1.0f;
  for (float& w : g_w) w = 0.0f;  // acc stays 0: no overflow, no denormals
  report_chains<Madd::fma, 4>();
  report_chains<Madd::fma, 8>();
  report_chains<Madd::fma, 12>();
  report_chains<Madd::mul_add, 4>();
  report_chains<Madd::mul_add, 8>();
  report_chains<Madd::mul_add, 12>();
  report_int_chains<IntDot::dot_i16x8, 8>();
  report_int_chains<IntDot::dot_i16x8, 12>();
  report_int_chains<IntDot::relaxed_i8x16, 8>();
  report_int_chains<IntDot::relaxed_i8x16, 12>();
  blocks<Madd::fma, Broadcast::load_splat>();
  blocks<Madd::mul_add, Broadcast::load_splat>();
  blocks<Madd::fma, Broadcast::prebroadcast>();
  blocks<Madd::mul_add, Broadcast::prebroadcast>();
  std::printf("done\n");
  return 0;
}
