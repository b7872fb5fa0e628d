// WGSL shared by the cooperative flash kernels (flash_tiled, flash_quad, flash_oct): invocations
// (tr, tc) share 64 query rows of one (batch, head), each owning rowsPer of them. `shape` says how:
// 256 invocations (16×16) of 4 rows each (the default: flash_tiled, flash_quad) or 64 (8×8) of 8
// (flash_oct). The pieces here are what they do alike: the ids, Q staged once in workgroup memory
// as vec4s over rows (qs[d·16 + row/4][row % 4]), the running max and sum per owned row (m and l:
// vec4s for 4 rows, arrays for 8), the causal end and the window's start of the key loop (uniform
// per workgroup, as the barriers need), the staging of a tile's K or V rows, and the end: each
// owned row's output scaled by 1/l and its stats.

import { attentionCommon, flashBindings } from './attention_common.wgsl.js';

/**
 * The head of a vec4 cooperative kernel's program (flash_quad, flash_oct): the attention helpers
 * and bindings, its constants (head widths, DV4 vec4s per V row, CG output column groups of 4 per
 * invocation, the tile's BR rows and BC keys) and Q in workgroup memory, qs[d·16 + row/4][row % 4].
 */
export const vec4TileHead = ({ dk, dv, kv, cg, br, bc }) => /* wgsl */ `${attentionCommon}
const DK = ${dk}u;
const DV = ${dv}u;
const DV4 = ${Math.ceil(dv / 4)}u;  // vec4s per V row
const CG = ${cg}u;    // output column groups (of 4) per invocation
const BR = ${br}u;
const BC = ${bc}u;
${flashBindings({ kv, dk, dv })}
var<workgroup> qs: array<vec4f, ${(br / 4) * dk}>;                    // qs[d·16 + row/4][row % 4]

// The scores of one row against keys key0 … key0 + 3 of the tile from key j0 (n keys in it),
// given their dot products, masked; NEG past the tile's keys or the call's rows.
fn maskedFour(dots: vec4f, b: u32, h: u32, row: u32, key0: u32, n: u32, j0: u32) -> vec4f {
  var s = vec4f(NEG);
  for (var c = 0u; c < 4u; c++) {
    if (key0 + c < n && row < p.L) { s[c] = maskedScore(dots[c], b, h, row, j0 + key0 + c); }
  }
  return s;
}`;

/** The default shape: 256 invocations, 16 columns of them, 4 rows each. */
const SIXTEEN = { threads: 256, cols: 16, rowsPer: 4 };

// The running max and sum of the owned rows, row rowsPer·tr + i in m[i] and l[i].
const runningStats = (rowsPer) => (rowsPer === 4 ? `
  var m = vec4f(NEG);   // running max of row 4·tr + i in m[i]
  var l = vec4f(0.0);   // running sum` : `
  var m: array<f32, ${rowsPer}>;  // running max of row ${rowsPer}·tr + i in m[i]
  var l: array<f32, ${rowsPer}>;  // running sum
  for (var i = 0u; i < ${rowsPer}u; i++) { m[i] = NEG; l[i] = 0.0; }`);

/**
 * The start of main(): ids, Q staged in workgroup memory (unless stageQ is false: `qStore` writes
 * value x of row r, feature d < `qWidth`; zeros past DK), m and l, keyBegin and keyEnd. Needs BR and DK.
 */
export const cooperativeStart = ({ stageQ = true, qWidth = 'DK', qStore = 'qs[d * 16u + r / 4u][r % 4u] = x;', shape = SIXTEEN } = {}) => /* wgsl */ `
  let b = wg.y / p.H;
  let h = wg.y % p.H;
  let g = kvHead(h);
  let tr = t / ${shape.cols}u;
  let tc = t % ${shape.cols}u;
  let row0 = wg.x * BR;
${stageQ ? `
  for (var e = t; e < BR * ${qWidth}; e += ${shape.threads}u) {
    let r = e / ${qWidth};
    let d = e % ${qWidth};
    var x = 0.0;
    if (row0 + r < p.L && d < DK) { x = q[p.qOff + (b * p.L + row0 + r) * p.qStride + h * DK + d]; }
    ${qStore}
  }` : ''}
${runningStats(shape.rowsPer)}
  var keyEnd = p.S;
  if (p.causal != 0u) { keyEnd = min(p.S, row0 + BR + shiftOf(b)); }
  let keyBegin = firstKey(b, row0);  // a window's first key: the loop visits O(W) keys
`;

/**
 * A loop staging `width` values of each of the tile's BC key rows from `src` (k or v, read by
 * kAt / vAt, head width `dim`; zeros past the n keys of the tile and past `dim`): `store` writes
 * value x of key c, element d.
 */
export const stageKeyRows = ({ src, width, dim, store, shape = SIXTEEN }) => /* wgsl */ `
    for (var e = t; e < BC * ${width}; e += ${shape.threads}u) {
      let c = e / ${width};
      let d = e % ${width};
      var x = 0.0;
      if (c < n && d < ${dim}) { x = ${src}At(keyRow(b, j0 + c), g, d); }
      ${store}
    }`;

/** The end of main(): `writeRow` writes row `row`'s outputs (scaled by `inv`) at `at`; then its stats. */
export const cooperativeEnd = (writeRow, shape = SIXTEEN) => /* wgsl */ `
  for (var i = 0u; i < ${shape.rowsPer}u; i++) {
    let row = row0 + ${shape.rowsPer}u * tr + i;
    if (row >= p.L) { continue; }
    var inv = 0.0;
    if (l[i] > 0.0) { inv = 1.0 / l[i]; }
    let at = (b * p.L + row) * p.oStride + h * DV;
${writeRow}
    if (tc == 0u) {
      let st = ((b * p.H + h) * p.L + row) * 2u;
      stats[st] = m[i];
      stats[st + 1u] = l[i];
    }
  }`;
