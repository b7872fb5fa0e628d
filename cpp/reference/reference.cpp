// The test oracle: full score matrices in double precision with Eigen, written for clarity only.
#include "reference/reference.h"

#include <Eigen/Dense>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>

namespace webattention::reference {
namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// rows × cols block of float rows `row_stride` apart, as double.
Matrix gather(const float* base, std::ptrdiff_t row_stride, int rows, int cols) {
  Matrix m(rows, cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) m(r, c) = base[r * row_stride + c];
  return m;
}

void scatter(const Matrix& m, float* base) {
  for (Eigen::Index i = 0; i < m.size(); ++i) base[i] = static_cast<float>(m.data()[i]);
}

// What a mask adds to a score, read at its flat element `index`: -inf where a boolean mask is
// set, the value of an additive mask, 0 for no mask.
double mask_term(const MaskArg& mask, std::size_t index) {
  switch (mask.kind) {
    case MaskKind::kBoolean:
      return static_cast<const std::uint8_t*>(mask.data)[index] ? kNegInf : 0.0;
    case MaskKind::kAdditive: return static_cast<const float*>(mask.data)[index];
    default: return 0.0;
  }
}

// Everything added to score (i, j) of one (batch, head): the masks and, if causal, -inf above
// the diagonal.
using ScoreBias = std::function<double(int i, int j)>;

// softmax(q kᵀ · scale + bias) for one (batch, head): the L × S attention probabilities. A row
// whose every key is masked is all zeros, by design (PyTorch gives NaN). A masked score is -inf
// whatever q·k is (a NaN or Inf key stays masked); `hidden` marks the masked (i, j).
Matrix probabilities(const Matrix& q, const Matrix& k, double scale, bool causal,
                     const ScoreBias& bias, Matrix& hidden) {
  Matrix p = (q * k.transpose()) * scale;
  hidden = Matrix::Zero(p.rows(), p.cols());
  for (Eigen::Index i = 0; i < p.rows(); ++i) {
    for (Eigen::Index j = 0; j < p.cols(); ++j) {
      const double term = bias(static_cast<int>(i), static_cast<int>(j));
      const bool masked = (causal && j > i) || term == kNegInf;
      p(i, j) = masked ? kNegInf : p(i, j) + term;
      hidden(i, j) = masked;
    }
    const double max = p.row(i).maxCoeff();
    if (max == kNegInf) {
      p.row(i).setZero();
      continue;
    }
    p.row(i) = (p.row(i).array() - max).exp().matrix();
    p.row(i) /= p.row(i).sum();
  }
  return p;
}

// p · v, where a masked key adds nothing to a row (not 0 · its value: masked means absent, so a
// NaN or Inf value there never reaches the row; PyTorch gives NaN).
Matrix weighted_values(const Matrix& p, const Matrix& hidden, const Matrix& v) {
  Matrix out = Matrix::Zero(p.rows(), v.cols());
  for (Eigen::Index i = 0; i < p.rows(); ++i)
    for (Eigen::Index j = 0; j < p.cols(); ++j)
      if (hidden(i, j) == 0.0) out.row(i) += p(i, j) * v.row(j);
  return out;
}

}  // namespace

void scaled_dot_product_attention(const SdpaArgs& a) {
  const int L = a.L, S = a.S;
  const double scale = a.scale > 0.0f ? a.scale : 1.0 / std::sqrt(static_cast<double>(a.dk));
  const std::size_t LS = static_cast<std::size_t>(L) * S;
  for (int n = 0; n < a.N; ++n) {
    // attn_mask [L, S] is shared by every n; [N, L, S] has one [L, S] block per n.
    const std::size_t mask_block = a.attn_mask.shape.size() == 3 ? n * LS : 0;
    const ScoreBias bias = [&](int i, int j) {
      return mask_term(a.attn_mask, mask_block + static_cast<std::size_t>(i) * S + j);
    };
    const Matrix q = gather(a.q + n * static_cast<std::ptrdiff_t>(L) * a.dk, a.dk, L, a.dk);
    const Matrix k = gather(a.k + n * static_cast<std::ptrdiff_t>(S) * a.dk, a.dk, S, a.dk);
    const Matrix v = gather(a.v + n * static_cast<std::ptrdiff_t>(S) * a.dv, a.dv, S, a.dv);
    Matrix hidden;
    const Matrix p = probabilities(q, k, scale, a.causal, bias, hidden);
    scatter(weighted_values(p, hidden, v), a.out + n * static_cast<std::ptrdiff_t>(L) * a.dv);
    if (a.weights) scatter(p, a.weights + n * LS);
  }
}

