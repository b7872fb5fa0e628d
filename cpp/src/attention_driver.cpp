// The threaded driver of the attention kernels: run_attention() (declared in attention_problem.h)
// spreads a problem's units over the threads, each with its own workspace, and zeroes averaged
// weights first. Every attention path (SDPA, the module's forward, the cached forward) ends here.
#include <algorithm>
#include <vector>

#include "kernels/attention_problem.h"
#include "kernels/kernels.h"
#include "parallel.h"

namespace webattention {

void run_attention(const AttentionProblem& p) {
  if (p.weights && p.average_weights) {  // this problem's rows of each batch's [rows, cols]
    const std::size_t cols = static_cast<std::size_t>(p.weight_cols());
    for (int b = 0; b < p.batch; ++b) {
      float* w = p.weights + static_cast<std::size_t>(b) * p.weight_rows() * cols;
      std::fill(w, w + p.L * cols, 0.0f);
    }
  }
  const std::size_t workspace_floats = kernels::attention_workspace_floats(p);
  // Averaged weights are summed over a batch's heads: keep each batch's units on one thread.
  const int grain = (p.weights && p.average_weights) ? p.kv_heads() : 1;
  parallel_for(p.units(), grain, [&](int begin, int end) {
    // One workspace per thread, kept between calls (no allocation per call once warm).
    thread_local std::vector<float> workspace;
    if (workspace.size() < workspace_floats) workspace.resize(workspace_floats);
    for (int unit = begin; unit < end; ++unit) {
      if (!p.rows.shift && !p.positions.ids) {
        kernels::attention_unit(p, unit, workspace.data());
        continue;
      }
      // A batch at positions of its own (AttentionProblem::rows, Positions::ids): its unit of its
      // own problem.
      const int b = unit / p.kv_heads();
      kernels::attention_unit(p.for_batch(b), unit, workspace.data());
    }
  });
}

}  // namespace webattention
