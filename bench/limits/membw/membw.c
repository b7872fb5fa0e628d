// Memory-read bandwidth of one core as WASM SIMD128 code sees it: the yardstick for the decode
// benchmark's memory bound (bench/decode/decode.mjs). sum() reads a buffer far larger than the caches
// with 128-bit loads; 8 independent accumulators keep the adds off the critical path, so the
// loads, not the adds' latency, set the pace. Built by build.sh into a module with no imports
// (no Emscripten glue), which bench/limits/membw/measure.mjs instantiates in Node or a page.
#include <stddef.h>
#include <wasm_simd128.h>

// Grows the linear memory by `pages` 64 KiB pages; returns where the new region starts, or 0.
// The caller (JavaScript) fills it, so that first-touch page faults happen before timing.
__attribute__((export_name("grow"))) float* grow(size_t pages) {
  const size_t old = __builtin_wasm_memory_grow(0, pages);
  return old == (size_t)-1 ? 0 : (float*)(old * 65536);
}

// Sum of p[0 .. n) (n a multiple of 32), returned so that the loads cannot be dropped.
__attribute__((export_name("sum"))) float sum(const float* p, size_t n) {
  v128_t a0 = wasm_f32x4_splat(0), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (size_t i = 0; i < n; i += 32) {
    a0 = wasm_f32x4_add(a0, wasm_v128_load(p + i));
    a1 = wasm_f32x4_add(a1, wasm_v128_load(p + i + 4));
    a2 = wasm_f32x4_add(a2, wasm_v128_load(p + i + 8));
    a3 = wasm_f32x4_add(a3, wasm_v128_load(p + i + 12));
    a4 = wasm_f32x4_add(a4, wasm_v128_load(p + i + 16));
    a5 = wasm_f32x4_add(a5, wasm_v128_load(p + i + 20));
    a6 = wasm_f32x4_add(a6, wasm_v128_load(p + i + 24));
    a7 = wasm_f32x4_add(a7, wasm_v128_load(p + i + 28));
  }
  const v128_t s = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_add(a0, a1), wasm_f32x4_add(a2, a3)),
                                  wasm_f32x4_add(wasm_f32x4_add(a4, a5), wasm_f32x4_add(a6, a7)));
  return wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 1) +
         wasm_f32x4_extract_lane(s, 2) + wasm_f32x4_extract_lane(s, 3);
}
