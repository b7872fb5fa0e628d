// WGSL shared by the attention kernels (flash_attention, attention_weights, decode_*): the uniform
// block, the two mask bindings and the masked score of one (query, key) pair, so all kernels
// apply exactly the same rule and the weights match the output's softmax.
//
// Masks arrive as f32 (the JS side converts): additive values are added to the score; boolean
// "not allowed" entries and additive -inf entries are stored as MASK_SENTINEL (a large finite
// negative), so no infinity ever enters shader arithmetic (WGSL lets implementations assume
// there are none). Anything at or below MASKED_AT counts as masked, which also keeps a row whose
// keys are all masked recognisable: it gets zero output and zero weights (the library's
// documented difference from PyTorch's NaN). Causal masking is top-left aligned (key j > query
// i is masked), as in the WASM core; with a KV cache (shift = its length before the call) it is
// bottom-right (key j > i + shift), and a window masks keys j <= i + shift − window too (with
// windowIds, those before the window of the query's positionId: beforeWindow(),
// docs/attention-math/decoding.md §9). Keys are read through keyRow(): a cache is a ring of kvRows slots
// per batch (position j in slot j mod kvRows); without one kvRows = S and the row is j.

import { paramsWgsl } from '../kernel_params.js';
import { kvReads } from './kv_reads.wgsl.js';
import { rowTableWgsl } from './row_table.wgsl.js';

/** What a masked entry is stored as, on the JS side. */
export const MASK_SENTINEL = -3.0e38;

/** The attention kernels' uniforms, in order (kernel_params.js makes the struct and the packing). */
export const ATTENTION_PARAMS = [
  ['B', 'u32'], ['L', 'u32'], ['S', 'u32'], ['H', 'u32'],
  ['causal', 'u32', '1: key j > query i + shift is masked'],
  ['hasKpm', 'u32', '1: kpm[b·S + j] applies'],
  ['amKind', 'u32', '0: none, 1: am[i·C + j′] ([L, C]), 2: am[((b·H + h)·L + i)·C + j′] (per head), 3: am[(b·L + i)·C + j′] (per batch)'],
  ['amKey0', 'u32', 'the mask covers keys j >= amKey0 (j′ = j − amKey0): 0, or a cached call\'s first new position'],
  ['amCols', 'u32', 'C, the mask\'s columns: S, or a cached call\'s new positions'],
  ['amPass', 'u32', 'with perRow: the mask covers batch b\'s keys from shiftOf(b) − amPass (the pass\'s first row in its call) on'],
  ['qOff', 'u32', 'head h of query row (b, i) starts at qOff + (b·L + i)·qStride + h·DK'],
  ['qStride', 'u32'],
  ['kOff', 'u32', 'K/V head g of key j of batch b at kOff + keyRow(b, j)·kStride + g·DK (a narrow cache: in words, kv_reads.wgsl.js)'],
  ['kStride', 'u32'],
  ['vOff', 'u32', 'K/V head g of value j of batch b at vOff + keyRow(b, j)·vStride + g·DV'],
  ['vStride', 'u32'],
  ['oStride', 'u32', 'output row (b, i), head h at (b·L + i)·oStride + h·DV'],
  ['average', 'u32', 'weights: 1 = mean over heads [B, L, S], 0 = [B, H, L, S]'],
  ['group', 'u32', 'query heads per K/V head (numHeads / numKvHeads; 1 without GQA)'],
  ['kvRows', 'u32', 'K/V rows per batch: S, or a cache\'s capacity (a ring)'],
  ['shift', 'u32', 'position of query row 0 minus that of key 0 (a cache\'s length before)'],
  ['window', 'u32', '0, or with causal: keys j <= i + shift − window are masked too'],
  ['perRow', 'u32', '1: batch b\'s cache row and shift are rowTable[2b], rowTable[2b + 1] (rowTableWgsl())'],
  ['windowIds', 'u32', '1: a window counts in positionId(b, i) (rowTableWgsl()): the query\'s and the call\'s keys\''],
  ['scale', 'f32', 'score = q·k · scale (+ masks)'],
  ['softcap', 'f32', '> 0: score ← softcap · tanh(score / softcap), before the masks; 0: none'],
];

/**
 * The first key rows [i0, …) may see (0 without a window): with a cache's window, keys
 * j <= i + shift − window are masked for row i, so a windowed step's kernels start their key
 * loops (and the decode kernels their chunks) here and visit O(W) keys, not the whole cache.
 * The JS twin of WGSL firstKey() (attentionParams), for the decode grid.
 */
export function firstKeyOf(i0, { causal, shift, window }) {
  return causal && window && i0 + shift >= window ? i0 + shift + 1 - window : 0;
}

/**
 * The helpers of the uniform block's fields (a kernel whose block extends ATTENTION_PARAMS puts
 * them after its own struct: kernels/nonfinite_rows.wgsl.js).
 */
