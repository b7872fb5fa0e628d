// WGSL kernel: the attention probabilities, only when forward() is called with needWeights.
//
// Why a second kernel: the flash kernel never holds a whole score row, so the probabilities are
// recomputed here from the same q·k dot products and the per-row max m and sum l it left in
// `stats`: p = exp(s − m) / l, exactly the normalisation of the output. One invocation per
// (batch, query row, key), looping over heads, so the head average is a plain sum in registers
// (no atomics); consecutive invocations take consecutive keys, so the writes are coalesced.
// Masked keys and rows with no allowed key (l = 0) give 0. Only DK is compile-time (the q and
// k reads), and the cache's storage dtype K is read in (kv_reads.wgsl.js); one pipeline per
// (DK, dtype), cached.
import { attentionCommon } from './attention_common.wgsl.js';
import { rowTableWgsl } from './row_table.wgsl.js';
import { kvReads } from './kv_reads.wgsl.js';

export const WEIGHTS_WORKGROUP = 64;

export function attentionWeightsShader({ dk, kv = 'float32' }) {
  return /* wgsl */ `${attentionCommon}
const DK = ${dk}u;

@group(0) @binding(3) var<storage, read> q: array<f32>;
${kvReads({ kv, dk, v: null })}@group(0) @binding(5) var<storage, read> stats: array<f32>;          // [B, H, L, 2]: (m, l)
@group(0) @binding(6) var<storage, read_write> weights: array<f32>;  // [B, L, S] or [B, H, L, S]
${rowTableWgsl(7)}

// Grid: (ceil(S / 64), L, B).
@compute @workgroup_size(${WEIGHTS_WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let j = gid.x;
  let i = gid.y;
  let b = gid.z;
  if (j >= p.S) { return; }
  let share = 1.0 / f32(p.H);
  var mean = 0.0;
  for (var h = 0u; h < p.H; h++) {
    let qAt = p.qOff + (b * p.L + i) * p.qStride + h * DK;
    let row = keyRow(b, j);
    let g = kvHead(h);
    var dot = 0.0;
    for (var d = 0u; d < DK; d++) { dot += q[qAt + d] * kAt(row, g, d); }
    let s = maskedScore(dot, b, h, i, j);
    let st = ((b * p.H + h) * p.L + i) * 2u;
    let l = stats[st + 1u];
    var w = 0.0;
    if (s > MASKED_AT && l > 0.0) { w = exp(s - stats[st]) * (1.0 / l); }
    if (p.average != 0u) {
      mean += w * share;
    } else {
      weights[((b * p.H + h) * p.L + i) * p.S + j] = w;
    }
  }
  if (p.average != 0u) { weights[(b * p.L + i) * p.S + j] = mean; }
}
`;
}
