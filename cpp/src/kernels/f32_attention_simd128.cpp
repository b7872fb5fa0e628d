// Attention kernel, WebAssembly SIMD128: the inner loops of the fused flash attention
// (flash_attention.h has the algorithm) on f32x4 vectors and a 4×8 register block.
#include <wasm_simd128.h>

#include <cstddef>

#include "kernels/far_panels.h"
#include "kernels/simd128/f32_block_simd128.h"
#include "kernels/simd128/exp_simd128.h"
#include "kernels/flash/flash_attention.h"
#include "kernels/kernels.h"
#include "kernels/simd128/f32_row_panels_simd128.h"
#include "kernels/simd128/tanh_simd128.h"
#include "kernels/simd128/narrow_rows_simd128.h"

namespace webattention::kernels {
namespace {

struct Simd128 {
  using Block = Block4x8;

  // A −∞ entry masks whatever the score is (NaN + −∞ would be NaN): a select, not an add.
  static void add_row(float* s, const float* row, int n) {
    const v128_t neg_inf = wasm_f32x4_splat(flash::kNegInf);
    int j = 0;
    for (; j + 4 <= n; j += 4) {
      const v128_t m = wasm_v128_load(row + j);
      const v128_t sum = wasm_f32x4_add(wasm_v128_load(s + j), m);
      wasm_v128_store(s + j, wasm_v128_bitselect(neg_inf, sum, wasm_f32x4_eq(m, neg_inf)));
    }
    for (; j < n; ++j) s[j] = row[j] == flash::kNegInf ? flash::kNegInf : s[j] + row[j];
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

  static void softcap_row(float* s, int width, float cap) { softcap_row_simd128(s, width, cap); }

  // One query row's loops (a decode step) read kFarCachePanels panels at once, a key tile's (or a
  // value tile's columns) split into that many far runs (far_panels.h): more of the cache's
  // misses in flight than one sequential stream keeps. On an AMD Zen 4 (not measured there since),
  // panels side by side ran slower than one at a time: a step at (768, 12, 12) over an f32 cache
  // of 8192 slots took 4.9 ms with 4 (keys 2 KB apart, value panels 8 KB apart), 4.3 with 2 key
  // panels, 3.2 with one key panel, 2.6 with one value panel too.
  static void row_scores(const float* q, int dk, const float* kp, int j0, int width, float* s) {
    const PanelMatrix<const float> keys = key_panels(kp, dk);
    far_panel_counts<kFarCachePanels>(0, (width + kPanelWidth - 1) / kPanelWidth, [&](auto count, int p0, int stride) {
      constexpr int kCount = decltype(count)::value;
      v128_t acc[2 * kCount];
      for (auto& a : acc) a = wasm_f32x4_splat(0.0f);
      row_times_panels<kCount>(q, dk, keys.panel(j0 / kPanelWidth + p0), stride * keys.panel_elements(), acc);
      for (int i = 0; i < kCount; ++i) {
        float* out = s + (p0 + i * stride) * kPanelWidth;
        wasm_v128_store(out, acc[2 * i]);
        wasm_v128_store(out + 4, acc[2 * i + 1]);
      }
    });
  }

  // acc += p · V for one row, over the value tile's column panels (8 columns each).
  static void row_pv(const float* p, int width, const ValueMatrix<const float>& values, int j0, float* acc) {
    far_panel_counts<kFarCachePanels>(0, values.columns / kPanelWidth, [&](auto count, int p0, int stride) {
      constexpr int kCount = decltype(count)::value;
      v128_t sum[2 * kCount];
      for (int i = 0; i < kCount; ++i) {
        const float* a = acc + (p0 + i * stride) * kPanelWidth;
        sum[2 * i] = wasm_v128_load(a);
        sum[2 * i + 1] = wasm_v128_load(a + 4);
      }
      row_times_panels<kCount>(p, width, &values.at(p0 * kPanelWidth, j0), stride * values.panel_stride(j0), sum);
      for (int i = 0; i < kCount; ++i) {
        float* a = acc + (p0 + i * stride) * kPanelWidth;
        wasm_v128_store(a, sum[2 * i]);
        wasm_v128_store(a + 4, sum[2 * i + 1]);
      }
    });
  }

  // The same two loops, and the 4-row block's, over a narrow cache (narrow_rows_simd128.h).
  template <StorageType T>
  static void narrow_row_scores(const float* q, int dk, const flash::NarrowKv& c, int slot, int n, float* s) {
    simd128_narrow::row_scores<T>(q, dk, c, slot, n, s);
  }
  template <StorageType T>
  static void narrow_row_pv(const float* p, int n, const flash::NarrowKv& c, int dv_pad, int slot, float* acc) {
    simd128_narrow::row_pv<T>(p, n, c, dv_pad, slot, acc);
  }
  template <StorageType T>
  static void narrow_tile_scores(const float* q, int dk, const flash::NarrowKv& c, int slot, int n, float* s) {
    simd128_narrow::tile_scores<Simd128, T>(q, dk, c, slot, n, s);
  }
  template <StorageType T>
  static void narrow_tile_pv(const float* p, int n, const flash::NarrowKv& c, int dv_pad, int slot, float* acc) {
    simd128_narrow::tile_pv<Simd128, T>(p, n, c, dv_pad, slot, acc);
  }
};

}  // namespace

std::size_t attention_workspace_floats(const AttentionProblem& p) {
  return flash::workspace_floats(p);
}

void request_optimised_attention() noexcept { flash::request_optimised_code<Simd128>(); }

void attention_unit(const AttentionProblem& p, int unit, float* ws) noexcept {
  flash::attention_unit<Simd128>(p, unit, ws);
}

}  // namespace webattention::kernels
