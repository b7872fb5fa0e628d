// Peak f32x4 throughput of one core, as in a matrix kernel's inner loop (as many multiplies as
// adds): 6 multiply chains m *= x and 6 add chains a += y, all independent, so only the FP ports
// limit it, not latency or memory. 14 registers with x and y: V8 allocates 15 of the 16 XMM
// registers (xmm15 is its scratch), and 7 + 7 chains spilled there (17 GFLOP/s). Built by run.sh natively (SSE, no FMA), natively with FMA
// (10 chains c = c·x + y, for comparison) and for WASM SIMD128 (no FMA without relaxed SIMD).
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef __wasm__
#include <wasm_simd128.h>
typedef v128_t vec;
#define MUL wasm_f32x4_mul
#define ADD wasm_f32x4_add
#define SPLAT wasm_f32x4_splat
#define LANE0(v) wasm_f32x4_extract_lane(v, 0)
#else
#include <immintrin.h>
typedef __m128 vec;
#define MUL _mm_mul_ps
#define ADD _mm_add_ps
#define SPLAT _mm_set1_ps
#define LANE0(v) _mm_cvtss_f32(v)
#endif

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// Never inlined: V8 swaps Liftoff code for TurboFan code between calls, so the best of five
// calls is TurboFan's. x and y come from the command line so the compiler cannot fold the
// chains (x = 1, y = 0 keep every value constant: no overflow, no denormals).
__attribute__((noinline)) static float run(long iterations, float x, float y, double* gflops) {
  const vec xv = SPLAT(x), yv = SPLAT(y);
#ifdef PEAK_FMA
  vec c0 = SPLAT(1), c1 = SPLAT(2), c2 = SPLAT(3), c3 = SPLAT(4), c4 = SPLAT(5), c5 = SPLAT(6);
  vec c6 = SPLAT(7), c7 = SPLAT(8), c8 = SPLAT(9), c9 = SPLAT(10);
  const double t0 = seconds();
  for (long n = 0; n < iterations; ++n) {
    c0 = _mm_fmadd_ps(c0, xv, yv); c1 = _mm_fmadd_ps(c1, xv, yv); c2 = _mm_fmadd_ps(c2, xv, yv);
    c3 = _mm_fmadd_ps(c3, xv, yv); c4 = _mm_fmadd_ps(c4, xv, yv); c5 = _mm_fmadd_ps(c5, xv, yv);
    c6 = _mm_fmadd_ps(c6, xv, yv); c7 = _mm_fmadd_ps(c7, xv, yv); c8 = _mm_fmadd_ps(c8, xv, yv);
    c9 = _mm_fmadd_ps(c9, xv, yv);
  }
  const double t = seconds() - t0;
  *gflops = iterations * 10.0 * 8.0 / t / 1e9;  // 10 chains × 4 lanes × 2 flops
  return LANE0(c0) + LANE0(c1) + LANE0(c2) + LANE0(c3) + LANE0(c4) + LANE0(c5) + LANE0(c6) +
         LANE0(c7) + LANE0(c8) + LANE0(c9);
#else
  vec m0 = SPLAT(1), m1 = SPLAT(2), m2 = SPLAT(3), m3 = SPLAT(4), m4 = SPLAT(5), m5 = SPLAT(6);
  vec a0 = SPLAT(1), a1 = SPLAT(2), a2 = SPLAT(3), a3 = SPLAT(4), a4 = SPLAT(5), a5 = SPLAT(6);
  const double t0 = seconds();
  for (long n = 0; n < iterations; ++n) {
    m0 = MUL(m0, xv); a0 = ADD(a0, yv); m1 = MUL(m1, xv); a1 = ADD(a1, yv);
    m2 = MUL(m2, xv); a2 = ADD(a2, yv); m3 = MUL(m3, xv); a3 = ADD(a3, yv);
    m4 = MUL(m4, xv); a4 = ADD(a4, yv); m5 = MUL(m5, xv); a5 = ADD(a5, yv);
  }
  const double t = seconds() - t0;
  *gflops = iterations * 12.0 * 4.0 / t / 1e9;  // 12 instructions × 4 lanes
  return LANE0(m0) + LANE0(m1) + LANE0(m2) + LANE0(m3) + LANE0(m4) + LANE0(m5) + LANE0(a0) +
         LANE0(a1) + LANE0(a2) + LANE0(a3) + LANE0(a4) + LANE0(a5);
#endif
}

#ifndef __wasm__
// Clock estimate: a chain of dependent 64-bit multiplies, 3 cycles each on x86-64 cores.
__attribute__((noinline)) static double clock_ghz(long iterations, unsigned long k) {
  unsigned long v = k + 1;
  const double t0 = seconds();
  for (long n = 0; n < iterations; ++n) v *= k;
  const double t = seconds() - t0;
  if (v == 42) printf(" ");
  return 3.0 * iterations / t / 1e9;
}
#endif

int main(int argc, char** argv) {
  const long iterations = argc > 1 ? atol(argv[1]) : 200000000;
  const float x = argc > 2 ? (float)atof(argv[2]) : 1.0f;
  const float y = argc > 3 ? (float)atof(argv[3]) : 0.0f;
  double best = 0, g;
  float checksum = 0;
  for (int rep = 0; rep < 5; ++rep) {
    checksum += run(iterations, x, y, &g);
    if (g > best) best = g;
  }
  printf("%.1f GFLOP/s (best of 5; checksum %g)", best, checksum);
#ifndef __wasm__
  printf(", clock about %.2f GHz", clock_ghz(iterations, (unsigned long)(x + 0.5f)));
#endif
  printf("\n");
  return 0;
}
