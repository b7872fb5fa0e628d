// Attention kernel, portable C++ (native builds and the no-SIMD WASM module): the inner loops of
// the fused flash attention (flash_attention.h has the algorithm) on plain floats, so native
// tests run the same tiling and online softmax as the SIMD modules.
#include <cmath>
#include <cstddef>

#include "kernels/flash/flash_attention.h"
#include "kernels/kernels.h"

namespace webattention::kernels {
namespace {

// The 4×8 register block of the SIMD kernels as 32 floats: small fixed loops the compiler can
// keep in registers (or vectorise natively).
struct Block4x8 {
  float a[flash::kRows][kPanelWidth];

  static Block4x8 zero() { return Block4x8{}; }

  void load_row(int r, const float* src) {
    for (int c = 0; c < kPanelWidth; ++c) a[r][c] = src[c];
  }

  // row r += x_r · w[0..8).
  void madd(float x0, float x1, float x2, float x3, const float* w) {
    const float x[flash::kRows] = {x0, x1, x2, x3};
    for (int r = 0; r < flash::kRows; ++r)
      for (int c = 0; c < kPanelWidth; ++c) a[r][c] += x[r] * w[c];
  }

  void store_row(int r, float* dst) const {
    for (int c = 0; c < kPanelWidth; ++c) dst[c] = a[r][c];
  }
};

struct Scalar {
  using Block = Block4x8;

  // A −∞ entry masks whatever the score is (NaN + −∞ would be NaN): a select, not an add.
  static void add_row(float* s, const float* row, int n) {
    for (int j = 0; j < n; ++j) s[j] = row[j] == flash::kNegInf ? flash::kNegInf : s[j] + row[j];
  }

  // m < s ? s : m, as the SIMD kernel's pmax: a NaN score never becomes the maximum.
  static float row_max(const float* s, int width) {
    float m = flash::kNegInf;
    for (int j = 0; j < width; ++j) m = m < s[j] ? s[j] : m;
    return m;
  }

  static float exp_row(float* s, int width, float max, float factor) {
    float sum = 0.0f;
    for (int j = 0; j < width; ++j) {
      const float e = std::exp(s[j] - max);
      sum += e;
      s[j] = e * factor;
    }
    return sum;
  }

  static void scale_row(float* a, int n, float factor) {
    for (int c = 0; c < n; ++c) a[c] *= factor;
  }

  static void softcap_row(float* s, int width, float cap) {
    for (int j = 0; j < width; ++j) s[j] = cap * std::tanh(s[j] / cap);
  }

  static void row_scores(const float* q, int dk, const float* kp, int j0, int width, float* s) {
    const PanelMatrix<const float> keys = key_panels(kp, dk);
    for (int j = 0; j < width; ++j) {
      float sum = 0.0f;
      for (int c = 0; c < dk; ++c) sum += q[c] * keys.at(j0 + j, c);
      s[j] = sum;
    }
  }

  // The same two loops over a narrow cache (kv_widen.h), each element widened as it is read.
  template <StorageType T>
  static void narrow_row_scores(const float* q, int dk, const flash::NarrowKv& c, int slot, int n, float* s) {
    for (int j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int f = 0; f < dk; ++f) sum += q[f] * flash::widen1<T>(c.k, flash::key_index(dk, slot + j, f), 1.0f);
      s[j] = flash::key_scaled<T>(sum, c, slot + j);
    }
  }
  template <StorageType T>
  static void narrow_row_pv(const float* p, int n, const flash::NarrowKv& c, int dv_pad, int slot, float* acc) {
    for (int f = 0; f < dv_pad; ++f) {
      for (int j = 0; j < n; ++j)
        acc[f] += flash::value_weight<T>(p[j], c, slot + j) * flash::widen1<T>(c.v, c.value_index(slot + j, f), 1.0f);
    }
  }
  // The 4-row block's: kv_widen.h's loops over this ISA's row operations.
  template <StorageType T>
  static void narrow_tile_scores(const float* q, int dk, const flash::NarrowKv& c, int slot, int n, float* s) {
    flash::narrow_tile_scores<Scalar, T>(q, dk, c, slot, n, s);
  }
  template <StorageType T>
  static void narrow_tile_pv(const float* p, int n, const flash::NarrowKv& c, int dv_pad, int slot, float* acc) {
    flash::narrow_accumulate_pv<Scalar, T>(p, n, c, dv_pad, slot, acc);
  }

  static void row_pv(const float* p, int width, const ValueMatrix<const float>& values, int j0, float* acc) {
    for (int c = 0; c < values.columns; ++c)
      for (int j = 0; j < width; ++j) acc[c] += p[j] * values.at(c, j0 + j);
  }
};

}  // namespace

std::size_t attention_workspace_floats(const AttentionProblem& p) {
  return flash::workspace_floats(p);
}

void request_optimised_attention() noexcept { flash::request_optimised_code<Scalar>(); }

void attention_unit(const AttentionProblem& p, int unit, float* ws) noexcept {
  flash::attention_unit<Scalar>(p, unit, ws);
}

}  // namespace webattention::kernels
