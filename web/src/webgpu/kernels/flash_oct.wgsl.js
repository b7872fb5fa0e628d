// WGSL kernel: flash attention as a cooperative tile of 64 rows × 32 keys with 8 × 4 scores per
// invocation (variant 'oct64x32', programs.js): the register blocking of the tiled linear kernels
// brought to attention. Where flash_quad's 256 invocations each hold 4 rows × 4 keys (16
// multiply-adds per 2 vec4 reads of workgroup memory in QKᵀ) and every invocation of a row
// finds that row's max and sum over the whole tile again, here 64 invocations each hold 8 rows ×
// 4 keys (32 per 3 reads), 8 rows × 8 output columns in P·V (64 per 4), and a row's max is
// combined from its 8 invocations' partial maxima (one write and 8 reads each), its sum kept per
// invocation and combined once, at the end.
//
// Shape: 64 invocations (8×8), invocation (tr, tc) owns rows 8·tr … 8·tr + 7; per tile of 32
// keys it computes their scores against keys 4·tc … 4·tc + 3 in registers, and accumulates output
// columns 4·(tc + 8·g) … + 3 (g < ⌈DV/32⌉). Workgroup memory: Q (qs[d][row/4]), the K tile
// (kt[d][key/4]) that the V tile (vs[key][col/4]) then replaces, P (ps[key][row/4]: a key's 8
// rows of an invocation are 2 vec4 reads) and the rows' partial maxima (and at the end sums):
// 64·d_k + 32·max(d_k, d_v) + 2048 + 512 floats, 34 KiB at d = 64. Per tile: K staged, scores,
// partial maxima written, (barrier) each row's max, p = exp(s − m) into ps, V staged, (barrier)
// P·V, (barrier). The online softmax, masking, outputs and row stats are the other variants'.
import { cooperativeEnd, cooperativeStart, stageKeyRows, vec4TileHead } from './flash_cooperative.wgsl.js';

const BR = 64;
const BC = 32;
const RI = 8;            // rows per invocation
const TC = 8;            // invocations along a tile's keys (4 keys each) and along the output's columns
const SHAPE = { threads: (BR / RI) * TC, cols: TC, rowsPer: RI };

/** Floats of workgroup memory for head widths dk, dv. */
export const flashOctFloats = (dk, dv) => BR * dk + BC * Math.max(dk, 4 * Math.ceil(dv / 4)) + BR * BC + BR * TC;

// One tile's scores: the invocation's 8 rows against its 4 keys, in registers, masked; each
// row's max over them into pm[row·8 + tc].
const OCT_SCORES = /* wgsl */ `    var dots: array<vec4f, 8>;  // dots[i][c]: row 8·tr + i, key 4·tc + c
    for (var i = 0u; i < 8u; i++) { dots[i] = vec4f(0.0); }
    for (var d = 0u; d < DK; d++) {
      let a0 = qs[d * 16u + 2u * tr];
      let a1 = qs[d * 16u + 2u * tr + 1u];
      let kk = kv[d * 8u + tc];
      for (var i = 0u; i < 4u; i++) {
        dots[i] += a0[i] * kk;
        dots[4u + i] += a1[i] * kk;
      }
    }
    for (var i = 0u; i < 8u; i++) {
      let s = maskedFour(dots[i], b, h, row0 + 8u * tr + i, 4u * tc, n, j0);
      dots[i] = s;
      pm[(8u * tr + i) * 8u + tc] = max(max(s.x, s.y), max(s.z, s.w));
    }
    workgroupBarrier();`;

