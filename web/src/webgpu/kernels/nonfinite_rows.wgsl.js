// WGSL kernels of the NaN rule for a call on a KV cache stored on the GPU (README, "Limits"). The
// attention kernels assume finite values (WGSL lets a GPU assume there is no NaN or infinity, and
// their max() and pv()'s select swallow one), and such a call cannot move to the CPU (the cache's
// storage is on the device), so two steps make each row that sees a non-finite value what the
// WASM core gives it:
//   flags          the append kernel (cache_append.wgsl.js) writes one flag per new cache slot:
//                  whether its stored K or V row (any head, as stored: a float16 overflow is an
//                  infinity) holds a NaN or an infinity. The flags live in u32 words after K's
//                  rows (gpu_kv_cache.js), so that truncate (a slot's flag is written with the
//                  slot), fork, reset and snapshots carry them as they carry K;
//   nonFiniteRows  last before the output projection, per query row (b, i): whether its query, a
//                  flagged slot it may see (the position rule), a mask entry or a sink is
//                  non-finite. Only such a row is computed again, serially, its outputs (and
//                  weights) overwritten; a finite row costs its O(H·dk + keys) reads, in parallel.
// The rule (the float64 reference's, tests/contract/reference.mjs, and the WASM core's,
// kernels/flash_attention.h): a row that sees a NaN score or a +Inf one is NaN (Inf − Inf),
// output and weights; a row with no key it may see and no sink is zero, one whose keys all score
// -Inf (by arithmetic: an infinite query or key) and no sink NaN (PyTorch's exp(−∞ − −∞)); else
// p_j = exp(s_j − m) / l over the keys it sees and o = Σ p_j·v_j with IEEE products and sums (a p
// that underflows to 0, or a key's of score -Inf, times an infinite value is NaN, as in PyTorch).
// Masked keys never reach the row.
// IEEE's cases are decided on the bits, in integer arithmetic; a float is only ever finite.
import { paramsWgsl } from '../kernel_params.js';
import { ATTENTION_PARAMS, attentionHelpers } from './attention_common.wgsl.js';
import { rowTableWgsl } from './row_table.wgsl.js';
import { kvBitsReads } from './kv_reads.wgsl.js';
import { zeroWorkgroupAtomic } from './workgroup_zero.wgsl.js';
import { rowWorkgroup } from './workgroup_size.js';

/** The attention kernels' uniforms and three more. */
export const NONFINITE_PARAMS = [
  ...ATTENTION_PARAMS,
  ['flagsOff', 'u32', 'the flag of cache slot r (keyRow()) at k[flagsOff + r]: 1 non-finite'],
  ['hasSinks', 'u32', '1: sinks[h] is head h\'s sink logit'],
  ['hasWeights', 'u32', '1: the weights are written (average says how)'],
];

// Float32 bits: classes and the IEEE product and sum of two values.
const IEEE = /* wgsl */ `
const NAN_BITS = 0x7fc00000u;
const POS_INF = 0x7f800000u;
const NEG_INF = 0xff800000u;
fn nonFinite(x: u32) -> bool { return (x & 0x7f800000u) == 0x7f800000u; }
fn isNan(x: u32) -> bool { return (x & 0x7fffffffu) > 0x7f800000u; }
fn isZero(x: u32) -> bool { return (x & 0x7fffffffu) == 0u; }
fn mulBits(a: u32, b: u32) -> u32 {
  if (isNan(a) || isNan(b)) { return NAN_BITS; }
  if (nonFinite(a) || nonFinite(b)) {
    if (isZero(a) || isZero(b)) { return NAN_BITS; }
    return ((a ^ b) & 0x80000000u) | POS_INF;
  }
  return bitcast<u32>(bitcast<f32>(a) * bitcast<f32>(b));
}
fn addBits(a: u32, b: u32) -> u32 {
  if (isNan(a) || isNan(b)) { return NAN_BITS; }
  if (nonFinite(a) && nonFinite(b)) { return select(NAN_BITS, a, a == b); }
  if (nonFinite(a)) { return a; }
  if (nonFinite(b)) { return b; }
  return bitcast<u32>(bitcast<f32>(a) + bitcast<f32>(b));
}
`;

/** The NaN rule kernels' uniform block, IEEE helpers and widths (decode_reduce_nan.wgsl.js too). */
export const nanRuleHeader = ({ dk, dv, wg }) => `${paramsWgsl(NONFINITE_PARAMS)}${attentionHelpers}${IEEE}
const DK = ${dk}u;
const DV = ${dv}u;
const WG = ${wg}u;
`;

