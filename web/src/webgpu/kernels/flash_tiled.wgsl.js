// WGSL kernel: flash attention as a cooperative tile (variant 'tile64x32' / 'tile64x16',
// programs.js), for GPUs where flash_attention.wgsl.js's one row per invocation (q, the
// output accumulator and a tile of scores in registers, 64 invocations per workgroup) leaves the
// GPU mostly idle: register pressure caps occupancy and there are only ⌈L/64⌉·B·h workgroups.
//
// Shape: 256 invocations (16×16) share BR = 64 query rows of one (batch, head); invocation
// (tr, tc) owns rows 4·tr … 4·tr + 3. Per tile of BC keys (16 or 32):
//   1. the K tile goes to workgroup memory transposed (kt[d][key]);
//   2. scores S = Q Kᵀ as a register-blocked mini-GEMM: the invocation computes its 4 rows ×
//      BC/16 keys (keys tc + 16·j), reading Q's 4 rows as one vec4 (qs[d][row], staged once per
//      workgroup) and consecutive keys across tc; masked by maskedScore, stored to st[key][row];
//   3. each invocation reads its rows' BC scores, so all 16 invocations of a row agree on the
//      new running max without a reduction, and rescales its accumulators;
//   4. it turns its own scores into p = exp(s − m) in place while the V tile replaces K;
//   5. O += P V, again a mini-GEMM: 4 rows × ⌈DV/16⌉ columns (tc + 16·j) per invocation, reading
//      P's 4 rows as one vec4 and consecutive V columns; the row sums l add up p on the way.
// With lean (variant 'lean64x16') K, V, the scores and p have arrays of their own and steps 3–4
// and 5–1 need no barrier between them (layoutOf()).
// With dot (variant 'dot64x16') step 2 reads Q and K as vec4s over the features instead
// (qs[d/4][row], kt[d/4][key]) and sums dot products; K and V then have tiles of their own.
// Barriers separate the steps; the key loop's bounds are uniform (the causal end is per
// workgroup, as in flash_attention.wgsl.js). Rows past L compute masked scores and store nothing.
//
// Exactness: the same online softmax and masking rule (attention_common's maskedScore) as the
// other attention kernels; sums run in key order within a tile. Output, row max and row sum go
// where flash_attention.wgsl.js puts them (same bindings and grid), so the weights kernel and
// the rest of the pass do not know which variant ran.
import { attentionCommon, flashBindings } from './attention_common.wgsl.js';
import { cooperativeEnd, cooperativeStart, stageKeyRows } from './flash_cooperative.wgsl.js';
import { ENABLE_SUBGROUPS, rowGroupMaxFloats, rowGroupMaxWgsl } from './subgroup_reduce.wgsl.js';
import { halfOps, tileBytes } from './half_arithmetic.wgsl.js';

/** Query rows per workgroup (the same as the row kernel's FLASH_BR, so the grid is the same). */
const BR = 64;

/** Features a float16 score sum takes before it is added to the float32 one (scoreLoop()). */
const HALF_SLICE = 16;

/**
 * Bytes of workgroup memory of variant { bc, qShared, dot, lean, subgroups, halfType } at head
 * widths dk, dv (qShared: Q staged in workgroup memory, else read from global memory where it is
 * used). Q, K and V take 2 bytes a value as f16 tiles (halfType 'f16', not its f32 twins); the
 * scores and p stay f32.
 */
export function flashTiledBytes(dk, dv, { bc, qShared = true, dot = false, lean = false, subgroups = false, halfType = null }) {
  const tile = tileBytes(halfType);
  const dk4 = 4 * Math.ceil(dk / 4);
  const shuffles = subgroups ? 4 * rowGroupMaxFloats(BR / 4) : 0;
  if (dot) return tile * (BR * dk4 + bc * dk4 + bc * dv) + 4 * (lean ? 2 : 1) * BR * bc + shuffles;  // Q, K, V apart (K as vec4s over d)
  if (lean) return tile * (BR * dk + bc * (dk + dv)) + 4 * 2 * BR * bc + shuffles;  // Q, K, V, scores and p apart
  return tile * ((qShared ? BR * dk : 0) + bc * Math.max(dk, dv)) + 4 * BR * bc + shuffles;
}