// The online softmax: each row's max from its 8 partial maxima, the running max, sum and
// accumulators rescaled, then p = exp(s − m) of the invocation's scores into ps (4 rows a vec4).
const OCT_SOFTMAX = /* wgsl */ `    for (var i = 0u; i < 8u; i++) {
      var tileMax = NEG;
      for (var c = 0u; c < 8u; c++) { tileMax = max(tileMax, pm[(8u * tr + i) * 8u + c]); }
      let mNew = max(m[i], tileMax);
      let alpha = exp(m[i] - mNew);  // 0 where m was still NEG, 1 where nothing changed
      l[i] *= alpha;
      for (var c = 0u; c < CG; c++) { acc[i * CG + c] *= alpha; }
      m[i] = mNew;
      let e = select(vec4f(0.0), exp(dots[i] - mNew), dots[i] > vec4f(MASKED_AT));
      l[i] += (e.x + e.y) + (e.z + e.w);
      dots[i] = e;
    }
    for (var c = 0u; c < 4u; c++) {
      let at = (4u * tc + c) * 16u + 2u * tr;
      ps[at] = vec4f(dots[0][c], dots[1][c], dots[2][c], dots[3][c]);
      ps[at + 1u] = vec4f(dots[4][c], dots[5][c], dots[6][c], dots[7][c]);
    }`;

// P·V over the tile's keys: the invocation's 8 rows × its column groups.
const OCT_PV = /* wgsl */ `    for (var key = 0u; key < BC; key++) {
      let p0 = ps[key * 16u + 2u * tr];
      let p1 = ps[key * 16u + 2u * tr + 1u];
      for (var c = 0u; c < CG; c++) {
        let col4 = tc + 8u * c;
        if (col4 >= DV4) { continue; }
        let vv = kv[key * DV4 + col4];
        for (var i = 0u; i < 4u; i++) {
          acc[i * CG + c] += pvCols(p0[i], vv);
          acc[(4u + i) * CG + c] += pvCols(p1[i], vv);
        }
      }
    }`;

export function flashOctShader({ dk, dv, kv = 'float32' }) {
  const dv4 = Math.ceil(dv / 4);
  const cg = Math.ceil(dv4 / TC);
  return /* wgsl */ `${vec4TileHead({ dk, dv, kv, cg, br: BR, bc: BC })}
var<workgroup> kv: array<vec4f, ${(BC / 4) * Math.max(dk, 4 * dv4)}>; // kt[d·8 + key/4][key % 4], then vs[key·DV4 + col/4][col % 4]
var<workgroup> ps: array<vec4f, ${(BR * BC) / 4}>;                    // ps[key·16 + row/4][row % 4]: p
var<workgroup> pm: array<f32, ${BR * TC}>;                            // pm[row·8 + tc]: partial maxima, at the end sums

@compute @workgroup_size(${SHAPE.threads})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
${cooperativeStart({ shape: SHAPE })}
  var acc: array<vec4f, ${RI * cg}>;  // acc[i·CG + c]: row 8·tr + i, columns 4·(tc + 8·c) + 0…3
  for (var a = 0u; a < ${RI}u * CG; a++) { acc[a] = vec4f(0.0); }

  for (var j0 = keyBegin; j0 < keyEnd; j0 += BC) {
    let n = min(BC, keyEnd - j0);
${stageKeyRows({ src: 'k', width: 'DK', dim: 'DK', store: 'kv[d * 8u + c / 4u][c % 4u] = x;', shape: SHAPE })}
    workgroupBarrier();

${OCT_SCORES}

${OCT_SOFTMAX}
${stageKeyRows({ src: 'v', width: '(DV4 * 4u)', dim: 'DV', store: 'kv[c * DV4 + d / 4u][d % 4u] = x;', shape: SHAPE })}
    workgroupBarrier();

${OCT_PV}
    workgroupBarrier();
  }

  // Each row's sum: its 8 invocations' partial sums, added in one order by all of them.
  for (var i = 0u; i < 8u; i++) { pm[(8u * tr + i) * 8u + tc] = l[i]; }
  workgroupBarrier();
  for (var i = 0u; i < 8u; i++) {
    var sum = 0.0;
    for (var c = 0u; c < 8u; c++) { sum += pm[(8u * tr + i) * 8u + c]; }
    l[i] = sum;
  }

${cooperativeEnd(`    for (var c = 0u; c < CG; c++) {
      for (var x = 0u; x < 4u; x++) {
        let col = 4u * (tc + 8u * c) + x;
        if (col < DV) { out[at + col] = acc[i * CG + c][x] * inv; }
      }
    }`, SHAPE)}
}
`;
}
