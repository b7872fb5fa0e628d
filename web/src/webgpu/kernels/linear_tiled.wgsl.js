// WGSL kernel: Y = X · Wᵀ + b with larger register blocks than linear.wgsl.js, for GPUs where
// that kernel is bound by workgroup-memory traffic (its 4×4 block does 16 multiply-adds per 8
// workgroup-memory reads). Variants 'r64x128k16', 'r128x128k8', … (programs.js).
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
//
// Float16 arithmetic (`halfType` 'f16', the 'h' variants, gpuPrecision 'float16'): the tiles are staged as
// f16 (half the workgroup memory), each invocation sums a K slice's BK products in f16 (twice the
// multiply-adds per cycle where the GPU packs halves), and adds each slice's sums to its float32
// ones, so a rounding error does not grow with K. `halfType` 'f32' compiles the same program with
// f32 in place of f16, and 'f16-rounded' that program with every tile value, product and sum
// rounded to f16 (pack2x16float): the tests run them where the device has no 'shader-f16'
// (SwiftShader), the first for the program, the second for float16's error.
import { linearBindings } from './linear_common.wgsl.js';
import { isPacked } from './packed_values.wgsl.js';
import { halfOps, tileBytes } from './half_arithmetic.wgsl.js';

/** Invocations per workgroup along each axis (16×16). */
const SIDE = 16;

/** Workgroup memory of a variant, in bytes (xs and ws): f16 tiles take half (not its f32 twins'). */
export const linearTiledBytes = ({ im, in: jn, bk, halfType = null }) => bk * 64 * (im + jn) * tileBytes(halfType);

/** Output tile of a variant: { rows, cols }. */
export const linearTiledTile = ({ im, in: jn }) => ({ rows: 64 * im, cols: 64 * jn });

// The staging of one operand (src: x or w, TILE rows of the tile starting at row0, limit M or N)
// through registers: fetch(k) loads the invocation's share of the K slice at k into `reg`
// (zeros past the edges), put() writes it to workgroup memory `dst` as [k][row/4][row % 4].
// Element e = t + 256·u of the slice is row e / per-row, K offset e % per-row (per-row: BK, or
// BK/4 vec4s), so consecutive invocations read consecutive addresses of a row. `read(row, k)`,
// if given, is the WGSL of one element (narrow weights: weight(n, k)) in place of src[...], and
// `read4(row, k)` of four (weight4(n, k), which reads their words once) where vec4.
function staging({ src, dst, reg, row0, limit, at, tile, bk, vec4, read, read4, ops }) {
  const width = vec4 ? 4 : 1;
  const perRow = bk / width;
  const count = (tile * perRow) / 256;
  if (!Number.isInteger(count)) throw new Error(`linear_tiled: a ${tile}-row tile with BK ${bk} does not split over 256 invocations`);
  const type = vec4 ? 'vec4f' : 'f32';
  const index = (k) => (vec4 ? `(${at(`${row0} + r`)} + ${k}) / 4u` : `${at(`${row0} + r`)} + ${k}`);
  const row = `${row0} + r`;
  const load = (k) => {
    if (!read) return `${src}[${index(k)}]`;
    return vec4 ? read4(row, k) : read(row, k);
  };
  return {
    declare: `var ${reg}: array<${type}, ${count}>;`,
    fetch: (k0) => `for (var u = 0u; u < ${count}u; u++) {
      let e = t + 256u * u;
      let r = e / ${perRow}u;
      let k = ${k0} + ${width}u * (e % ${perRow}u);
      ${reg}[u] = ${type}(0.0);
      if (${row0} + r < ${limit} && k < p.K) { ${reg}[u] = ${load('k')}; }
    }`,
    put: `for (var u = 0u; u < ${count}u; u++) {
      let e = t + 256u * u;
      let r = e / ${perRow}u;
      let c = ${width}u * (e % ${perRow}u);
      ${vec4 ? `for (var q = 0u; q < 4u; q++) { ${dst}[(c + q) * ${tile / 4}u + r / 4u][r % 4u] = ${ops.store(`${reg}[u][q]`)}; }`
    : `${dst}[c * ${tile / 4}u + r / 4u][r % 4u] = ${ops.store(`${reg}[u]`)};`}
    }`,
  };
}

