// Attention kernel, WebAssembly SIMD128: the inner loops of the fused flash attention
// (flash_attention.h has the algorithm) on f32x4 vectors and a 4×8 register block.
#include <wasm_simd128.h>

#include "kernels/block_simd128.h"
#include "kernels/exp_simd128.h"
#include "kernels/flash_attention.h"
#include "kernels/kernels.h"

namespace webattention::kernels {
namespace {

struct Simd128 {
  using Block = Block4x8;

  static void add_row(float* s, const float* row, int n) {
    int j = 0;
    for (; j + 4 <= n; j += 4)
      wasm_v128_store(s + j, wasm_f32x4_add(wasm_v128_load(s + j), wasm_v128_load(row + j)));
    for (; j < n; ++j) s[j] += row[j];
  }

  // Two accumulators per reduction (width is a multiple of 8): one chain would wait on the
  // latency of each max/add, which profiled at 12 % of the kernel.
  static float row_max(const float* s, int width) {
    v128_t m0 = wasm_f32x4_splat(flash::kNegInf), m1 = m0;
    for (int j = 0; j < width; j += 8) {
      m0 = wasm_f32x4_pmax(m0, wasm_v128_load(s + j));
      m1 = wasm_f32x4_pmax(m1, wasm_v128_load(s + j + 4));
    }
    return horizontal_max(wasm_f32x4_pmax(m0, m1));
  }

  static float exp_row(float* s, int width, float max, float factor) {
    const v128_t mv = wasm_f32x4_splat(max);
    const v128_t fv = wasm_f32x4_splat(factor);
    v128_t sum0 = wasm_f32x4_splat(0.0f), sum1 = sum0;
    for (int j = 0; j < width; j += 8) {
      const v128_t e0 = exp_f32x4(wasm_f32x4_sub(wasm_v128_load(s + j), mv));
      const v128_t e1 = exp_f32x4(wasm_f32x4_sub(wasm_v128_load(s + j + 4), mv));
      sum0 = wasm_f32x4_add(sum0, e0);
      sum1 = wasm_f32x4_add(sum1, e1);
      wasm_v128_store(s + j, wasm_f32x4_mul(e0, fv));
      wasm_v128_store(s + j + 4, wasm_f32x4_mul(e1, fv));
    }
    return horizontal_sum(wasm_f32x4_add(sum0, sum1));
  }

  static void scale_row(float* a, int n, float factor) {
    const v128_t f = wasm_f32x4_splat(factor);
    for (int c = 0; c < n; c += 4) wasm_v128_store(a + c, wasm_f32x4_mul(wasm_v128_load(a + c), f));
  }
};

}  // namespace

std::size_t attention_workspace_floats(const AttentionProblem& p) {
  return flash::workspace_floats(p);
}

void attention_unit(const AttentionProblem& p, int unit, float* ws) noexcept {
  flash::attention_unit<Simd128>(p, unit, ws);
}

}  // namespace webattention::kernels
