// How fast one thread streams memory while it computes: the limit of a decode step's narrow loops,
// whose work per cache line is far above float32's. Each loop reads p[0 .. n) (n a multiple of 64)
// and gives each of a 64-byte line's 4 vectors a chain of R operations of itself, then adds the
// chains into accumulators: 4 loads and 4R + 4 operations a line, each depending on its load, as
// a kernel's multiply-adds depend on their weights. Over a buffer in the L2 a loop is bound by its
// operations; streamed from memory, also by how many of its misses the core keeps in flight,
// which WebAssembly can raise only by reading ahead (it has no prefetch). Three loops per R:
//   float_R  one stream, float adds (nothing folds them: no -ffast-math)
//   int_R    one stream, integer add and xor in turn (nothing to fold either): more of a core's
//            ports run them, so the same operations a line go at a faster pace, as the int4 and
//            int8 kernels' integer dot products do against float32's multiply-adds
//   far4_R   float adds over 4 streams a quarter of the buffer apart, as a decode step's far
//            panel groups read (kernels/far_panels.h)
// bench/limits/membw/stream_work.mjs times them. Built with membw.c into build/membw/membw.wasm
// (build.sh).
#include <stddef.h>
#include <wasm_simd128.h>

static inline v128_t float_op(int r, v128_t w, v128_t v) {
  (void)r;
  return wasm_f32x4_add(w, v);
}
static inline v128_t int_op(int r, v128_t w, v128_t v) { return r % 2 ? wasm_v128_xor(w, v) : wasm_i32x4_add(w, v); }

// The line at q: each vector's chain of R operations (OP), each chain then added into its
// accumulator (a0 .. a3).
#define LINE(OP, R, q, a0, a1, a2, a3)                                        \
  {                                                                           \
    const v128_t v0 = wasm_v128_load(q), v1 = wasm_v128_load((q) + 4);        \
    const v128_t v2 = wasm_v128_load((q) + 8), v3 = wasm_v128_load((q) + 12); \
    v128_t w0 = v0, w1 = v1, w2 = v2, w3 = v3;                                \
    _Pragma("clang loop unroll(full)") for (int r = 0; r < (R); ++r) {        \
      w0 = OP(r, w0, v0);                                                     \
      w1 = OP(r, w1, v1);                                                     \
      w2 = OP(r, w2, v2);                                                     \
      w3 = OP(r, w3, v3);                                                     \
    }                                                                         \
    a0 = wasm_f32x4_add(a0, w0);                                              \
    a1 = wasm_f32x4_add(a1, w1);                                              \
    a2 = wasm_f32x4_add(a2, w2);                                              \
    a3 = wasm_f32x4_add(a3, w3);                                              \
  }

#define SUM_OF(a0, a1, a2, a3, a4, a5, a6, a7)                                                       \
  const v128_t s = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_add(a0, a1), wasm_f32x4_add(a2, a3)), \
                                  wasm_f32x4_add(wasm_f32x4_add(a4, a5), wasm_f32x4_add(a6, a7))); \
  return wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 3);

// One stream, two lines an iteration, each into 4 accumulators of its own: one add per
// accumulator and line keeps the accumulators' latency off the pace.
#define ONE_STREAM(NAME, OP, R)                                                                     \
  __attribute__((export_name(#NAME "_" #R))) float NAME##_##R(const float* p, size_t n) {          \
    v128_t a0 = wasm_f32x4_splat(0), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0; \
    for (size_t i = 0; i < n; i += 32) {                                                            \
      LINE(OP, R, p + i, a0, a1, a2, a3)                                                            \
      LINE(OP, R, p + i + 16, a4, a5, a6, a7)                                                       \
    }                                                                                               \
    SUM_OF(a0, a1, a2, a3, a4, a5, a6, a7)                                                          \
  }

// 4 streams a quarter of the buffer apart, one line of each an iteration.
#define FAR4(R)                                                                                     \
  __attribute__((export_name("far4_" #R))) float far4_##R(const float* p, size_t n) {              \
    v128_t a0 = wasm_f32x4_splat(0), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0; \
    const size_t q = n / 4;                                                                         \
    for (size_t i = 0; i < q; i += 16) {                                                            \
      LINE(float_op, R, p + i, a0, a1, a2, a3)                                                      \
      LINE(float_op, R, p + q + i, a4, a5, a6, a7)                                                  \
      LINE(float_op, R, p + 2 * q + i, a0, a1, a2, a3)                                              \
      LINE(float_op, R, p + 3 * q + i, a4, a5, a6, a7)                                              \
    }                                                                                               \
    SUM_OF(a0, a1, a2, a3, a4, a5, a6, a7)                                                          \
  }

#define ALL(R) ONE_STREAM(float, float_op, R) ONE_STREAM(int, int_op, R) FAR4(R)
ALL(1)
ALL(2)
ALL(4)
ALL(6)
ALL(8)
ALL(12)
ALL(16)
