// WGSL kernel: first half of the decode path (short queries, L <= DECODE_MAX_L): the partial
// softmax statistics of one chunk of keys for one query row (split-K over the keys).
//
// Why: the flash kernel gives each query row one invocation and walks every key serially, so
// with L = 1 (token-by-token decoding) one invocation per (batch, head) does all S keys while
// 63 of its workgroup's 64 sit idle, and there are only B·h workgroups. Here the keys of each
// (batch, head, row) are cut into chunks of DECODE_CHUNK; one workgroup per chunk, its 64
// invocations over the chunk's keys: each computes the masked scores of its keys (q staged in
// workgroup memory), the chunk max m_c is a tree reduction in workgroup memory (the 'subgroups'
// variants: by subgroup operations, subgroup_reduce.wgsl.js), then p = exp(s − m_c) (0 for masked
// keys) and l_c = Σ p another; finally the invocations split the
// DV columns and each sums p·v over the chunk's keys for its columns. The result
// (m_c, l_c, acc_c[DV]) goes to a scratch buffer that decode_reduce combines. A chunk whose keys
// are all masked writes m_c = NEG, l_c = 0, acc_c = 0. Masks, causal and the window are
// attention_common's maskedScore, the rule of the other attention kernels.
//
// DK sizes the q array in workgroup memory and DV the scratch stride, the chunk (a variant's
// parameter, selection/kernel_config.js's DECODE_VARIANTS) the score array: one pipeline per (variant, DK, DV)
// and K/V storage dtype (`kv`: K and V read through kv_reads.wgsl.js's kAt / vAt).
import { attentionCommon } from './attention_common.wgsl.js';
import { rowTableWgsl } from './row_table.wgsl.js';
import { kvReads } from './kv_reads.wgsl.js';
import { ENABLE_SUBGROUPS, subgroupReductions } from './subgroup_reduce.wgsl.js';

/** Keys per chunk (one workgroup each) of today's decode variant, 'split256' (selection/kernel_config.js). */
export const DECODE_CHUNK = 256;
/** Invocations per workgroup, in both decode kernels. */
export const DECODE_WORKGROUP = 64;

// The chunk's masked scores into ps, and their max m_c: a tree reduction over red, or with
// subgroups (subgroup_reduce.wgsl.js) a reduction in registers and one barrier.
const chunkMax = (subgroups) => /* wgsl */ `  var localMax = NEG;
  for (var cc = t; cc < n; cc += WG) {
    let j = j0 + cc;
    let row = keyRow(b, j);
    var dot = 0.0;
    for (var d = 0u; d < DK; d++) { dot += qs[d] * kAt(row, g, d); }
    let s = maskedScore(dot, b, h, i, j);
    ps[cc] = s;
    localMax = max(localMax, s);
  }
${subgroups ? '  let m = chunkMaxOf(localMax, sg);' : `  red[t] = localMax;
  workgroupBarrier();
  for (var half = WG / 2u; half > 0u; half /= 2u) {
    if (t < half) { red[t] = max(red[t], red[t + half]); }
    workgroupBarrier();
  }
  let m = red[0];
  workgroupBarrier();`}`;

// p = exp(s − m_c) in place (0 for masked keys), and their sum l_c. Either reduction ends in a
// barrier, which orders the writes of ps before the Σ p·v that reads every key's.
const chunkSum = (subgroups) => /* wgsl */ `  var localSum = 0.0;
  for (var cc = t; cc < n; cc += WG) {
    let s = ps[cc];
    var e = 0.0;
    if (s > MASKED_AT) { e = exp(s - m); }
    ps[cc] = e;
    localSum += e;
  }
${subgroups ? '  let l = chunkSumOf(localSum, sg);' : `  red[t] = localSum;
  workgroupBarrier();
  for (var half = WG / 2u; half > 0u; half /= 2u) {
    if (t < half) { red[t] += red[t + half]; }
    workgroupBarrier();
  }
  let l = red[0];`}`;

/**
 * The partial kernel's WGSL. subgroups: the two reductions by subgroup operations (the device
 * must have the 'subgroups' feature; any subgroup size), else by trees in workgroup memory.
 */
export function decodePartialShader({ dk, dv, chunk = DECODE_CHUNK, kv = 'float32', subgroups = false }) {
  return /* wgsl */ `${subgroups ? `${ENABLE_SUBGROUPS}\n` : ''}${attentionCommon}
const DK = ${dk}u;
const DV = ${dv}u;
const CHUNK = ${chunk}u;
const WG = ${DECODE_WORKGROUP}u;

@group(0) @binding(3) var<storage, read> q: array<f32>;
${kvReads({ kv, dk, dv })}
// [B·H, L, chunks, DV + 2]: (m_c, l_c, acc_c[DV]) per chunk
@group(0) @binding(6) var<storage, read_write> part: array<f32>;
${rowTableWgsl(7)}

var<workgroup> qs: array<f32, DK>;
var<workgroup> ps: array<f32, CHUNK>;  // scores, then exp(s − m_c)
${subgroups ? subgroupReductions(DECODE_WORKGROUP, { chunkMaxOf: 'max', chunkSumOf: 'add' }) : 'var<workgroup> red: array<f32, WG>;'}

// Grid: (chunks, L, B·H).
@compute @workgroup_size(${DECODE_WORKGROUP})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let c = wg.x;
  let i = wg.y;
  let bh = wg.z;
  let b = bh / p.H;
  let h = bh % p.H;
  let g = kvHead(h);
  let chunks = decodeChunks(CHUNK);  // over the window only, when there is one: O(W) keys
  // This batch's own chunks from its own first key (as alone in a cache of its own); those past
  // its keys are empty (in a per-row call, where the grid's chunks are the widest batch's).
  let j0 = firstKey(b, 0u) + c * CHUNK;
  let n = select(0u, min(CHUNK, p.S - j0), j0 < p.S);

  let qAt = p.qOff + (b * p.L + i) * p.qStride + h * DK;
  for (var d = t; d < DK; d += WG) { qs[d] = q[qAt + d]; }
  ${subgroups ? 'let sg = subgroupLayout(t);  // its barrier also orders the writes of qs' : 'workgroupBarrier();'}

${chunkMax(subgroups)}

${chunkSum(subgroups)}

  let base = ((bh * p.L + i) * chunks + c) * (DV + 2u);
  for (var d = t; d < DV; d += WG) {
    var a = 0.0;
    if (l > 0.0) {
      for (var cc = 0u; cc < n; cc++) { a += pv(ps[cc], vAt(keyRow(b, j0 + cc), g, d)); }
    }
    part[base + 2u + d] = a;
  }
  if (t == 0u) {
    part[base] = m;
    part[base + 1u] = l;
  }
}
`;
}
