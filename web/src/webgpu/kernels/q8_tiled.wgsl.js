// WGSL kernel: Y = X · Wᵀ + b with activations 'int8', register-blocked: the q8linear family's
// tiled variants (selection/kernel_config.js), candidates for calls of many rows (prefill). The
// arithmetic is q8_common.wgsl.js's, as in q8_linear.wgsl.js: per output and block the same exact
// i32 dot, then the same f32 steps in the same block order, so the outputs are that kernel's (and
// the WASM core's) bit for bit; only the integer sums' order and where the operands come from
// differ.
//
// Shape: a workgroup of 16×16 invocations owns a (16·RM)×(16·RN) tile of Y; invocation (tx, ty)
// holds the outputs of rows m0 + ty + 16·i (i < RM) and columns n0 + tx + 16·j (j < RN). Per
// block of Q8_BLOCK along K, the tile's activation words (WORDS a row), weight words (four codes
// as i8 lanes, int4 spread to bytes), the rows' d, the columns' scales and (int4) zero points and
// the rows' code sums are staged in workgroup memory; then each invocation forms RM·RN block dots
// from RM + RN words per step (word-major layout [t][row]: the 16 invocations of a workgroup row
// read 16 consecutive words). Rows past M and columns past N stage zero codes (and d 0, scale 0),
// and are not stored, so M, N and K are free. Grid (⌈N / (16·RN)⌉, ⌈M / (16·RM)⌉).
import { q8LinearHeader } from './q8_common.wgsl.js';

const SIDE = 16;  // invocations per workgroup along each axis

/** Output tile of a variant { rm, rn }: { rows, cols }. */
export const q8TiledTile = ({ rm, rn }) => ({ rows: SIDE * rm, cols: SIDE * rn });

// Stages `count` words of a [WORDS][tile] array `dst` from `load(row, t)` (row < tile, zero past
// `limit`), consecutive invocations taking consecutive words of a row (global reads in order).
function stage(dst, tile, row0, limit, load) {
  return `for (var e = lt; e < ${tile}u * WORDS; e += ${SIDE * SIDE}u) {
      let r = e / WORDS;
      let t = e % WORDS;
      ${dst}[t * ${tile}u + r] = select(0u, ${load('r', 't')}, ${row0} + r < ${limit});
    }`;
}

/** WGSL of variant { rm, rn } for `weights` ('int8' | 'int4') and `dot` ('dot4' | 'loop'). */
export function q8TiledShader({ rm, rn, weights, dot }) {
  const int4 = weights === 'int4';
  const { rows: tm, cols: tn } = q8TiledTile({ rm, rn });
  if (tm > SIDE * SIDE || tn > SIDE * SIDE) throw new Error(`q8_tiled: a ${tm}×${tn} tile has more rows than invocations`);
  const xsLoad = (r, t) => `xq[((m0 + ${r}) * blocks + b) * WORDS + ${t}]`;
  const wsLoad = (r, t) => `codes4(p.wOff + (n0 + ${r}) * p.K + b * Q8_BLOCK + 4u * ${t})`;
  return /* wgsl */ `
${q8LinearHeader({ weights, dot })}
const RM = ${rm}u;
const RN = ${rn}u;
var<workgroup> xs: array<u32, ${tm} * WORDS>;  // xs[t·TM + r]: word t of row m0 + r's block
var<workgroup> ws: array<u32, ${tn} * WORDS>;  // ws[t·TN + c]: word t of column n0 + c's block
var<workgroup> ds: array<u32, ${tm}>;          // the rows' d (bits)
var<workgroup> sws: array<f32, ${tn}>;         // the columns' scales
${int4 ? `var<workgroup> zs: array<i32, ${tn}>;          // the columns' zero points
var<workgroup> xsums: array<i32, ${tm}>;       // the rows' Σ q_x over the block
` : ''}
@compute @workgroup_size(${SIDE}, ${SIDE})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u,
        @builtin(local_invocation_index) lt: u32) {
  let m0 = wg.y * ${tm}u;
  let n0 = wg.x * ${tn}u;
  let blocks = (p.K + Q8_BLOCK - 1u) / Q8_BLOCK;
  var acc: array<f32, ${rm * rn}>;          // acc[i·RN + j]: row m0 + ty + 16·i, column n0 + tx + 16·j
  var nonFinite: array<bool, ${rm}>;
  for (var b = 0u; b < blocks; b++) {
    ${stage('xs', tm, 'm0', 'p.M', xsLoad)}
    ${stage('ws', tn, 'n0', 'p.N', wsLoad)}
    if (lt < ${tm}u) {
      let m = m0 + lt;
      ds[lt] = select(0u, xd[m * blocks + b], m < p.M);${int4 ? `
      var xsum = 0;
      for (var t = 0u; t < WORDS; t++) { xsum += dot4(ONES, select(0u, ${xsLoad('lt', 't')}, m < p.M)); }
      xsums[lt] = xsum;` : ''}
    }
    if (lt < ${tn}u) {
      let n = n0 + lt;
      let sb = p.sOff + n * blocks + b;
      sws[lt] = select(0.0, scales[sb], n < p.N);${int4 ? '\n      zs[lt] = select(0, zeroPoint(sb), n < p.N);' : ''}
    }
    workgroupBarrier();
    var sums = array<i32, ${rm * rn}>();  // this block's dots (initialised anew each block)
    for (var t = 0u; t < WORDS; t++) {
      var a: array<u32, RM>;
      for (var i = 0u; i < RM; i++) { a[i] = xs[t * ${tm}u + lid.y + 16u * i]; }
      for (var j = 0u; j < RN; j++) {
        let c = ws[t * ${tn}u + lid.x + 16u * j];
        for (var i = 0u; i < RM; i++) { sums[i * RN + j] += dot4(c, a[i]); }
      }
    }
    for (var i = 0u; i < RM; i++) {
      let dx = ds[lid.y + 16u * i];
      nonFinite[i] = nonFinite[i] || nonFiniteD(dx);
      for (var j = 0u; j < RN; j++) {
        let sum = sums[i * RN + j]${int4 ? ' - zs[lid.x + 16u * j] * xsums[lid.y + 16u * i]' : ''};
        acc[i * RN + j] = blockStep(acc[i * RN + j], sws[lid.x + 16u * j], dx, sum);
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < RM; i++) {
    let m = m0 + lid.y + 16u * i;
    for (var j = 0u; j < RN; j++) {
      let n = n0 + lid.x + 16u * j;
      if (m < p.M && n < p.N) { y[p.yOff + m * p.yStride + n] = outputBits(acc[i * RN + j], n, nonFinite[i]); }
    }
  }
}
`;
}
