// Entry points for attention (webattention/attention.h): argument checks, then the problem for
// run_attention() (attention_driver.cpp).
#include "webattention/attention.h"

#include <cmath>
#include <string>

#include "kernels/attention_problem.h"
#include "mask_checks.h"
#include "checks.h"
#include "webattention/errors.h"

namespace webattention {

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
  if (a.scale && !(std::isfinite(*a.scale) && *a.scale > 0.0f)) {
    throw ConfigError("scale", "scale: expected a finite number > 0, got " + format_number(*a.scale));
  }
  p.scale = a.scale ? *a.scale : 1.0f / std::sqrt(static_cast<float>(a.dk));
  p.causal = a.causal;
  p.masks[0] = attn_mask_view(a.attn_mask, a.N, 1, a.L, a.S, "attn_mask");
  p.weights = a.weights;
  run_attention(p);
}

void self_attention(int N, int L, int C, const float* x, float* out, float* weights) {
  SdpaArgs a;
  a.N = N;
  a.L = a.S = L;  // self-attention: the keys are the queries
  a.dk = a.dv = C;
  a.q = a.k = a.v = x;
  a.out = out;
  a.weights = weights;
  scaled_dot_product_attention(a);
}

}  // namespace webattention