// One row's scores, IEEE: maskedScore() of attention_common.wgsl.js on the bits.
export const NAN_RULE_SCORES = /* wgsl */ `
const MASKED = 0xffffffffu;  // a masked key (a NaN the IEEE functions never return: theirs is NAN_BITS)

// A mask entry's effect on score s: MASKED, or s plus the entry (a NaN or +Inf entry too).
fn masked(s: u32, mv: u32) -> u32 {
  if (!nonFinite(mv) && bitcast<f32>(mv) <= MASKED_AT) { return MASKED; }
  return addBits(s, mv);
}

// The score of query (b, h, i) against key j as float32 bits, or MASKED (a cached call is causal).
fn score(b: u32, h: u32, i: u32, j: u32) -> u32 {
  if (j > i + shiftOf(b) || beforeWindow(b, i, j)) { return MASKED; }
  let qAt = p.qOff + (b * p.L + i) * p.qStride + h * DK;
  let row = keyRow(b, j);
  var dot = 0u;
  for (var d = 0u; d < DK; d++) { dot = addBits(dot, mulBits(q[qAt + d], kBits(row, kvHead(h), d))); }
  var s = mulBits(dot, bitcast<u32>(p.scale));
  if (p.softcap > 0.0 && !nonFinite(s)) { s = bitcast<u32>(p.softcap * tanh(clamp(bitcast<f32>(s) / p.softcap, -15.0, 15.0))); }
  else if (p.softcap > 0.0 && !isNan(s)) { s = (s & 0x80000000u) | bitcast<u32>(p.softcap); }  // ±cap·tanh(∞)
  if (p.hasKpm != 0u) { s = masked(s, kpm[b * p.S + j]); }
  let at = amAt(b, h, i, j);
  if (at >= 0 && s != MASKED) { s = masked(s, am[u32(at)]); }
  return s;
}

// One past the last key row (b, i) may see: its position's, within the S keys of the call (a
// step on an encoded cache sits after all of them: gpu_encode.js).
fn lastKey(b: u32, i: u32) -> u32 { return min(i + shiftOf(b) + 1u, p.S); }

// Whether a mask entry of query (b, h, i) at key j is a NaN or +Inf (-Inf arrives as the sentinel).
fn headMaskNonFinite(b: u32, h: u32, i: u32, j: u32) -> bool {
  let at = amAt(b, h, i, j);
  return (p.hasKpm != 0u && nonFinite(kpm[b * p.S + j])) || (at >= 0 && nonFinite(am[u32(at)]));
}

// The same for any head of row (b, i): a per-head mask has an entry per head, the others one for
// every head (head 0's).
fn maskNonFinite(b: u32, i: u32, j: u32) -> bool {
  var found = false;
  for (var h = 0u; h < select(1u, p.H, p.amKind == 2u); h++) { found = found || headMaskNonFinite(b, h, i, j); }
  return found;
}
`;

// Head h of row (b, i) computed again; returns whether it is NaN (averaged weights: the caller).
// Without `sinks` and `weights` (the decode reduce's rule, decode_reduce_nan.wgsl.js: a call with
// neither) the kernel has no such bindings, and their lines are left out.
export const headRowWgsl = ({ sinks = true, weights = true } = {}) => {
  const ifSinks = (line) => (sinks ? line : '');
  const ifWeights = (line) => (weights ? line : '');
  return /* wgsl */ `
fn headRow(b: u32, h: u32, i: u32) -> bool {
  let o = (b * p.L + i) * p.oStride + h * DV;
  ${ifWeights('let wAt = ((b * p.H + h) * p.L + i) * p.S;\n  let perHead = p.hasWeights != 0u && p.average == 0u;')}
  let j1 = lastKey(b, i);  // keys [firstKey(b, i), j1) by the position rule
  var nan = false;
  var sink = NEG;  // a -Inf sink arrives as the sentinel: none
  ${ifSinks('nan = p.hasSinks != 0u && isNan(sinks[h]);\n  if (p.hasSinks != 0u && !nan) { sink = max(sink, bitcast<f32>(sinks[h])); }')}
  // Most such rows are NaN, for a flagged key's score: found first, a dot product per flagged
  // key, before the scan of every key's (a NaN query finds its NaN at the first key there).
  for (var j = firstKey(b, i); j < j1 && !nan; j++) {
    if (k[p.flagsOff + keyRow(b, j)] == 0u) { continue; }
    let s = score(b, h, i, j);
    nan = s != MASKED && (isNan(s) || s == POS_INF);
  }
  var m = sink;
  var live = sink > MASKED_AT;  // a finite score or a sink: the row has a max
  var seesKey = false;  // a key it may see, of score -Inf
  for (var j = firstKey(b, i); j < j1 && !nan; j++) {
    let s = score(b, h, i, j);
    if (s == MASKED) { continue; }
    if (s == NEG_INF) { seesKey = true; continue; }
    if (isNan(s) || s == POS_INF) { nan = true; } else { m = max(m, bitcast<f32>(s)); live = true; }
  }
  nan = nan || (seesKey && !live);
  let fill = select(0u, NAN_BITS, nan);
  for (var c = 0u; c < DV; c++) { heads[o + c] = fill; }
  ${ifWeights('for (var j = 0u; perHead && j < p.S; j++) { weights[wAt + j] = fill; }')}
  if (nan || !live) { return nan; }
  var l = select(0.0, exp(sink - m), sink > MASKED_AT);
  for (var j = firstKey(b, i); j < j1; j++) {
    let s = score(b, h, i, j);
    if (s != MASKED && s != NEG_INF) { l += exp(bitcast<f32>(s) - m); }
  }
  let inv = 1.0 / l;
  ${ifWeights('let avg = (b * p.L + i) * p.S;')}
  for (var j = firstKey(b, i); j < j1; j++) {
    let s = score(b, h, i, j);
    if (s == MASKED) { continue; }
    var e = 0.0;  // a score of -Inf: weight 0, and its 0·v is added
    if (s != NEG_INF) { e = exp(bitcast<f32>(s) - m); }
    for (var c = 0u; c < DV; c++) { heads[o + c] = addBits(heads[o + c], mulBits(bitcast<u32>(e), vBits(keyRow(b, j), kvHead(h), c))); }
    ${ifWeights(`if (perHead) { weights[wAt + j] = bitcast<u32>(e * inv); }
    if (p.hasWeights != 0u && p.average != 0u) { weights[avg + j] = bitcast<u32>(bitcast<f32>(weights[avg + j]) + e * inv * (1.0 / f32(p.H))); }`)}
  }
  for (var c = 0u; c < DV; c++) { heads[o + c] = mulBits(heads[o + c], bitcast<u32>(inv)); }
  return false;
}
`;
};

