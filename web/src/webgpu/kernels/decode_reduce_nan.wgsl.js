// WGSL kernel: the decode path's reduce (decode_reduce.wgsl.js) with a cached call's NaN rule
// (nonfinite_rows.wgsl.js) in the same dispatch, over the rule's uniforms (NONFINITE_PARAMS:
// hasSinks and hasWeights 0), for a call that asks for no weights and has no sinks: the rule's
// own dispatch ran after those two kernels (they read and change the row stats), so only without
// them can it move into the reduce. Why: a decode step of a model is a chain of small dispatches
// per layer; each costs the host its Dawn calls and the GPU a barrier, and this one was, for a
// finite row, a whole dispatch to find nothing.
//
// One workgroup per (batch, head, row), as the reduce's. Its invocations first look at what the
// row's head sees: its query's DK values, the flag of each cache slot it may see (the position
// rule) and its mask entries. A head that sees a NaN or an infinity is computed again by
// invocation 0, serially and IEEE on the bits (headRowWgsl(), the rule's own), in place of the
// combined chunks; any other head is the chunks combined, as the plain reduce gives it, bit for
// bit. (The rule's own kernel computes again every head of a row one of whose heads sees such a
// value; a finite head is the same softmax either way, within rounding.)
import { NAN_RULE_SCORES, SAME_ROWS, headRowWgsl, nanRuleHeader } from './nonfinite_rows.wgsl.js';
import { combineChunksWgsl } from './decode_reduce.wgsl.js';
import { DECODE_CHUNK, DECODE_WORKGROUP } from './decode_partial.wgsl.js';
import { kvBitsReads } from './kv_reads.wgsl.js';
import { rowTableWgsl } from './row_table.wgsl.js';
import { zeroWorkgroupAtomic } from './workgroup_zero.wgsl.js';

/**
 * The reduce with the NaN rule for K/V storage `dtype`, chunks of `chunk` keys; grid (L, B·H).
 * Bindings: partials, heads, masks, q, K (with the flags), V, and with `rows` the call's row
 * table (as nonFiniteRowsShader()'s).
 */
export function decodeReduceNanShader({ dk, dv, dtype, chunk = DECODE_CHUNK, rows = false }) {
  return /* wgsl */ `${nanRuleHeader({ dk, dv, wg: DECODE_WORKGROUP })}
const CHUNK = ${chunk}u;
@group(0) @binding(1) var<storage, read> part: array<f32>;         // [B·H, L, chunks, DV + 2]
@group(0) @binding(2) var<storage, read_write> heads: array<u32>;  // row (b, i), head h at (b·L + i)·oStride + h·DV
@group(0) @binding(3) var<storage, read> kpm: array<u32>;
@group(0) @binding(4) var<storage, read> am: array<u32>;
@group(0) @binding(5) var<storage, read> q: array<u32>;
${kvBitsReads({ kv: dtype, dk, dv, k: 6, v: 7 })}${rows ? rowTableWgsl(8) : SAME_ROWS}${NAN_RULE_SCORES}${headRowWgsl({ sinks: false, weights: false })}
${combineChunksWgsl((at, value) => `heads[${at}] = bitcast<u32>(${value});`)}
var<workgroup> dirty: atomic<u32>;

// Grid: (L, B·H, 1).
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  ${zeroWorkgroupAtomic('dirty')}
  let i = wg.x;
  let b = wg.y / p.H;
  let h = wg.y % p.H;
  let qHead = p.qOff + (b * p.L + i) * p.qStride + h * DK;
  var seen = false;
  for (var d = t; d < DK; d += WG) { seen = seen || nonFinite(q[qHead + d]); }
  for (var j = firstKey(b, i) + t; j < lastKey(b, i); j += WG) {
    seen = seen || (!beforeWindow(b, i, j) && (k[p.flagsOff + keyRow(b, j)] != 0u || headMaskNonFinite(b, h, i, j)));
  }
  if (seen) { atomicOr(&dirty, 1u); }
  workgroupBarrier();
  if (atomicLoad(&dirty) != 0u) {
    if (t == 0u) { _ = headRow(b, h, i); }
    return;
  }
  _ = combineChunks(wg.y, i, t);
}
`;
}
