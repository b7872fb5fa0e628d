// The test oracle: full score matrices in double precision with Eigen, written for clarity only.
#include "reference/reference.h"
#include "reference/storage_reference.h"

#include <Eigen/Dense>
#include <algorithm>
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

// The blocks along a row that activations 'int8' quantises (§11: the weights' blocks).
constexpr int kActivationBlock = 32;

// rows × cols input rows as a projection reads them: as they are, or under activations 'int8' as
// their int8 blocks' values.
Matrix projection_input(const float* base, int rows, int cols, bool quantise) {
  if (!quantise) return gather(base, cols, rows, cols);
  const std::vector<double> q = int8_activations(std::vector<float>(base, base + static_cast<std::size_t>(rows) * cols), rows, cols, kActivationBlock);
  return Eigen::Map<const Matrix>(q.data(), rows, cols);
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

// softmax(cap(q kᵀ · scale) + bias) for one (batch, head): the L × S attention probabilities,
// where cap(s) = softcap · tanh(s / softcap) when softcap > 0, else s. With a sink (non-null),
// exp(*sink) joins every row's denominator: p_ij = exp(s_ij) / (Σ_k exp(s_ik) + exp(sink)). A row
// whose every key is masked is all zeros, by design (PyTorch gives NaN); one whose allowed keys
// all score -inf by arithmetic is NaN, as in PyTorch. A masked score is -inf whatever q·k is (a
// NaN or Inf key stays masked); `hidden` marks the masked (i, j).
Matrix probabilities(const Matrix& q, const Matrix& k, double scale, double softcap, bool causal,
                     const ScoreBias& bias, Matrix& hidden, const double* sink = nullptr) {
  Matrix p = (q * k.transpose()) * scale;
  hidden = Matrix::Zero(p.rows(), p.cols());
  for (Eigen::Index i = 0; i < p.rows(); ++i) {
    for (Eigen::Index j = 0; j < p.cols(); ++j) {
      if (softcap > 0.0) p(i, j) = softcap * std::tanh(p(i, j) / softcap);
      const double term = bias(static_cast<int>(i), static_cast<int>(j));
      const bool masked = (causal && j > i) || term == kNegInf;
      p(i, j) = masked ? kNegInf : p(i, j) + term;
      hidden(i, j) = masked;
    }
    const double max = sink ? std::max(p.row(i).maxCoeff(), *sink) : p.row(i).maxCoeff();
    if (max == kNegInf) {
      // No allowed key: zero. Allowed keys that all score −∞ by arithmetic (an infinite query or
      // key): NaN, as PyTorch's exp(−∞ − −∞).
      const bool allowed = (hidden.row(i).array() == 0.0).any();
      p.row(i).setConstant(allowed ? std::numeric_limits<double>::quiet_NaN() : 0.0);
      continue;
    }
    // std::exp: Eigen's vectorised exp clamps its argument, so that exp(-inf) came out ~1e-308, not
    // the 0 whose product with an infinite value is NaN (as in PyTorch).
    p.row(i) = (p.row(i).array() - max).unaryExpr([](double x) { return std::exp(x); }).matrix();
    p.row(i) /= p.row(i).sum() + (sink ? std::exp(*sink - max) : 0.0);
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

// 1 / sqrt(mean(x²) + eps) of one head-wide block of a row: qk-norm's factor for that head.
template <class Head>
double inverse_rms(const Head& head, int head_dim, double eps) {
  return 1.0 / std::sqrt(head.squaredNorm() / head_dim + eps);
}

// Qwen3's qk-norm (docs/attention-math/decoding.md §8's neighbour in MhaConfig): every head_dim-wide head
// of every row divided by its root mean square (plus eps) and scaled by w.
void rms_norm_heads(Matrix& x, int head_dim, const std::vector<float>& w, double eps) {
  for (Eigen::Index r = 0; r < x.rows(); ++r)
    for (Eigen::Index h0 = 0; h0 < x.cols(); h0 += head_dim) {
      auto head = x.block(r, h0, 1, head_dim);
      const double inv = inverse_rms(head, head_dim, eps);
      for (int c = 0; c < head_dim; ++c) head(0, c) *= inv * w[c];
    }
}

// The largest gain qk-norm gives x's heads (x before the norm), sqrt(mean(T²)) / sqrt(mean(x²) +
// eps), T the head's entries in `terms`: the factor by which the norm magnifies an error of a
// few ulps of T.
double rms_norm_gain(const Matrix& x, const Matrix& terms, int head_dim, double eps) {
  double gain = 0.0;
  for (Eigen::Index r = 0; r < x.rows(); ++r)
    for (Eigen::Index h0 = 0; h0 < x.cols(); h0 += head_dim) {
      const double t = std::sqrt(terms.block(r, h0, 1, head_dim).squaredNorm() / head_dim);
      gain = std::max(gain, t * inverse_rms(x.block(r, h0, 1, head_dim), head_dim, eps));
    }
  return gain;
}

// Per entry of input · wᵀ + b, the sum of its terms' magnitudes, |input| · |w|ᵀ + |b|: the scale
// of a float32 core's rounding of that entry, whatever the terms cancel to.
Matrix term_magnitudes(const Matrix& input, const Matrix& w, const Eigen::RowVectorXd& b) {
  return (input.cwiseAbs() * w.cwiseAbs().transpose()).rowwise() + b.cwiseAbs();
}

// θ_j of §8, scaled as §8 writes it ('linear': / factor; 'llama3': by wavelength).
double rotary_theta(const MhaConfig& c, int j) {
  const double theta = std::pow(c.rotary_base, -2.0 * j / c.rotary_dim);
  if (c.rotary_scaling == MhaConfig::RotaryScaling::kLinear) return theta / c.rotary_factor;
  if (c.rotary_scaling != MhaConfig::RotaryScaling::kLlama3) return theta;
  const double wavelength = 2.0 * 3.14159265358979323846 / theta;
  const double r = c.rotary_original_max_positions / wavelength;
  const double lo = c.rotary_low_freq_factor, hi = c.rotary_high_freq_factor;
  if (r >= hi) return theta;
  if (r <= lo) return theta / c.rotary_factor;
  const double s = (r - lo) / (hi - lo);
  return (1.0 - s) * theta / c.rotary_factor + s * theta;
}

// §8 on rows [B·T, heads·head_dim]: row b·T + i at position ids[b·T + i] (or i without ids), its
// pairs turned by p·θ_j, or by row p of a given table.
void rotate(Matrix& x, const MhaConfig& c, int head_dim, int T, const std::int32_t* ids,
            const MhaParameters& params) {
  const int half = c.rotary_dim / 2;
  const int step = c.rotary_interleaved ? 2 : 1, second = c.rotary_interleaved ? 1 : half;
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const std::int64_t p = ids ? ids[r] : r % T;
    for (Eigen::Index h0 = 0; h0 < x.cols(); h0 += head_dim)
      for (int j = 0; j < half; ++j) {
        const bool table = !params.rotary_cos.empty();
        const double angle = static_cast<double>(p) * rotary_theta(c, j);
        const double cs = table ? params.rotary_cos[p * half + j] : std::cos(angle);
        const double sn = table ? params.rotary_sin[p * half + j] : std::sin(angle);
        double& a = x(r, h0 + j * step);
        double& b = x(r, h0 + j * step + second);
        const double x1 = a, x2 = b;
        a = x1 * cs - x2 * sn;
        b = x2 * cs + x1 * sn;
      }
  }
}

}  // namespace

void scaled_dot_product_attention(const SdpaArgs& a) {
  const int L = a.L, S = a.S;
  const double scale = a.scale ? static_cast<double>(*a.scale) : 1.0 / std::sqrt(static_cast<double>(a.dk));
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
    const Matrix p = probabilities(q, k, scale, 0.0, a.causal, bias, hidden);
    scatter(weighted_values(p, hidden, v), a.out + n * static_cast<std::ptrdiff_t>(L) * a.dv);
    if (a.weights) scatter(p, a.weights + n * LS);
  }
}

