// f32 projection kernel, WebAssembly SIMD128: linear_simd128.h over F32Panel (panels_simd128.h).
#include <atomic>

#include "kernels/simd128/linear_simd128.h"

namespace webattention::kernels {

void f32_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
               int target_count) noexcept {
  simd128_linear::linear_panels<F32Panel>(x, rows, x_stride, targets, target_count);
}

// kernels.h's request: panel_rows, the call per weight panel that a prefill's projections spend
// their time in, on no rows. Other types' kernels are left to tier up as they run.
void request_optimised_linear(const PackedLinear& w) noexcept {
  static std::atomic<bool> requested{false};
  if (w.type != StorageType::f32 || requested.load(std::memory_order_relaxed) || requested.exchange(true)) return;
  const LinearTarget target{&w, nullptr, 0};
  for (int i = 0; i < kRequestCalls; ++i) simd128_linear::panel_rows<F32Panel>(nullptr, 0, 0, 0, target, 0, nullptr);
}

}  // namespace webattention::kernels
