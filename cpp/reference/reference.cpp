// The test oracle: full score matrices in double precision with Eigen, written for clarity only.
#include "webattention/reference.h"

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace webattention::reference {
namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// rows × cols block of strided float rows, as double.
Matrix gather(const float* base, std::ptrdiff_t row_stride, int rows, int cols) {
  Matrix m(rows, cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) m(r, c) = base[r * row_stride + c];
  return m;
}

double mask_value(const MaskView& m, int b, int h, int i, int j) {
  const std::ptrdiff_t at = b * m.batch_stride + h * m.head_stride + i * m.row_stride + j;
  switch (m.kind) {
    case MaskKind::kBoolean: return m.boolean()[at] ? kNegInf : 0.0;
    case MaskKind::kAdditive: return m.additive()[at];
    default: return 0.0;
  }
}

}  // namespace

void run_attention(const AttentionProblem& p) {
  const std::ptrdiff_t LS = static_cast<std::ptrdiff_t>(p.L) * p.S;
  if (p.weights && p.average_weights) std::fill(p.weights, p.weights + p.batch * LS, 0.0f);
  for (int b = 0; b < p.batch; ++b) {
    for (int h = 0; h < p.heads; ++h) {
      const auto at = [&](const StridedRows& t) {
        return t.data + b * t.batch_stride + h * t.head_stride;
      };
      Matrix q = gather(at(p.q), p.q.row_stride, p.L, p.dk);
      Matrix k = gather(at(p.k), p.k.row_stride, p.S, p.dk);
      Matrix v = gather(at(p.v), p.v.row_stride, p.S, p.dv);
      Matrix scores = (q * k.transpose()) * static_cast<double>(p.scale);
      for (int i = 0; i < p.L; ++i) {
        for (int j = 0; j < p.S; ++j) {
          if (p.causal && j > i) scores(i, j) = kNegInf;
          for (const MaskView& m : p.masks) scores(i, j) += mask_value(m, b, h, i, j);
        }
        const double max = scores.row(i).maxCoeff();
        if (max == kNegInf) {
          scores.row(i).setZero();  // all keys masked: zero, by design
          continue;
        }
        scores.row(i) = (scores.row(i).array() - max).exp().matrix();
        scores.row(i) /= scores.row(i).sum();
      }
      Matrix out = scores * v;
      float* o = p.out + b * p.out_batch_stride + h * p.out_head_stride;
      for (int i = 0; i < p.L; ++i)
        for (int c = 0; c < p.dv; ++c) o[i * p.out_row_stride + c] = static_cast<float>(out(i, c));
      if (!p.weights) continue;
      for (int i = 0; i < p.L; ++i) {
        for (int j = 0; j < p.S; ++j) {
          if (p.average_weights) {
            p.weights[b * LS + i * p.S + j] +=
                static_cast<float>(scores(i, j) / (p.averaged_heads ? p.averaged_heads : p.heads));
          } else {
            p.weights[(b * p.heads + h) * LS + i * p.S + j] = static_cast<float>(scores(i, j));
          }
        }
      }
    }
  }
}

const std::vector<float>* MhaParameters::find(const std::string& name) const {
  for (const auto& [key, values] : entries)
    if (key == name) return &values;
  return nullptr;
}

void mha_forward(const MhaConfig& config, const MhaParameters& params,
                 const MhaForwardArgs& a) {
  // Reuse the module only for its resolved config (default widths); the math below is separate.
  const MhaConfig c = MultiHeadAttention(config).config();
  const int E = c.embed_dim, H = c.num_heads, dk = c.head_dim, dv = c.value_head_dim;
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
    wk = gather(need("k_proj_weight").data(), c.kdim, qk, c.kdim);
    wv = gather(need("v_proj_weight").data(), c.vdim, vw, c.vdim);
  }
  Matrix wo = gather(need("out_proj.weight").data(), vw, E, vw);
  Eigen::RowVectorXd bq = Eigen::RowVectorXd::Zero(qk), bk = bq, bv = Eigen::RowVectorXd::Zero(vw),
                     bo = Eigen::RowVectorXd::Zero(E);
  if (c.bias) {
    const auto& b = need("in_proj_bias");
    for (int i = 0; i < qk; ++i) bq(i) = b[i], bk(i) = b[qk + i];
    for (int i = 0; i < vw; ++i) bv(i) = b[2 * qk + i];
    const auto& ob = need("out_proj.bias");
    for (int i = 0; i < E; ++i) bo(i) = ob[i];
  }
  const int B = a.batch, L = a.L, S = a.S;
  Matrix q = (gather(a.query, E, B * L, E) * wq.transpose()).rowwise() + bq;
  Matrix k = (gather(a.key, c.kdim, B * S, c.kdim) * wk.transpose()).rowwise() + bk;
  Matrix v = (gather(a.value, c.vdim, B * S, c.vdim) * wv.transpose()).rowwise() + bv;
  // The attention step takes float rows, like the module's; rounding here is far below 1e-5.
  std::vector<float> qf(q.data(), q.data() + q.size()), kf(k.data(), k.data() + k.size()),
      vf(v.data(), v.data() + v.size()), heads(static_cast<std::size_t>(B) * L * vw);
  AttentionProblem p;
  p.batch = B;
  p.heads = H;
  p.L = L;
  p.S = S;
  p.dk = dk;
  p.dv = dv;
  p.q = {qf.data(), static_cast<std::ptrdiff_t>(L) * qk, dk, qk};
  p.k = {kf.data(), static_cast<std::ptrdiff_t>(S) * qk, dk, qk};
  p.v = {vf.data(), static_cast<std::ptrdiff_t>(S) * vw, dv, vw};
  p.out = heads.data();
  p.out_batch_stride = static_cast<std::ptrdiff_t>(L) * vw;
  p.out_head_stride = dv;
  p.out_row_stride = vw;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dk)));
  p.causal = a.causal;
  p.masks[0] = key_padding_view(a.key_padding_mask, B, S, "key_padding_mask");
  p.masks[1] = attn_mask_view(a.attn_mask, B, H, L, S, "attn_mask");
  p.weights = a.weights;
  p.average_weights = a.average_weights;
  reference::run_attention(p);
  Matrix out = (gather(heads.data(), vw, B * L, vw) * wo.transpose()).rowwise() + bo;
  for (int r = 0; r < B * L; ++r)
    for (int e = 0; e < E; ++e) a.output[r * E + e] = static_cast<float>(out(r, e));
}

}  // namespace webattention::reference
