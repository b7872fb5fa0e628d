// docs/attention-math.md §5: each head's score matrix W_i = W_i^Q W_i^Kᵀ, its rank and parameter counts.
#include <algorithm>
#include <cmath>
#include <string>

#include "checks.h"
#include "kernels/kernels.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

// Rank by Gaussian elimination with full pivoting in double; entries below a tolerance scaled to
// float precision count as zero.
int numerical_rank(const std::vector<float>& m, int rows, int cols) {
  std::vector<double> a(m.begin(), m.end());
  double largest = 0.0;
  for (double x : a) largest = std::max(largest, std::fabs(x));
  const double tolerance = largest * std::max(rows, cols) * 1e-6;
  int rank = 0;
  for (; rank < std::min(rows, cols); ++rank) {
    int pr = rank, pc = rank;
    for (int r = rank; r < rows; ++r)
      for (int c = rank; c < cols; ++c)
        if (std::fabs(a[r * cols + c]) > std::fabs(a[pr * cols + pc])) pr = r, pc = c;
    if (!(std::fabs(a[pr * cols + pc]) > tolerance)) break;
    for (int c = 0; c < cols; ++c) std::swap(a[rank * cols + c], a[pr * cols + c]);
    for (int r = 0; r < rows; ++r) std::swap(a[r * cols + rank], a[r * cols + pc]);
    for (int r = rank + 1; r < rows; ++r) {
      const double f = a[r * cols + rank] / a[rank * cols + rank];
      for (int c = rank; c < cols; ++c) a[r * cols + c] -= f * a[rank * cols + c];
    }
  }
  return rank;
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
  f.rank = numerical_rank(f.matrix, f.rows, f.cols);
  f.factored_parameters = static_cast<std::size_t>(f.rows + f.cols) * c.head_dim;
  f.full_parameters = static_cast<std::size_t>(f.rows) * f.cols;
  return f;
}

}  // namespace webattention
