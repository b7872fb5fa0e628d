// Entry points for attention: argument checks, then the kernels.
#include "webattention/attention.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attention_problem.h"
#include "checks.h"
#include "kernels/kernels.h"
#include "parallel.h"
#include "webattention/errors.h"

namespace webattention {

void run_attention(const AttentionProblem& p) {
  if (p.weights && p.average_weights) {
    std::fill(p.weights, p.weights + static_cast<std::size_t>(p.batch) * p.L * p.S, 0.0f);
  }
  const std::size_t workspace_floats = kernels::attention_workspace_floats(p);
  // Averaged weights are summed over a batch's heads: keep each batch's units on one thread.
  const int grain = (p.weights && p.average_weights) ? p.kv_heads() : 1;
  parallel_for(p.units(), grain, [&](int begin, int end) {
    // One workspace per thread, kept between calls (no allocation per call once warm).
    thread_local std::vector<float> workspace;
    if (workspace.size() < workspace_floats) workspace.resize(workspace_floats);
    for (int unit = begin; unit < end; ++unit) kernels::attention_unit(p, unit, workspace.data());
  });
}

void scaled_dot_product_attention(const SdpaArgs& a) {
  require_positive("N", a.N);
  require_positive("L", a.L);
  require_positive("S", a.S);
  require_positive("dk", a.dk);
  require_positive("dv", a.dv);
  AttentionProblem p;
  p.batch = a.N;
  p.L = a.L;
  p.S = a.S;
  p.dk = a.dk;
  p.dv = a.dv;
  p.q = {a.q, static_cast<std::ptrdiff_t>(a.L) * a.dk, 0, a.dk};
  p.k = {a.k, static_cast<std::ptrdiff_t>(a.S) * a.dk, 0, a.dk};
  p.v = {a.v, static_cast<std::ptrdiff_t>(a.S) * a.dv, 0, a.dv};
  p.out = a.out;
  p.out_batch_stride = static_cast<std::ptrdiff_t>(a.L) * a.dv;
  p.out_row_stride = a.dv;
  p.scale = (a.scale > 0.0f) ? a.scale : 1.0f / std::sqrt(static_cast<float>(a.dk));
  p.causal = a.causal;
  p.masks[0] = attn_mask_view(a.attn_mask, a.N, 1, a.L, a.S, "attn_mask");
  p.weights = a.weights;
  run_attention(p);
}

void self_attention(int N, int L, int C, const float* x, float* out, float* weights) {
  SdpaArgs a;
  a.N = N;
  a.L = L;
  a.S = L;
  a.dk = C;
  a.dv = C;
  a.q = a.k = a.v = x;
  a.out = out;
  a.weights = weights;
  scaled_dot_product_attention(a);
}

}  // namespace webattention