// Without the row table (a call on every row at one length, its window, if any, in the rows'
// own positions: windowIds 0): batch b is row b at p.shift. The table would be this kernel's
// ninth storage binding, which a device may lack (WebGPU's default limit is 8): the variant that
// reads it is compiled only for a call whose table holds something (call_kernels.js).
export const SAME_ROWS = /* wgsl */ `
fn cacheRow(b: u32) -> u32 { return b; }
fn shiftOf(b: u32) -> u32 { return p.shift; }
fn positionId(b: u32, i: u32) -> u32 { return p.shift + i; }
`;

/**
 * The rows of a cached call that see a non-finite value, computed again (see the top), over K/V
 * storage `dtype`; grid (L, B). Bindings: masks, q, K (with the flags), V, sinks, heads, weights,
 * and with `rows` the call's row table (rowTableWgsl(): rows at lengths of their own, or a window
 * in positionIds).
 */
export function nonFiniteRowsShader({ dk, dv, dtype, heads, rows = false }) {
  // One workgroup per row, sized to its query's heads·dk values (workgroup_size.js).
  const wg = rowWorkgroup(heads * dk);
  return /* wgsl */ `${nanRuleHeader({ dk, dv, wg })}
@group(0) @binding(1) var<storage, read> kpm: array<u32>;
@group(0) @binding(2) var<storage, read> am: array<u32>;
@group(0) @binding(3) var<storage, read> q: array<u32>;
${kvBitsReads({ kv: dtype, dk, dv })}@group(0) @binding(6) var<storage, read> sinks: array<u32>;
@group(0) @binding(7) var<storage, read_write> heads: array<u32>;    // row (b, i), head h at (b·L + i)·oStride + h·DV
@group(0) @binding(8) var<storage, read_write> weights: array<u32>;  // [B, L, S] or [B, H, L, S]
${rows ? rowTableWgsl(9) : SAME_ROWS}${NAN_RULE_SCORES}${headRowWgsl()}
var<workgroup> dirty: atomic<u32>;

@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  ${zeroWorkgroupAtomic('dirty')}
  let i = wg.x;
  let b = wg.y;
  let qRow = p.qOff + (b * p.L + i) * p.qStride;
  var seen = false;
  for (var e = t; e < p.H * DK; e += WG) { seen = seen || nonFinite(q[qRow + e]); }
  for (var j = firstKey(b, i) + t; j < lastKey(b, i); j += WG) {
    seen = seen || (!beforeWindow(b, i, j) && (k[p.flagsOff + keyRow(b, j)] != 0u || maskNonFinite(b, i, j)));
  }
  for (var h = t; p.hasSinks != 0u && h < p.H; h += WG) { seen = seen || isNan(sinks[h]); }
  if (seen) { atomicOr(&dirty, 1u); }
  workgroupBarrier();
  if (t != 0u || atomicLoad(&dirty) == 0u) { return; }
  let avg = (b * p.L + i) * p.S;
  let average = p.hasWeights != 0u && p.average != 0u;
  for (var j = 0u; average && j < p.S; j++) { weights[avg + j] = 0u; }
  var nan = false;
  for (var h = 0u; h < p.H; h++) { nan = headRow(b, h, i) || nan; }
  for (var j = 0u; average && nan && j < p.S; j++) { weights[avg + j] = NAN_BITS; }
}
`;
}
