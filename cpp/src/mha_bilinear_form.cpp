// docs/attention-math/heads.md §5: each head's score matrix W_i = W_i^Q W_i^Kᵀ, its singular values and
// rank (Eigen, in double), and its parameter counts.
#include <algorithm>
#include <cmath>
#include <string>

#include <Eigen/Dense>

#include "checks.h"
#include "kernels/kernels.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

// The singular values of W = A Bᵀ (A [E, d_k] = W_i^Q, B [kdim, d_k] = W_i^K), largest first,
// in double by Eigen: with thin QR factors A = Q_a R_a and B = Q_b R_b, W = Q_a (R_a R_bᵀ) Q_bᵀ
// and Q_a, Q_b have orthonormal columns, so W has the singular values of the d_k × d_k matrix
// R_a R_bᵀ (and zeros). An SVD of that small core costs O(d_k³) where one of W would cost
// O(E·kdim·min(E, kdim)), and it is as exact: no rounding of W to f32 comes in.
Eigen::VectorXd factored_singular_values(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  const Eigen::HouseholderQR<Eigen::MatrixXd> qa(a), qb(b);
  const auto upper = [](const Eigen::HouseholderQR<Eigen::MatrixXd>& qr) {
    const Eigen::Index k = std::min(qr.rows(), qr.cols());
    return Eigen::MatrixXd(qr.matrixQR().topRows(k).triangularView<Eigen::Upper>());
  };
  const Eigen::MatrixXd core = upper(qa) * upper(qb).transpose();
  // Square (zero-padded: the extra singular values are zeros, and are dropped), so that the SVD
  // needs no QR preconditioner: ~25 KB less code in every WASM module.
  const Eigen::Index n = std::max(core.rows(), core.cols());
  Eigen::MatrixXd square = Eigen::MatrixXd::Zero(n, n);
  square.topLeftCorner(core.rows(), core.cols()) = core;
  const Eigen::VectorXd sigma = Eigen::JacobiSVD<Eigen::MatrixXd, Eigen::NoQRPreconditioner>(square).singularValues();
  return sigma.head(std::min(core.rows(), core.cols()));
}

}  // namespace

BilinearForm MultiHeadAttention::head_bilinear_form(int head) const {
  const MhaConfig& c = config_;
  require_index("head", head, c.num_heads);
  if (c.qk_norm) {
    throw ConfigError("head", "head_bilinear_form: with qkNorm the scores are not bilinear in the inputs "
                              "(each head's q and k are normalised first)");
  }
  if (c.rotary_dim > 0) {
    throw ConfigError("head", "head_bilinear_form: with rotary embeddings the scores depend on the "
                              "positions; there is no single W_i");
  }
  if (wq_->empty() || wk_->empty()) {
    throw StateDictError("state_dict", "head_bilinear_form: the query and key projections are "
                                       "not loaded yet (call loadStateDict() first)");
  }
  BilinearForm f;
  f.rows = c.embed_dim;
  f.cols = c.kdim;
  f.matrix.assign(static_cast<std::size_t>(f.rows) * f.cols, 0.0f);
  // W^Q is [h·d_k, E] and W^K is [h_kv·d_k, kdim]: query head `head` owns rows head·d_k .. +d_k
  // of W^Q, and reads K/V head head / (h / h_kv).
  const int offset = head * c.head_dim;
  const int k_offset = head / (c.num_heads / c.num_kv_heads) * c.head_dim;
  for (int a = 0; a < f.rows; ++a) {
    for (int b = 0; b < f.cols; ++b) {
      double sum = 0.0;
      for (int d = 0; d < c.head_dim; ++d) {
        sum += static_cast<double>(wq_->weight(offset + d, a)) * wk_->weight(k_offset + d, b);
      }
      f.matrix[static_cast<std::size_t>(a) * f.cols + b] = static_cast<float>(sum);
    }
  }
  // W_i^Q's rows of this head and W_i^K's of its K/V head, as columns (PyTorch keeps [out, in]).
  Eigen::MatrixXd a(f.rows, c.head_dim), b(f.cols, c.head_dim);
  for (int d = 0; d < c.head_dim; ++d) {
    for (int r = 0; r < f.rows; ++r) a(r, d) = wq_->weight(offset + d, r);
    for (int r = 0; r < f.cols; ++r) b(r, d) = wk_->weight(k_offset + d, r);
  }
  const Eigen::VectorXd sigma = factored_singular_values(a, b);
  f.singular_values.assign(sigma.data(), sigma.data() + sigma.size());
  // §5's tolerance: a singular value at or below max|W_ab| · max(E, kdim) · 1e-6 (f32 precision,
  // scaled to the matrix) counts as zero.
  double largest = 0.0;
  for (float x : f.matrix) largest = std::max(largest, std::fabs(static_cast<double>(x)));
  const double tolerance = largest * std::max(f.rows, f.cols) * 1e-6;
  f.rank = static_cast<int>(std::count_if(f.singular_values.begin(), f.singular_values.end(),
                                          [&](double s) { return s > tolerance; }));
  f.factored_parameters = static_cast<std::size_t>(f.rows + f.cols) * c.head_dim;
  f.full_parameters = static_cast<std::size_t>(f.rows) * f.cols;
  return f;
}

}  // namespace webattention
