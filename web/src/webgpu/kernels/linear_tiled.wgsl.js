// WGSL kernel: Y = X · Wᵀ + b with larger register blocks than linear.wgsl.js, for GPUs where
// that kernel is bound by workgroup-memory traffic (its 4×4 block does 16 multiply-adds per 8
// workgroup-memory reads). Variants 'r64x128k16', 'r128x128k8', … (kernel_variants.js).
//
// Shape: a workgroup of 16×16 invocations owns a TM×TN tile of Y (TM = 64·IM, TN = 64·IN,
// IM, IN ∈ {1, 2}); each invocation accumulates (4·IM)×(4·IN) outputs as vec4s: rows
// 4·ty + 64·i + r and columns 4·tx + 64·j + c (i < IM, j < IN, r, c < 4). K advances in slices
// of BK staged in workgroup memory as vec4s along m and n (xs[k][m/4], ws[k][n/4]), so that per k
// an invocation reads IM + IN vec4s for 16·IM·IN multiply-adds (8×8: 4 reads for 64), and the
// 16 invocations of a row of the workgroup read 16 consecutive vec4s (no bank conflicts).
// Global loads are vec4s along k where the problem allows (vec4Aligned(): K, stride and offsets
// multiples of 4), else scalars; the flavour is part of the pipeline key. Ragged edges are
// zero-filled on load and skipped on store, so M, N and K are free.
//
// Exactness: every output sums its K products in order k = 0, 1, …, as linear.wgsl.js and the
// WASM kernels do, so the variants agree to rounding (fused multiply-add aside).
import { linearBindings } from './linear_common.wgsl.js';

/** Invocations per workgroup along each axis (16×16). */
const SIDE = 16;

/** Workgroup memory of a variant, in bytes (xs and ws). */
export const linearTiledBytes = ({ im, in: jn, bk }) => bk * 64 * (im + jn) * 4;

/** Output tile of a variant: { rows, cols }. */
export const linearTiledTile = ({ im, in: jn }) => ({ rows: 64 * im, cols: 64 * jn });

/** The global-to-workgroup load of one operand (src: x or w) into dst (xs or ws), TILE rows. */
function stage({ src, dst, rowsOf, base, stride, tile, bk, vec4 }) {
  if (vec4) {
    return `for (var e = t; e < ${(tile * bk) / 4}u; e += 256u) {
      let r = e / ${bk / 4}u;
      let k = k0 + 4u * (e % ${bk / 4}u);
      var v = vec4f(0.0);
      if (${rowsOf} + r < ${base === 'x' ? 'p.M' : 'p.N'} && k < p.K) { v = ${src}[(${stride(`${rowsOf} + r`)} + k) / 4u]; }
      let c = 4u * (e % ${bk / 4}u);
      for (var q = 0u; q < 4u; q++) { ${dst}[(c + q) * ${tile / 4}u + r / 4u][r % 4u] = v[q]; }
    }`;
  }
  return `for (var e = t; e < ${tile * bk}u; e += 256u) {
      let r = e / ${bk}u;
      let c = e % ${bk}u;
      let k = k0 + c;
      var v = 0.0;
      if (${rowsOf} + r < ${base === 'x' ? 'p.M' : 'p.N'} && k < p.K) { v = ${src}[${stride(`${rowsOf} + r`)} + k]; }
      ${dst}[c * ${tile / 4}u + r / 4u][r % 4u] = v;
    }`;
}

/** WGSL of variant { im, in, bk } with vec4 (true) or scalar global loads. */
export function linearTiledShader({ im, in: jn, bk, vec4 }) {
  const { rows: tm, cols: tn } = linearTiledTile({ im, in: jn });
  const xAt = (row) => `p.xOff + (${row}) * p.xStride`;
  const wAt = (row) => `p.wOff + (${row}) * p.K`;
  return /* wgsl */ `
${linearBindings(vec4 ? 'vec4f' : 'f32')}
const IM = ${im}u;
const IN = ${jn}u;
var<workgroup> xs: array<vec4f, ${(bk * tm) / 4}>;  // xs[k·TM/4 + m/4][m % 4] = X[m0 + m, k0 + k]
var<workgroup> ws: array<vec4f, ${(bk * tn) / 4}>;  // ws[k·TN/4 + n/4][n % 4] = W[n0 + n, k0 + k]

@compute @workgroup_size(${SIDE}, ${SIDE})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u,
        @builtin(local_invocation_index) t: u32) {
  let m0 = wg.y * ${tm}u;
  let n0 = wg.x * ${tn}u;
  // acc[(i·4 + r)·IN + j][c] = Y[m0 + 4·ty + 64·i + r, n0 + 4·tx + 64·j + c]
  var acc: array<vec4f, ${4 * im * jn}>;

  for (var k0 = 0u; k0 < p.K; k0 += ${bk}u) {
    ${stage({ src: 'x', dst: 'xs', rowsOf: 'm0', base: 'x', stride: xAt, tile: tm, bk, vec4 })}
    ${stage({ src: 'w', dst: 'ws', rowsOf: 'n0', base: 'w', stride: wAt, tile: tn, bk, vec4 })}
    workgroupBarrier();
    for (var c = 0u; c < ${bk}u; c++) {
      var a: array<vec4f, IM>;
      var b: array<vec4f, IN>;
      for (var i = 0u; i < IM; i++) { a[i] = xs[c * ${tm / 4}u + lid.y + 16u * i]; }
      for (var j = 0u; j < IN; j++) { b[j] = ws[c * ${tn / 4}u + lid.x + 16u * j]; }
      for (var i = 0u; i < IM; i++) {
        for (var r = 0u; r < 4u; r++) {
          for (var j = 0u; j < IN; j++) { acc[(i * 4u + r) * IN + j] += a[i][r] * b[j]; }
        }
      }
    }
    workgroupBarrier();
  }

  for (var i = 0u; i < IM; i++) {
    for (var r = 0u; r < 4u; r++) {
      let m = m0 + 4u * lid.y + 64u * i + r;
      if (m >= p.M) { continue; }
      for (var j = 0u; j < IN; j++) {
        for (var c = 0u; c < 4u; c++) {
          let n = n0 + 4u * lid.x + 64u * j + c;
          if (n < p.N) { y[p.yOff + m * p.yStride + n] = acc[(i * 4u + r) * IN + j][c] + bias[p.bOff + n]; }
        }
      }
    }
  }
}
`;
}