const std::vector<float>* MhaParameters::find(const std::string& name) const {
  for (const auto& [key, values] : entries)
    if (key == name) return &values;
  return nullptr;
}

void mha_forward(const MhaConfig& config, const MhaParameters& params,
                 const MhaForwardArgs& a) {
  // PyTorch's defaults for the widths left at 0 (MhaConfig says which).
  const int E = config.embed_dim, H = config.num_heads;
  const int kdim = config.kdim ? config.kdim : E, vdim = config.vdim ? config.vdim : E;
  const int dk = config.head_dim ? config.head_dim : E / H;
  const int dv = config.value_head_dim ? config.value_head_dim : E / H;
  const int qk = H * dk, vw = H * dv;
  const auto need = [&](const std::string& name) -> const std::vector<float>& {
    const auto* p = params.find(name);
    if (!p) throw std::invalid_argument("reference: missing " + name);
    return *p;
  };
  Matrix wq, wk, wv;
  if (const auto* packed = params.find("in_proj_weight")) {
    Matrix w = gather(packed->data(), E, 3 * E, E);
    wq = w.topRows(qk);
    wk = w.middleRows(qk, qk);
    wv = w.bottomRows(vw);
  } else {
    wq = gather(need("q_proj_weight").data(), E, qk, E);
    wk = gather(need("k_proj_weight").data(), kdim, qk, kdim);
    wv = gather(need("v_proj_weight").data(), vdim, vw, vdim);
  }
  Matrix wo = gather(need("out_proj.weight").data(), vw, E, vw);
  Eigen::RowVectorXd bq = Eigen::RowVectorXd::Zero(qk), bk = bq, bv = Eigen::RowVectorXd::Zero(vw),
                     bo = Eigen::RowVectorXd::Zero(E);
  if (config.bias) {
    const auto& b = need("in_proj_bias");
    for (int i = 0; i < qk; ++i) bq(i) = b[i], bk(i) = b[qk + i];
    for (int i = 0; i < vw; ++i) bv(i) = b[2 * qk + i];
    const auto& ob = need("out_proj.bias");
    for (int i = 0; i < E; ++i) bo(i) = ob[i];
  }
  const int B = a.batch, L = a.L, S = a.S;
  const Matrix q = (gather(a.query, E, B * L, E) * wq.transpose()).rowwise() + bq;
  const Matrix k = (gather(a.key, kdim, B * S, kdim) * wk.transpose()).rowwise() + bk;
  const Matrix v = (gather(a.value, vdim, B * S, vdim) * wv.transpose()).rowwise() + bv;

  const std::size_t LS = static_cast<std::size_t>(L) * S;
  const MaskArg& kpm = a.key_padding_mask;
  const MaskArg& am = a.attn_mask;
  Matrix heads(B * L, vw);  // row b·L + i: the heads' outputs side by side
  for (int b = 0; b < B; ++b) {
    Matrix average = Matrix::Zero(L, S);
    for (int h = 0; h < H; ++h) {
      // key_padding_mask [B, S] (or [S], unbatched); attn_mask [L, S] for every batch and head,
      // or [B·H, L, S] with (b, h)'s block at b·H + h.
      const std::size_t kpm_row = kpm.shape.size() == 2 ? static_cast<std::size_t>(b) * S : 0;
      const std::size_t am_block = am.shape.size() == 3 ? (static_cast<std::size_t>(b) * H + h) * LS : 0;
      const ScoreBias bias = [&](int i, int j) {
        return mask_term(kpm, kpm_row + j) +
               mask_term(am, am_block + static_cast<std::size_t>(i) * S + j);
      };
      Matrix hidden;
      const Matrix p = probabilities(q.block(b * L, h * dk, L, dk), k.block(b * S, h * dk, S, dk),
                                     1.0 / std::sqrt(static_cast<double>(dk)), a.causal, bias, hidden);
      heads.block(b * L, h * dv, L, dv) = weighted_values(p, hidden, v.block(b * S, h * dv, S, dv));
      if (!a.weights) continue;
      if (a.average_weights) {
        average += p / H;
      } else {
        scatter(p, a.weights + (static_cast<std::size_t>(b) * H + h) * LS);
      }
    }
    if (a.weights && a.average_weights) scatter(average, a.weights + b * LS);
  }
  scatter((heads * wo.transpose()).rowwise() + bo, a.output);
}

}  // namespace webattention::reference
