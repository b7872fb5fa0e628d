// WGSL kernel: flash attention as a cooperative 64 × 64 tile read in vec4s (variant 'quad64',
// programs.js), for GPUs with at least 48 KiB of workgroup memory (at d = 64): the
// cooperative tile of flash_tiled.wgsl.js with every workgroup-memory read a vec4 and more work
// per read. Where flash_tiled reads one Q vec4 and BC/16 scalar keys per 4·BC/16 multiply-adds,
// here each step of QKᵀ reads one vec4 of 4 rows and one of 4 keys for 16, and each step of PV
// reads 4 vec4s of P and 4 of V for 64.
//
// Shape: 256 invocations (16×16), invocation (tr, tc) owns rows 4·tr … 4·tr + 3; per tile of 64
// keys it computes the scores of its rows against keys 4·tc … 4·tc + 3, and accumulates output
// columns 4·(tc + 16·g) … + 3 (g < ⌈DV/64⌉). Workgroup memory: Q (qs[d][row/4]), the K tile
// (kt[d][key/4]) that the V tile (vs[key][col/4]) then replaces, and the scores
// (ss[row][key/4]): 64·d_k + 64·max(d_k, d_v) + 4096 floats. The steps and barriers are
// flash_tiled's: scores, each invocation's running max over its rows' scores (no reduction), p
// in place, P·V; the online softmax, masking, outputs and row stats are the other variants'.
import { cooperativeEnd, cooperativeStart, stageKeyRows, vec4TileHead } from './flash_cooperative.wgsl.js';

const BR = 64;
const BC = 64;

/** Floats of workgroup memory for head widths dk, dv. */
export const flashQuadFloats = (dk, dv) => BR * dk + BC * Math.max(dk, 4 * Math.ceil(dv / 4)) + BR * BC;

// One tile's scores: each invocation's 4 rows against its 4 keys, masked, into ss.
const QUAD_SCORES = /* wgsl */ `    var dots: array<vec4f, 4>;  // dots[i][c]: row 4·tr + i, key 4·tc + c
    for (var i = 0u; i < 4u; i++) { dots[i] = vec4f(0.0); }
    for (var d = 0u; d < DK; d++) {
      let a = qs[d * 16u + tr];
      let kk = kv[d * 16u + tc];
      for (var i = 0u; i < 4u; i++) { dots[i] += a[i] * kk; }
    }
    for (var i = 0u; i < 4u; i++) {
      ss[(4u * tr + i) * 16u + tc] = maskedFour(dots[i], b, h, row0 + 4u * tr + i, 4u * tc, n, j0);
    }
    workgroupBarrier();`;

// The online softmax over the tile: the running max and sum rescaled, then p = exp(s − m) in place.
const QUAD_SOFTMAX = /* wgsl */ `    var tileMax = vec4f(NEG);
    for (var i = 0u; i < 4u; i++) {
      var rowMax = vec4f(NEG);
      for (var c4 = 0u; c4 < 16u; c4++) { rowMax = max(rowMax, ss[(4u * tr + i) * 16u + c4]); }
      tileMax[i] = max(max(rowMax.x, rowMax.y), max(rowMax.z, rowMax.w));
    }
    let mNew = max(m, tileMax);
    let alpha = exp(m - mNew);  // 0 where m was still NEG, 1 where nothing changed
    l *= alpha;
    for (var i = 0u; i < 4u; i++) {
      for (var c = 0u; c < CG; c++) { acc[i * CG + c] *= alpha[i]; }
    }
    m = mNew;
    workgroupBarrier();

    for (var i = 0u; i < 4u; i++) {
      let at = (4u * tr + i) * 16u + tc;
      let s = ss[at];
      ss[at] = select(vec4f(0.0), exp(s - m[i]), s > vec4f(MASKED_AT));
    }`;

export function flashQuadShader({ dk, dv, kv = 'float32' }) {
  const dv4 = Math.ceil(dv / 4);
  const cg = Math.ceil(dv4 / 16);
  return /* wgsl */ `${vec4TileHead({ dk, dv, kv, cg, br: BR, bc: BC })}
var<workgroup> kv: array<vec4f, ${(BC / 4) * Math.max(dk, 4 * dv4)}>; // kt[d·16 + key/4][key % 4], then vs[key·DV4 + col/4][col % 4]
var<workgroup> ss: array<vec4f, ${(BR * BC) / 4}>;                    // ss[row·16 + key/4][key % 4]: s, then p

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
${cooperativeStart()}
  var acc: array<vec4f, ${4 * cg}>;  // acc[i·CG + c]: row 4·tr + i, columns 4·(tc + 16·c) + 0…3
  for (var a = 0u; a < 4u * CG; a++) { acc[a] = vec4f(0.0); }

  for (var j0 = keyBegin; j0 < keyEnd; j0 += BC) {
    let n = min(BC, keyEnd - j0);
${stageKeyRows({ src: 'k', width: 'DK', dim: 'DK', store: 'kv[d * 16u + c / 4u][c % 4u] = x;' })}
    workgroupBarrier();

${QUAD_SCORES}

${QUAD_SOFTMAX}
${stageKeyRows({ src: 'v', width: '(DV4 * 4u)', dim: 'DV', store: 'kv[c * DV4 + d / 4u][d % 4u] = x;' })}
    workgroupBarrier();

    for (var c4 = 0u; c4 < 16u; c4++) {
      var pr: array<vec4f, 4>;  // pr[i][q]: p of row 4·tr + i, key 4·c4 + q
      for (var i = 0u; i < 4u; i++) {
        pr[i] = ss[(4u * tr + i) * 16u + c4];
        l[i] += (pr[i].x + pr[i].y) + (pr[i].z + pr[i].w);
      }
      for (var c = 0u; c < CG; c++) {
        let col4 = tc + 16u * c;
        if (col4 >= DV4) { continue; }
        for (var q = 0u; q < 4u; q++) {
          let vv = kv[(4u * c4 + q) * DV4 + col4];
          for (var i = 0u; i < 4u; i++) { acc[i * CG + c] += pvCols(pr[i][q], vv); }
        }
      }
    }
    workgroupBarrier();
  }

${cooperativeEnd(`    for (var c = 0u; c < CG; c++) {
      for (var x = 0u; x < 4u; x++) {
        let col = 4u * (tc + 16u * c) + x;
        if (col < DV) { out[at + col] = acc[i * CG + c][x] * inv; }
      }
    }`)}
}
`;
}
