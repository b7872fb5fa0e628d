// WGSL kernel: Y = X · Wᵀ + b with activations 'int8' (docs/attention-math/storage.md §11), for int8 and
// int4 weights: X's rows quantised already by q8_rows.wgsl.js (codes four per u32, a d per block),
// W's codes as weight_storage.js stores them. The arithmetic, and so the bits, are
// q8_common.wgsl.js's (shared with the tiled variant, q8_tiled.wgsl.js).
//
// One output per invocation, 16 × 16 per workgroup; grid (⌈N/16⌉, ⌈M/16⌉). The q8linear family's
// default variant 'q8tile16' (selection/kernel_config.js).
import { q8LinearHeader } from './q8_common.wgsl.js';

/** Output tile edge: a workgroup computes Y's 16 × 16 outputs. */
export const Q8_LINEAR_TILE = 16;

/** weights: 'int8' | 'int4'; dot: 'dot4' | 'loop'. */
export function q8LinearShader({ weights, dot }) {
  const int4 = weights === 'int4';
  return /* wgsl */ `
${q8LinearHeader({ weights, dot })}
@compute @workgroup_size(${Q8_LINEAR_TILE}, ${Q8_LINEAR_TILE})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let n = gid.x;
  let m = gid.y;
  if (m >= p.M || n >= p.N) { return; }
  let blocks = (p.K + Q8_BLOCK - 1u) / Q8_BLOCK;
  var acc = 0.0;
  var nonFinite = false;
  for (var b = 0u; b < blocks; b++) {
    let at = (m * blocks + b) * WORDS;
    let e = p.wOff + n * p.K + b * Q8_BLOCK;
    var sum = 0;${int4 ? '\n    var xsum = 0;' : ''}
    for (var t = 0u; t < WORDS; t++) {
      let xw = xq[at + t];
      sum += dot4(codes4(e + 4u * t), xw);${int4 ? '\n      xsum += dot4(ONES, xw);' : ''}
    }
    let sb = p.sOff + n * blocks + b;${int4 ? '\n    sum -= zeroPoint(sb) * xsum;' : ''}
    let dx = xd[m * blocks + b];
    nonFinite = nonFinite || nonFiniteD(dx);
    acc = blockStep(acc, scales[sb], dx, sum);
  }
  y[p.yOff + m * p.yStride + n] = outputBits(acc, n, nonFinite);
}
`;
}
