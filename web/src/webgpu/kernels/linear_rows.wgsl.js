// WGSL kernel: Y = X · Wᵀ + b for few rows of X (a decode step's one to four), where the tiled
// kernels (linear.wgsl.js, linear_tiled.wgsl.js) leave most of a 64-row tile idle and give the
// GPU one workgroup per 64 columns: a projection of 3072 columns is 48 workgroups, too few to keep
// a large GPU's memory busy, and a decode step's projections only stream W. Variant 'rows8'
// (programs.js), a candidate for calls of at most DECODE_MAX_L rows (kernel_config.js).
//
// Shape (column_split.wgsl.js): a workgroup of 256 invocations owns 8 columns of Y and 4 rows; the
// 32 invocations of a column split K between them (invocation `lane` takes k = lane, lane + 32, …,
// or vec4s of k where vec4Aligned()), so that a column's 32 invocations read 128 (or 512)
// consecutive bytes of W's row at a time, each value once. Their partial sums then meet in a
// tree over workgroup memory (5 barriers). Grid: ⌈N / 8⌉ × ⌈M / 4⌉: any M is right, only slow.
//
// Exactness: each output is a sum of the same K products as the other kernels' in another order
// (32 strided partial sums, then the tree), so it agrees with them to rounding: the selection's
// default tolerance (kernel_config.js DEFAULT_TOLERANCE) holds with room. Uniforms and bindings:
// linear_common.wgsl.js; narrow weights are read by its weight(n, k).
import { linearBindings } from './linear_common.wgsl.js';
import { isPacked } from './packed_values.wgsl.js';
import { columnSplitHead } from './column_split.wgsl.js';

/** vec4: read X and W as vec4f (float32 weights, vec4Aligned() problems); weights: the module's weightsDtype. */
export function linearRowsShader({ vec4 = false, weights = 'float32' } = {}) {
  const wide = vec4 && !isPacked(weights);
  // One step of a lane's loop: W's value(s) at k (or vec4 index k4) times each row's.
  const step = wide
    ? `for (var k4 = lane; k4 < p.K / 4u; k4 += LANES) {
      let wv = w[(p.wOff + n * p.K) / 4u + k4];
      for (var r = 0u; r < ROWS; r++) {
        if (m0 + r < p.M) { acc[r] += dot(x[(p.xOff + (m0 + r) * p.xStride) / 4u + k4], wv); }
      }
    }`
    : `for (var k = lane; k < p.K; k += LANES) {
      let wv = ${isPacked(weights) ? 'weight(n, k)' : 'w[p.wOff + n * p.K + k]'};
      for (var r = 0u; r < ROWS; r++) {
        if (m0 + r < p.M) { acc[r] += x[p.xOff + (m0 + r) * p.xStride + k] * wv; }
      }
    }`;
  return /* wgsl */ `
${linearBindings(wide ? 'vec4f' : 'f32', weights)}
${columnSplitHead('partial')}
  var acc: array<f32, ROWS>;
  if (n < p.N) {
    ${step}
  }
  for (var r = 0u; r < ROWS; r++) { partial[(c * ROWS + r) * LANES + lane] = acc[r]; }
  workgroupBarrier();
  for (var s = LANES / 2u; s > 0u; s >>= 1u) {
    if (lane < s) {
      for (var r = 0u; r < ROWS; r++) {
        let i = (c * ROWS + r) * LANES + lane;
        partial[i] += partial[i + s];
      }
    }
    workgroupBarrier();
  }
  // Lane r writes row m0 + r of column n.
  if (lane < ROWS && n < p.N && m0 + lane < p.M) {
    y[p.yOff + (m0 + lane) * p.yStride + n] = partial[(c * ROWS + lane) * LANES] + bias[p.bOff + n];
  }
}
`;
}