// The K slice's multiply-adds into acc (float32 arithmetic), or (ops.half: float16 arithmetic)
// into the slice's own sums `part`, added to acc after the slice.
function sliceProducts({ tm, tn, ops }) {
  const tileVec = `vec4<${ops.type}>`;
  const sums = ops.half ? 'part' : 'acc';
  const loop = `for (var c = 0u; c < BK; c++) {
      var a: array<${tileVec}, IM>;
      var b: array<${tileVec}, IN>;
      for (var i = 0u; i < IM; i++) { a[i] = xs[c * ${tm / 4}u + lid.y + 16u * i]; }
      for (var j = 0u; j < IN; j++) { b[j] = ws[c * ${tn / 4}u + lid.x + 16u * j]; }
      for (var i = 0u; i < IM; i++) {
        for (var r = 0u; r < 4u; r++) {
          for (var j = 0u; j < IN; j++) { ${ops.madd(`${sums}[(i * 4u + r) * IN + j]`, 'a[i][r]', 'b[j]')}; }
        }
      }
    }`;
  if (!ops.half) return loop;
  // part is declared with acc (zero there) and zeroed again once added: a var declared inside the
  // K loop is not zeroed on each pass by every compiler (SwiftShader's sums ran on).
  return `${loop}
    for (var s = 0u; s < 4u * IM * IN; s++) {
      acc[s] += vec4f(part[s]);
      part[s] = ${tileVec}();
    }`;
}

/**
 * WGSL of variant { im, in, bk, prefetch, halfType } with vec4 (true) or scalar global loads.
 * prefetch: the next K slice is loaded into registers before the current one is multiplied, so
 * its global loads are in flight during the arithmetic (the registers cost occupancy: hence a
 * variant). halfType: float16 arithmetic (above): 'f16', or for tests 'f32' or 'f16-rounded';
 * null: float32.
 */
export function linearTiledShader({ im, in: jn, bk, vec4, prefetch = false, weights = 'float32', halfType = null }) {
  const { rows: tm, cols: tn } = linearTiledTile({ im, in: jn });
  const ops = halfOps(halfType);
  const xs = staging({ src: 'x', dst: 'xs', reg: 'xr', row0: 'm0', limit: 'p.M', at: (row) => `p.xOff + (${row}) * p.xStride`, tile: tm, bk, vec4, ops });
  const ws = staging({ src: 'w', dst: 'ws', reg: 'wr', row0: 'n0', limit: 'p.N', at: (row) => `p.wOff + (${row}) * p.K`, tile: tn, bk, vec4,
    read: isPacked(weights) ? (row, k) => `weight(${row}, ${k})` : undefined, read4: (row, k) => `weight4(${row}, ${k})`, ops });
  const stage = prefetch
    ? { before: `${xs.fetch('0u')}\n  ${ws.fetch('0u')}`, top: `${xs.put}\n    ${ws.put}`, afterBarrier: `${xs.fetch('k0 + BK')}\n    ${ws.fetch('k0 + BK')}` }
    : { before: '', top: `${xs.fetch('k0')}\n    ${ws.fetch('k0')}\n    ${xs.put}\n    ${ws.put}`, afterBarrier: '' };
  return /* wgsl */ `${ops.enable}
${linearBindings(vec4 ? 'vec4f' : 'f32', weights)}${ops.helpers}
const IM = ${im}u;
const IN = ${jn}u;
const BK = ${bk}u;
var<workgroup> xs: array<vec4<${ops.type}>, ${(bk * tm) / 4}>;  // xs[k·TM/4 + m/4][m % 4] = X[m0 + m, k0 + k]
var<workgroup> ws: array<vec4<${ops.type}>, ${(bk * tn) / 4}>;  // ws[k·TN/4 + n/4][n % 4] = W[n0 + n, k0 + k]

@compute @workgroup_size(${SIDE}, ${SIDE})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u,
        @builtin(local_invocation_index) t: u32) {
  let m0 = wg.y * ${tm}u;
  let n0 = wg.x * ${tn}u;
  // acc[(i·4 + r)·IN + j][c] = Y[m0 + 4·ty + 64·i + r, n0 + 4·tx + 64·j + c]
  var acc: array<vec4f, ${4 * im * jn}>;${ops.half ? `
  var part: array<vec4<${ops.type}>, ${4 * im * jn}>;  // a K slice's sums (float16 arithmetic)` : ''}
  ${xs.declare}
  ${ws.declare}
  ${stage.before}

  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    ${stage.top}
    workgroupBarrier();
    ${stage.afterBarrier}
    ${sliceProducts({ tm, tn, ops })}
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