export const attentionHelpers = /* wgsl */ `
const MASKED_AT = -1.0e38;  // a score at or below this is a masked key
const NEG = -3.0e38;        // "minus infinity" for masked scores and empty running maxima

// The K/V head query head h reads (grouped-query attention, docs/attention-math/heads.md §7): K and V
// are indexed, never copied per query head.
fn kvHead(h: u32) -> u32 { return h / p.group; }

// The first key rows i0… of a batch whose shift is \`shift\` may see: firstKeyOf() in
// attention_common.wgsl.js says why.
fn firstKeyAt(i0: u32, shift: u32) -> u32 {
  if (p.causal != 0u && p.window != 0u && i0 + shift >= p.window) { return i0 + shift + 1u - p.window; }
  return 0u;
}

// The first key rows i0… of batch b may see. With windowIds a bound for every row of the batch:
// its positions are at least shiftOf(b) (webgpu/cache_checks.js refuses lower ones), so no row's
// window starts before row 0's would; beforeWindow() is then the exact test.
fn firstKey(b: u32, i0: u32) -> u32 {
  if (p.windowIds != 0u) { return firstKeyAt(0u, shiftOf(b)); }
  return firstKeyAt(i0, shiftOf(b));
}

// Whether key j of batch b lies before the window of query row i (docs/attention-math/decoding.md §9): the
// query at its position, a key cached before the call (j < shiftOf(b)) at its own and a key of the
// call at its row's; with windowIds positionId() gives the query's and the call's keys', else they
// are the rows' own (i + shift, j).
fn beforeWindow(b: u32, i: u32, j: u32) -> bool {
  if (p.window == 0u) { return false; }
  let shift = shiftOf(b);
  if (p.windowIds == 0u) { return j + p.window <= i + shift; }
  var key = j;
  if (j >= shift) { key = positionId(b, j - shift); }
  return key + p.window <= positionId(b, i);
}

// The decode kernels' chunks of CHUNK keys, from firstKeyAt(0, p.shift) (p.shift is the least of
// the batches' shifts in a per-row call: every batch's window starts there or later, and a batch's
// chunks past its own keys are empty).
fn decodeChunks(chunk: u32) -> u32 { return (p.S - firstKeyAt(0u, p.shift) + chunk - 1u) / chunk; }

// Where the attention mask holds (b, h, i, j), or -1 where it has no entry: none, or key j before
// the keys it covers (a cached call's verification mask covers only its new positions).
fn amAt(b: u32, h: u32, i: u32, j: u32) -> i32 {
  var key0 = p.amKey0;
  if (p.perRow != 0u) { key0 = shiftOf(b) - p.amPass; }  // each row's new positions start at its own length
  if (p.amKind == 0u || j < key0) { return -1; }
  var at = i * p.amCols + (j - key0);
  if (p.amKind == 2u) { at += (b * p.H + h) * p.L * p.amCols; }
  if (p.amKind == 3u) { at += b * p.L * p.amCols; }
  return i32(at);
}

// The K/V row of key j of batch b (in its cache row).
fn keyRow(b: u32, j: u32) -> u32 { return cacheRow(b) * p.kvRows + j % p.kvRows; }

// p·v of one weight and one value, where a weight of exactly 0 (a masked key's, also a stale ring
// slot's or a tile's padding) adds exactly 0, not 0·v: masked means absent, so a NaN or Inf value
// there never reaches the row (0·NaN is NaN). A select, not a branch; one per shape of operands.
fn pv(w: f32, x: f32) -> f32 { return select(0.0, w * x, w > 0.0); }
fn pvRows(w: vec4f, x: f32) -> vec4f { return select(vec4f(0.0), w * x, w > vec4f(0.0)); }
fn pvCols(w: f32, x: vec4f) -> vec4f { return select(vec4f(0.0), w * x, w > 0.0); }
`;

/** The uniform block alone (the decode reduce kernel uses it without the mask bindings). */
export const attentionParams = `\n${paramsWgsl(ATTENTION_PARAMS)}${attentionHelpers}`;

export const attentionCommon = /* wgsl */ `${attentionParams}
@group(0) @binding(1) var<storage, read> kpm: array<f32>;
@group(0) @binding(2) var<storage, read> am: array<f32>;

// The score of query (b, h, i) against key j given their dot product, or NEG when masked.
fn maskedScore(dot: f32, b: u32, h: u32, i: u32, j: u32) -> f32 {
  if (p.causal != 0u && (j > i + shiftOf(b) || beforeWindow(b, i, j))) { return NEG; }
  var s = dot * p.scale;
  // tanh's argument clamped: f32 tanh is ±1 from |x| ≈ 9 on, and an implementation's
  // (e^2x − 1) / (e^2x + 1) would overflow to NaN for large logits.
  if (p.softcap > 0.0) { s = p.softcap * tanh(clamp(s / p.softcap, -15.0, 15.0)); }
  if (p.hasKpm != 0u) {
    let mv = kpm[b * p.S + j];
    if (mv <= MASKED_AT) { return NEG; }
    s += mv;
  }
  let at = amAt(b, h, i, j);
  if (at >= 0) {
    let mv = am[u32(at)];
    if (mv <= MASKED_AT) { return NEG; }
    s += mv;
  }
  return s;
}
`;

/**
 * The flash kernels' bindings after the masks (every flash variant has the same): K and V of
 * storage `kv` read through kAt / vAt (kv_reads.wgsl.js).
 */
export const flashBindings = ({ kv, dk, dv }) => /* wgsl */ `
@group(0) @binding(3) var<storage, read> q: array<f32>;
${kvReads({ kv, dk, dv })}@group(0) @binding(6) var<storage, read_write> out: array<f32>;
@group(0) @binding(7) var<storage, read_write> stats: array<f32>;  // [B, H, L, 2]: (m, l)
${rowTableWgsl(8)}`;