const std::vector<float>* MhaParameters::find(const std::string& name) const {
  for (const auto& [key, values] : entries)
    if (key == name) return &values;
  return nullptr;
}

namespace {

// The widths of a module, PyTorch's defaults for those left at 0 (MhaConfig says which).
struct Widths {
  int E, H, kdim, vdim, dk, dv, qk, vw;
};

Widths widths_of(const MhaConfig& config) {
  const int E = config.embed_dim, H = config.num_heads;
  const int dk = config.head_dim ? config.head_dim : E / H;
  const int dv = config.value_head_dim ? config.value_head_dim : E / H;
  return {E, H, config.kdim ? config.kdim : E, config.vdim ? config.vdim : E, dk, dv, H * dk, H * dv};
}

const std::vector<float>& need(const MhaParameters& params, const std::string& name) {
  const auto* p = params.find(name);
  if (!p) throw std::invalid_argument("reference: missing " + name);
  return *p;
}

// The four projections' weights ([out, in]) and biases (zero where the module has none).
struct Projections {
  Matrix wq, wk, wv, wo;
  Eigen::RowVectorXd bq, bk, bv, bo;
};

Projections read_projections(const MhaConfig& config, const MhaParameters& params, const Widths& w) {
  Projections p;
  if (const auto* packed = params.find("in_proj_weight")) {
    Matrix all = gather(packed->data(), w.E, 3 * w.E, w.E);
    p.wq = all.topRows(w.qk);
    p.wk = all.middleRows(w.qk, w.qk);
    p.wv = all.bottomRows(w.vw);
  } else {
    p.wq = gather(need(params, "q_proj_weight").data(), w.E, w.qk, w.E);
    p.wk = gather(need(params, "k_proj_weight").data(), w.kdim, w.qk, w.kdim);
    p.wv = gather(need(params, "v_proj_weight").data(), w.vdim, w.vw, w.vdim);
  }
  p.wo = gather(need(params, "out_proj.weight").data(), w.vw, w.E, w.vw);
  p.bq = p.bk = Eigen::RowVectorXd::Zero(w.qk);
  p.bv = Eigen::RowVectorXd::Zero(w.vw);
  p.bo = Eigen::RowVectorXd::Zero(w.E);
  // Input biases packed as in_proj_bias, or one entry per projection that has one.
  const auto read_bias = [&](const char* name, int offset, Eigen::RowVectorXd& b) {
    const std::vector<float>& values = need(params, name);
    for (Eigen::Index i = 0; i < b.size(); ++i) b(i) = values[offset + i];
  };
  const ProjectionBias& with = config.bias;
  if (with.all_inputs()) {
    read_bias("in_proj_bias", 0, p.bq);
    read_bias("in_proj_bias", w.qk, p.bk);
    read_bias("in_proj_bias", 2 * w.qk, p.bv);
  } else {
    if (with.q) read_bias("q_proj_bias", 0, p.bq);
    if (with.k) read_bias("k_proj_bias", 0, p.bk);
    if (with.v) read_bias("v_proj_bias", 0, p.bv);
  }
  if (with.out) read_bias("out_proj.bias", 0, p.bo);
  return p;
}

// The heads' outputs side by side (row b·L + i) from the projected q, k, v; the weights into
// a.weights where asked (averaged over the heads or per head).
Matrix attend_heads(const MhaConfig& config, const MhaParameters& params, const MhaForwardArgs& a, const Widths& w,
                    const Matrix& q, const Matrix& k, const Matrix& v) {
  const int B = a.batch, L = a.L, S = a.S, H = w.H, dk = w.dk, dv = w.dv;
  const std::size_t LS = static_cast<std::size_t>(L) * S;
  const MaskArg& kpm = a.key_padding_mask;
  const MaskArg& am = a.attn_mask;
  Matrix heads(B * L, w.vw);
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
      const double scale = config.scale ? *config.scale : 1.0 / std::sqrt(static_cast<double>(dk));
      const double sink = config.sinks ? need(params, "sinks")[h] : 0.0;
      // The module refuses a +Inf sink at load_parameter() (docs/attention-math/scores.md §10): the
      // oracle does not give it a meaning either.
      if (sink == -kNegInf) throw std::invalid_argument("reference: a +Inf sink is refused");
      Matrix hidden;
      const Matrix p = probabilities(q.block(b * L, h * dk, L, dk), k.block(b * S, h * dk, S, dk),
                                     scale, config.softcap, a.causal, bias, hidden, config.sinks ? &sink : nullptr);
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
  return heads;
}

}  // namespace

