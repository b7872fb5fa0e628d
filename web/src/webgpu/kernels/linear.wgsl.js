// WGSL kernel: Y = X · Wᵀ + b, torch.nn.Linear's layout (W is [N, K], row-major), used for the
// Q/K/V input projections and the output projection.
//
// Why this shape: a 64×64 output tile per workgroup of 16×16 invocations, each accumulating a
// 4×4 block in registers, with 16-wide K slices of X and W staged in workgroup memory (2 × 4 KiB).
// Every value loaded from global memory is then reused 64 times from workgroup memory, and every
// workgroup-memory read feeds 4 multiply-adds. An invocation's 4×4 block is interleaved (rows
// ty + 16·i, columns tx + 16·j) so that neighbouring invocations touch neighbouring addresses
// (coalesced global writes, no workgroup-memory bank conflicts). Ragged edges are zero-filled on
// load and skipped on store, so M, N and K are free.
//
// Uniforms and bindings: linear_common.wgsl.js. Variant 'tile64' (programs.js).
// Summation over K runs in order, as the WASM kernels do, so results agree to rounding.

import { linearBindings } from './linear_common.wgsl.js';
import { isPacked } from './packed_values.wgsl.js';

/** Output tile edge (rows and columns) and K-slice width; must match the WGSL below. */
export const LINEAR_TILE = 64;

/** weights: the module's weightsDtype (linear_common.wgsl.js reads W for it). */
export function linearShader(weights = 'float32') {
  const wAt = isPacked(weights) ? 'weight(n0 + r, k)' : 'w[p.wOff + (n0 + r) * p.K + k]';
  return /* wgsl */ `
${linearBindings('f32', weights)}
const T = 64u;   // output tile edge
const TK = 16u;  // K slice staged per step
var<workgroup> xs: array<f32, 1024>;  // [TK][T]: xs[k·T + m]
var<workgroup> ws: array<f32, 1024>;  // [TK][T]: ws[k·T + n]

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u,
        @builtin(local_invocation_index) t: u32) {
  let m0 = wg.y * T;
  let n0 = wg.x * T;
  var acc: array<f32, 16>;  // acc[i·4 + j] = Y[m0 + lid.y + 16i, n0 + lid.x + 16j]

  for (var k0 = 0u; k0 < p.K; k0 += TK) {
    // 1024 values of each operand, 4 per invocation; consecutive invocations read consecutive k.
    for (var e = t; e < 1024u; e += 256u) {
      let r = e / TK;
      let c = e % TK;
      let k = k0 + c;
      var xv = 0.0;
      if (m0 + r < p.M && k < p.K) { xv = x[p.xOff + (m0 + r) * p.xStride + k]; }
      xs[c * T + r] = xv;
      var wv = 0.0;
      if (n0 + r < p.N && k < p.K) { wv = ${wAt}; }
      ws[c * T + r] = wv;
    }
    workgroupBarrier();
    for (var c = 0u; c < TK; c++) {
      var a: array<f32, 4>;
      var b: array<f32, 4>;
      for (var i = 0u; i < 4u; i++) { a[i] = xs[c * T + lid.y + 16u * i]; }
      for (var j = 0u; j < 4u; j++) { b[j] = ws[c * T + lid.x + 16u * j]; }
      for (var i = 0u; i < 4u; i++) {
        for (var j = 0u; j < 4u; j++) { acc[i * 4u + j] += a[i] * b[j]; }
      }
    }
    workgroupBarrier();
  }

  for (var i = 0u; i < 4u; i++) {
    let m = m0 + lid.y + 16u * i;
    for (var j = 0u; j < 4u; j++) {
      let n = n0 + lid.x + 16u * j;
      if (m < p.M && n < p.N) { y[p.yOff + m * p.yStride + n] = acc[i * 4u + j] + bias[p.bOff + n]; }
    }
  }
}
`;
}