// The 4 query rows of invocation row group tr at feature d: from workgroup memory, or (for
// wide heads, whose Q tile would not fit) from global memory, where the 16 invocations of the
// group read the same addresses and the cache serves them.
const qRows = (qShared, ops) => (qShared ? 'qs[d * 16u + tr]'
  : ops.vec('vec4f(qAt(b, h, row0 + 4u * tr, d), qAt(b, h, row0 + 4u * tr + 1u, d), qAt(b, h, row0 + 4u * tr + 2u, d), qAt(b, h, row0 + 4u * tr + 3u, d))'));
const qAt = /* wgsl */ `
fn qAt(b: u32, h: u32, row: u32, d: u32) -> f32 {
  if (row >= p.L) { return 0.0; }
  return q[p.qOff + (b * p.L + row) * p.qStride + h * DK + d];
}
`;

// The score block's loop over the features: dots[j][i] = q(row 4·tr + i) · k(key tc + 16·j).
// 'rows': per feature d, Q's 4 rows as one vec4 and one key per j (4 multiply-adds per 2 reads);
// dot: per 4 features, each row's 4 as a vec4 and the key's 4 as one (16 per 5 reads). With
// float16 arithmetic (ops.half) each slice of HALF_SLICE features is summed in f16 (`part`) and
// then added to the float32 dots, so a rounding error does not grow with the head width.
function scoreLoop({ dot, qShared }, kTile, ops) {
  const sums = ops.half ? 'part' : 'dots';
  const [index, end] = dot ? ['d4', 'DK4'] : ['d', 'DK'];
  const body = dot ? `
      var a: array<vec4<${ops.type}>, 4>;
      for (var i = 0u; i < 4u; i++) { a[i] = qs[d4 * BR + 4u * tr + i]; }
      for (var j = 0u; j < KC; j++) {
        let kk = kt[d4 * BC + tc + 16u * j];
        for (var i = 0u; i < 4u; i++) { ${ops.add(`${sums}[j][i]`, ops.dot('a[i]', 'kk'), 1)}; }
      }` : `
      let a = ${qRows(qShared, ops)};
      for (var j = 0u; j < KC; j++) { ${ops.madd(`${sums}[j]`, 'a', `${kTile}[d * BC + tc + 16u * j]`)}; }`;
  if (!ops.half) return `
    for (var ${index} = 0u; ${index} < ${end}; ${index}++) {${body}
    }`;
  const slice = dot ? HALF_SLICE / 4 : HALF_SLICE;
  return `
    var part = array<vec4<${ops.type}>, KC>();
    for (var s0 = 0u; s0 < ${end}; s0 += ${slice}u) {
      for (var ${index} = s0; ${index} < min(s0 + ${slice}u, ${end}); ${index}++) {${body.replace(/\n/g, '\n  ')}
      }
      for (var j = 0u; j < KC; j++) {
        dots[j] += vec4f(part[j]);
        part[j] = vec4<${ops.type}>();
      }
    }`;
}

// O += P V over the tile's keys (pArray, vTile): float32, or (ops.half) the tile's products summed
// in f16 and added to the float32 accumulators after the tile. The row sums l stay float32, and
// a key whose float32 p is 0 (masked) adds exactly 0 (attention_common's pvRows()).
function valueLoop(pArray, vTile, ops) {
  if (!ops.half) return `
    for (var c = 0u; c < BC; c++) {
      let pr = ${pArray}[c * (BR / 4u) + tr];
      l += pr;
      for (var j = 0u; j < DC; j++) {
        let col = tc + 16u * j;
        if (col < DV) { acc[j] += pvRows(pr, ${vTile}[c * DV + col]); }
      }
    }`;
  const vec = `vec4<${ops.type}>`;
  return `
    var tilePv = array<${vec}, DC>();
    for (var c = 0u; c < BC; c++) {
      let pr = ${pArray}[c * (BR / 4u) + tr];
      l += pr;
      let ph = ${ops.vec('pr')};
      for (var j = 0u; j < DC; j++) {
        let col = tc + 16u * j;
        if (col < DV) { ${ops.add('tilePv[j]', ops.round(`select(${vec}(0.0), ph * ${vTile}[c * DV + col], pr > vec4f(0.0))`, 4), 4)}; }
      }
    }
    for (var j = 0u; j < DC; j++) { acc[j] += vec4f(tilePv[j]); }`;
}