void mha_forward(const MhaConfig& config, const MhaParameters& params,
                 const MhaForwardArgs& a, Sensitivity* sensitivity, double ambiguous_code) {
  const bool act8 = config.activations == StorageType::i8;
  const Widths w = widths_of(config);
  const Projections pr = read_projections(config, params, w);
  const int B = a.batch, L = a.L, S = a.S;
  const Matrix query_in = projection_input(a.query, B * L, w.E, act8), key_in = projection_input(a.key, B * S, w.kdim, act8);
  Matrix q = (query_in * pr.wq.transpose()).rowwise() + pr.bq;
  Matrix k = (key_in * pr.wk.transpose()).rowwise() + pr.bk;
  if (sensitivity) *sensitivity = Sensitivity{};
  if (config.qk_norm) {
    const double eps = config.qk_norm_eps;
    if (sensitivity) {  // the terms' magnitudes only for a caller that asks
      sensitivity->qk_norm_gain = std::max(rms_norm_gain(q, term_magnitudes(query_in, pr.wq, pr.bq), w.dk, eps),
                                           rms_norm_gain(k, term_magnitudes(key_in, pr.wk, pr.bk), w.dk, eps));
    }
    rms_norm_heads(q, w.dk, need(params, "q_norm.weight"), eps);
    rms_norm_heads(k, w.dk, need(params, "k_norm.weight"), eps);
  }
  if (config.rotary_dim > 0) {
    rotate(q, config, w.dk, L, a.position_ids, params);
    rotate(k, config, w.dk, S, a.position_ids, params);
  }
  const Matrix v = (projection_input(a.value, B * S, w.vdim, act8) * pr.wv.transpose()).rowwise() + pr.bv;
  Matrix heads = attend_heads(config, params, a, w, q, k, v);
  if (sensitivity) sensitivity->out_slack.assign(static_cast<std::size_t>(B) * L * w.E, 0.0);
  if (act8) {
    // The core holds the heads' output in float32: quantise that, and say where it may round apart.
    std::vector<float> held(static_cast<std::size_t>(heads.size()));
    scatter(heads, held.data());
    if (sensitivity) {
      const std::vector<double> exact(heads.data(), heads.data() + heads.size());
      const std::vector<double> slack = int8_activation_slack(exact, B * L, w.vw, kActivationBlock, ambiguous_code);
      const Matrix spread = Eigen::Map<const Matrix>(slack.data(), B * L, w.vw) * pr.wo.cwiseAbs().transpose();
      std::copy_n(spread.data(), spread.size(), sensitivity->out_slack.data());
    }
    heads = projection_input(held.data(), B * L, w.vw, true);
  }
  scatter((heads * pr.wo.transpose()).rowwise() + pr.bo, a.output);
}

}  // namespace webattention::reference
