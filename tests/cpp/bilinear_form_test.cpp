// docs/attention-math/heads.md §5: a head's singular values and rank, which the core takes from Eigen
// (thin QR of both factors, an SVD of their small product), against a case whose singular values
// are known exactly and against an SVD of the whole W_i.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <random>
#include <vector>

#include "mha_test_support.h"
#include "test_util.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

using namespace testing;

// Rows of a 4×4 Hadamard matrix over 2: orthonormal, and exact in float.
constexpr float kHadamard[4][4] = {{0.5f, 0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f, -0.5f},
                                   {0.5f, 0.5f, -0.5f, -0.5f}, {0.5f, -0.5f, -0.5f, 0.5f}};

// [rows, width] with row d = scale[d] · (Hadamard row d placed at columns first .. first + 3).
std::vector<float> hadamard_rows(const std::vector<float>& scale, int width, int first) {
  std::vector<float> w(scale.size() * width, 0.0f);
  for (std::size_t d = 0; d < scale.size(); ++d)
    for (int j = 0; j < 4; ++j) w[d * width + first + j] = scale[d] * kHadamard[d % 4][j];
  return w;
}

// W_0 = Σ_d σ_d u_d v_dᵀ with orthonormal u_d (query space) and v_d (key space): its singular
// values are σ = {3, 2, 0.5, 0} exactly, so its rank is 3.
TEST(BilinearForm, SingularValuesAndRankOfAKnownProduct) {
  const int E = 8, kdim = 6, h = 2, dk = 4;
  MultiHeadAttention mha(config(E, h, kdim, E, false));
  const std::vector<float> sigma = {3.0f, 2.0f, 0.5f, 0.0f, 1.0f, 1.0f, 1.0f, 1.0f};  // head 1: all 1
  const std::vector<float> ones(h * dk, 1.0f);
  const auto wq = hadamard_rows(sigma, E, 2), wk = hadamard_rows(ones, kdim, 1);
  const std::vector<float> wv(h * dk * E, 0.25f), wo(E * h * dk, 0.5f);
  mha.load_parameter("q_proj_weight", wq.data(), wq.size());
  mha.load_parameter("k_proj_weight", wk.data(), wk.size());
  mha.load_parameter("v_proj_weight", wv.data(), wv.size());
  mha.load_parameter("out_proj.weight", wo.data(), wo.size());
  const BilinearForm f = mha.head_bilinear_form(0);
  ASSERT_EQ(f.singular_values.size(), 4u);
  const double expected[] = {3.0, 2.0, 0.5, 0.0};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(f.singular_values[i], expected[i], 1e-12) << i;
  EXPECT_EQ(f.rank, 3);
  const BilinearForm g = mha.head_bilinear_form(1);
  for (double s : g.singular_values) EXPECT_NEAR(s, 1.0, 1e-12);
  EXPECT_EQ(g.rank, dk);
}

// Random weights: the values equal those of an SVD of the whole W_i (from its f32 matrix, so to
// f32 precision), largest first, min(d_k, E, kdim) of them.
TEST(BilinearForm, SingularValuesEqualAnSvdOfTheWholeMatrix) {
  std::mt19937 rng(11);
  for (const MhaConfig& c : {config(12, 3, 7, 5, false), config(4, 1, 0, 0, false, 6, 4), config(16, 2, 16, 16, true)}) {
    MultiHeadAttention mha(c);
    load_random(mha, rng);
    for (int head = 0; head < c.num_heads; ++head) {
      const BilinearForm f = mha.head_bilinear_form(head);
      Eigen::MatrixXd w(f.rows, f.cols);
      for (int r = 0; r < f.rows; ++r)
        for (int col = 0; col < f.cols; ++col) w(r, col) = f.matrix[static_cast<std::size_t>(r) * f.cols + col];
      const Eigen::VectorXd whole = Eigen::JacobiSVD<Eigen::MatrixXd>(w).singularValues();
      const std::size_t n = f.singular_values.size();
      ASSERT_EQ(n, static_cast<std::size_t>(std::min({mha.config().head_dim, f.rows, f.cols})));
      for (std::size_t i = 0; i < n; ++i) {
        EXPECT_NEAR(f.singular_values[i], whole(i), 1e-5 * whole(0)) << "head " << head << " σ_" << i;
        if (i > 0) EXPECT_LE(f.singular_values[i], f.singular_values[i - 1]);
      }
      EXPECT_EQ(f.rank, static_cast<int>(n));  // generic weights reach the bound
    }
  }
}

}  // namespace
}  // namespace webattention