// Workgroup arrays, how Q and K are staged, and which arrays hold K, V and p, in each mode. With
// lean, K, V, the scores and p each have an array of their own, so two barriers of the five per
// tile go: after the running max (p no longer overwrites the scores being read) and at the end
// of the tile (the next K tile no longer overwrites the V being read).
function layoutOf({ dot, qShared, lean }, dk, dv, bc, ops) {
  const dk4 = Math.ceil(dk / 4);
  const [one, four] = [ops.type, `vec4<${ops.type}>`];  // the Q, K and V tiles' types
  const put = (to) => `${to} = ${ops.store('x')};`;
  // Q staged as vec4s over rows (qs[d·16 + row/4][row % 4]), by the modes that read it so.
  const rowsQ = { stageQ: qShared, qStore: put('qs[d * 16u + r / 4u][r % 4u]') };
  const common = { v: 'kv', p: 'st', k: 'kv', barrier: { afterMax: 'workgroupBarrier();', tileEnd: 'workgroupBarrier();' } };
  const scores = `var<workgroup> st: array<vec4f, ${(bc * BR) / 4}>;  // st[key·BR/4 + row/4][row % 4]: s${lean ? '' : ', then p'}`;
  const none = '// (no barrier: see layoutOf())';
  const pArray = `var<workgroup> pt: array<vec4f, ${(bc * BR) / 4}>;  // p, as st`;
  if (dot) {
    // K and V are apart already: lean only needs p apart from the scores.
    return {
      ...common,
      ...(lean ? { p: 'pt', barrier: { afterMax: none, tileEnd: none } } : {}),
      arrays: `var<workgroup> qs: array<${four}, ${BR * dk4}>;  // qs[(d/4)·BR + row][d % 4]
var<workgroup> kt: array<${four}, ${bc * dk4}>;  // K tile kt[(d/4)·BC + key][d % 4]
var<workgroup> kv: array<${one}, ${bc * dv}>;     // V tile vs[key·DV + d]
${scores}${lean ? `\n${pArray}` : ''}`,
      start: { qWidth: '(DK4 * 4u)', qStore: put('qs[(d / 4u) * BR + r][d % 4u]') },
      kStage: { src: 'k', width: '(DK4 * 4u)', dim: 'DK', store: put('kt[(d / 4u) * BC + c][d % 4u]') },
    };
  }
  const qArray = qShared ? `var<workgroup> qs: array<${four}, ${(BR / 4) * dk}>;      // qs[d·16 + row/4][row % 4]` : qAt;
  if (lean) {
    return {
      k: 'kk', v: 'vv', p: 'pt', barrier: { afterMax: none, tileEnd: none },
      arrays: `${qArray}
var<workgroup> kk: array<${one}, ${bc * dk}>;  // K tile kk[d·BC + key]
var<workgroup> vv: array<${one}, ${bc * dv}>;  // V tile vv[key·DV + d]
${scores}
${pArray}`,
      start: rowsQ,
      kStage: { src: 'k', width: 'DK', dim: 'DK', store: put('kk[d * BC + c]') },
    };
  }
  return {
    ...common,
    arrays: `${qArray}
var<workgroup> kv: array<${one}, ${bc * Math.max(dk, dv)}>;  // K tile kt[d·BC + key], then V vs[key·DV + d]
${scores}`,
    start: rowsQ,
    kStage: { src: 'k', width: 'DK', dim: 'DK', store: put('kv[d * BC + c]') },
  };
}

// The tile's max of each of the invocation's rows, tileMax: read from the scores of the row group
// in st (BC vec4s), or with subgroups from the invocation's own keys' (localMax) by
// rowGroupMax() where the device's subgroups allow (subgroup_reduce.wgsl.js), else read.
function tileMaxOf(subgroups) {
  const read = 'for (var c = 0u; c < BC; c++) { tileMax = max(tileMax, st[c * (BR / 4u) + tr]); }';
  return subgroups ? `var tileMax = vec4f(NEG);
    if (rowGroups.aligned) { tileMax = rowGroupMax(localMax, t, rowGroups); } else { ${read} }`
    : `var tileMax = vec4f(NEG);
    ${read}`;
}

/**
 * WGSL of a variant; subgroups: each tile's row max by subgroup shuffles from the invocation's
 * own scores (tileMaxOf(); the device must have 'subgroups'), the same value as the reads';
 * halfType: float16 arithmetic in the score block and P·V ('f16'; 'f32' or 'f16-rounded' for the
 * tests' twins, half_arithmetic.wgsl.js), null: float32.
 */
export function flashTiledShader({ dk, dv, bc, qShared = true, dot = false, lean = false, subgroups = false, halfType = null, kv = 'float32' }) {
  const dc = Math.ceil(dv / 16);
  const kc = bc / 16;
  const ops = halfOps(halfType);
  const layout = layoutOf({ dot, qShared, lean }, dk, dv, bc, ops);
  return /* wgsl */ `${ops.enable ? `${ops.enable}\n` : ''}${subgroups ? `${ENABLE_SUBGROUPS}\n` : ''}${attentionCommon}${ops.helpers}
const DK = ${dk}u;
const DK4 = ${Math.ceil(dk / 4)}u;
const DV = ${dv}u;
const BR = ${BR}u;
const BC = ${bc}u;
const KC = ${kc}u;   // keys per invocation in the score block
const DC = ${dc}u;   // output columns per invocation

${flashBindings({ kv, dk, dv })}
${layout.arrays}
${subgroups ? rowGroupMaxWgsl(BR / 4) : ''}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32${subgroups ? `,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sgSize: u32` : ''}) {
${cooperativeStart(layout.start)}${subgroups ? '\n  let rowGroups = rowGroupsOf(t, lane, sgSize);' : ''}
  var acc: array<vec4f, DC>;  // acc[j][i]: row 4·tr + i, column tc + 16·j
  for (var j = 0u; j < DC; j++) { acc[j] = vec4f(0.0); }

  for (var j0 = keyBegin; j0 < keyEnd; j0 += BC) {
    let n = min(BC, keyEnd - j0);
${stageKeyRows(layout.kStage)}
    workgroupBarrier();

    var dots: array<vec4f, KC>;
    for (var j = 0u; j < KC; j++) { dots[j] = vec4f(0.0); }
${scoreLoop({ dot, qShared }, layout.k, ops)}
${subgroups ? '    var localMax = vec4f(NEG);\n' : ''}    for (var j = 0u; j < KC; j++) {
      let c = tc + 16u * j;
      var s = vec4f(NEG);
      for (var i = 0u; i < 4u; i++) {
        let row = row0 + 4u * tr + i;
        if (c < n && row < p.L) { s[i] = maskedScore(dots[j][i], b, h, row, j0 + c); }
      }
      st[c * (BR / 4u) + tr] = s;${subgroups ? '\n      localMax = max(localMax, s);' : ''}
    }
    workgroupBarrier();

    ${tileMaxOf(subgroups)}
    let mNew = max(m, tileMax);
    let alpha = exp(m - mNew);  // 0 where m was still NEG, 1 where nothing changed
    l *= alpha;
    for (var j = 0u; j < DC; j++) { acc[j] *= alpha; }
    m = mNew;
    ${layout.barrier.afterMax}

    for (var j = 0u; j < KC; j++) {
      let at = (tc + 16u * j) * (BR / 4u) + tr;
      let s = st[at];
      ${layout.p}[at] = select(vec4f(0.0), exp(s - m), s > vec4f(MASKED_AT));
    }
${stageKeyRows({ src: 'v', width: 'DV', dim: 'DV', store: `${layout.v}[c * DV + d] = ${ops.store('x')};` })}
    workgroupBarrier();
${valueLoop(layout.p, layout.v, ops)}
    ${layout.barrier.tileEnd}
  }

${cooperativeEnd(`    for (var j = 0u; j < DC; j++) {
      let col = tc + 16u * j;
      if (col < DV) { out[at + col] = acc[j][i] * inv; }
    }`)}
}
`;
}
