// The dispatches of one MHA forward on the GPU, in order (forward_pass.js submits them):
//
//   input projections   linear      Q = query·W_qᵀ + b_q (K, V alike, numKvHeads heads; fused
//                                   into one dispatch when query, key and value are one array,
//                                   or key and value: linear_problems.js)
//   rotary (optional)   rotary      Q and K rotated in place at positions 0…L−1 / 0…S−1
//                                   (with a KV cache: n…n+L−1, n = its length before), or
//                                   at the call's positionIds [B, L]; one dispatch for both
//                                   where they share a row of one projection
//   cache (optional)    cacheAppend the new K and V rows written into the cache's ring (float32,
//                                   or narrow: float16 / int8), which the attention kernels then
//                                   read where stored (bottom-right causal, window), and a flag
//                                   per new slot for the NaN rule: K or V non-finite
//   attention           flash       softmax(Q Kᵀ/√d_k + masks) V per (batch, head), online
//                                   softmax, no L×S buffer; writes each row's max and sum
//     or, for L <= DECODE_MAX_L     split-K: decode_partial (one workgroup per chunk of keys of
//                       decode      each row: chunk max, sum, Σ p·v) then decode_reduce
//                                   (rescales and combines the chunks; same outputs and stats)
//   weights (optional)  weights     exp(s − max) / sum from those, averaged or per head
//   NaN rule (cache)    nonFiniteRows  each row that sees a non-finite value computed again,
//                                   IEEE on the bits (kernels/nonfinite_rows.wgsl.js); on the
//                                   decode path without weights or sinks, in decode_reduce
//                                   instead (decode_reduce_nan.wgsl.js: nanRuleInReduce())
//   output projection   linear      heads·W_oᵀ + b_o
//
// An encoded cache (gpu_encode.js): its filling (L = 0) stops after the K/V projections, the append
// with its flags (encodeCacheFill()); its steps (S = 0) project the query alone and append nothing.
// An attention-only config (scaledDotProductAttention(): api/attention_engines.js) projects
// nothing: its query, key and value are the attention's operands, its heads the output.
//
// Which variant of linear, flash and decode runs is call_kernels.js's choice; every variant of a
// family takes the same uniforms (packed from the family's list) and bindings. With int8
// activations each linear is q8_projection.js's two dispatches: q8Rows, then q8Linear.
import { MaskKind, weightsPerBatch } from '../base/call_plan.js';
import { BATCH } from '../base/batch_protocol.js';
import { Usage } from './device.js';
import { packParams } from './kernel_params.js';
import { consecutiveTable, rotaryTable } from './rotary_table.js';
import { ATTENTION_PARAMS, MASK_SENTINEL, firstKeyOf } from './kernels/attention_common.wgsl.js';
import { linearUniforms } from './kernels/linear_common.wgsl.js';
import { blockBuffers } from './weight_storage.js';
import { encodeQ8Linear } from './q8_projection.js';
import { WEIGHTS_WORKGROUP } from './kernels/attention_weights.wgsl.js';
import { ROTARY_PARAMS, ROTARY_WORKGROUP } from './kernels/rotary.wgsl.js';
import { APPEND_PARAMS, ROTARY_APPEND_PARAMS, cacheAppendGrid } from './kernels/cache_append.wgsl.js';
import { SINKS_PARAMS, SINKS_WORKGROUP } from './kernels/attention_sinks.wgsl.js';
import { QK_NORM_PARAMS, QK_NORM_WORKGROUP } from './kernels/qk_norm.wgsl.js';
import { NONFINITE_PARAMS } from './kernels/nonfinite_rows.wgsl.js';
import { cacheHeadWords } from './kernels/cache_narrow.wgsl.js';
import { isAttentionOnly } from '../base/attention_only.js';
import { nanRuleInReduce } from './selection/attention_path.js';

export const cdiv = (a, b) => Math.ceil(a / b);
const STORAGE_OUT = Usage.STORAGE | Usage.COPY_SRC;

/**
 * A cached call's rows at lengths of their own (a call on some `rows`, or rows of unequal
 * lengths), or null when every row is at one length: { table: Uint32Array [B, 2] (batch b's cache
 * row and its length before the call: kernels/row_table.wgsl.js), least (the least of those
 * lengths, the decode grid's first window) }.
 */
export function callRows(plan) {
  const { rows, lengthsBefore } = plan.cache ?? {};
  if (!lengthsBefore || (!rows && lengthsBefore.every((n) => n === lengthsBefore[0]))) return null;
  if (!rowsOfPlan.has(plan)) rowsOfPlan.set(plan, { table: rowPairs(plan), least: Math.min(...firstPositions(plan)) });
  return rowsOfPlan.get(plan);
}
// plan → callRows(plan): one table per call. Only such calls are kept: a WeakMap entry per call
// of every decode step (a replay's plans are new at each token) cost a profile's twentieth.
const rowsOfPlan = new WeakMap();

/** Keys a replay's bound covers: a multiple of this many (keysBound()). */
export const STEP_KEYS = 256;

/**
 * A GpuStep's cached call (dispatch/gpu_step.js, its batch `replayable`), or null: the keys its
 * attention kernels are told to bound the keys by, the call's T rounded up to a multiple of
 * STEP_KEYS, so that its grid and uniforms stay those of its replays for STEP_KEYS tokens but for
 * the words of its cache's length, which the replay writes (step_tape.js). The keys past a row's
 * own are causally masked (a cached call is causal: a key after i + shift never counts), so the
 * results are those over T bit for bit (a chunk's masked keys add exactly 0).
 */
export function keysBound(plan) {
  return plan.batch?.[BATCH.replayable] && plan.cache && plan.S > 0 ? cdiv(plan.T, STEP_KEYS) * STEP_KEYS : null;
}

/** Each batch row's cache row: the call's `rows`, else its own. */
const cacheRowOf = ({ cache: { rows } }, b) => (rows ? rows[b] : b);

/** Each batch row's first new position: its cache row's length before the call. */
export const firstPositions = (plan) =>
  Array.from({ length: plan.B }, (_, b) => plan.cache.lengthsBefore?.[cacheRowOf(plan, b)] ?? plan.cache.lengthBefore);

/** The row table's head, [B, 2]: each batch row's cache row and first position. */
const rowPairs = (plan) => Uint32Array.from(firstPositions(plan).flatMap((n, b) => [cacheRowOf(plan, b), n]));

/**
 * A cached call's positionIds where they move its cache's window (docs/attention-math/decoding.md §9), or
 * null: the cache has a window and some id is not its row's own position (its first new position
 * plus the row index), as the core's window_in_ids(). Otherwise the kernels' plain rule is the same
 * rule, and the call keeps the plain kernels' table, uniforms and pipelines.
 */
export function windowIds(plan) {
  const { positionIds: ids, L, cache } = plan;
  if (!ids || !cache?.storage?.window) return null;
  const firsts = firstPositions(plan);
  return ids.some((id, at) => id !== firsts[Math.floor(at / L)] + (at % L)) ? ids : null;
}

/**
 * The row table a cached call's kernels read (kernels/row_table.wgsl.js), or null when they read
 * none: callRows()'s, and with windowIds() every batch's row and first position followed by the
 * ids, [B, L] from word 2B on.
 */
export function callTable(plan) {
  const ids = windowIds(plan);
  const rows = callRows(plan);
  if (!ids && !rows) return null;
  if (!tableOfPlan.has(plan)) {
    let table = rows?.table ?? null;
    if (ids) {
      const head = table ?? rowPairs(plan);
      table = new Uint32Array(head.length + ids.length);
      table.set(head);
      table.set(ids, head.length);
    }
    tableOfPlan.set(plan, table);
  }
  return tableOfPlan.get(plan);
}
const tableOfPlan = new WeakMap();  // plan → callTable(plan): one upload per call

// The row table's binding (a placeholder word when the call's kernels read none).
const rowTableOf = (ctx, table) => (table ? ctx.upload(table, 'row table') : ctx.buffer(1, Usage.STORAGE, 'no row table'));

/** A mask as f32 for the shaders: additive values as they are, masked entries as the sentinel. */
function maskToF32(mask) {
  const out = new Float32Array(mask.data.length);
  if (mask.kind === MaskKind.boolean) {
    for (let i = 0; i < out.length; i++) out[i] = mask.data[i] ? MASK_SENTINEL : 0;
  } else {
    for (let i = 0; i < out.length; i++) {
      const x = mask.data[i];
      out[i] = x <= -1e38 ? MASK_SENTINEL : x;
    }
  }
  return out;
}

// The attention mask's uniforms: its kind (ATTENTION_PARAMS), the first key it covers (a cached
// call's verification mask: its first new position, the call's for each of its passes; per row,
// perRow, each row's own from its shift less amPass) and its columns.
function maskUniforms({ attnMask, cache: planned }, B, H, cache, perRow) {
  const { shape } = attnMask;
  if (!attnMask.data) return { amKind: 0, amKey0: 0, amCols: 0 };
  const perBatch = cache && shape.length === 3 && shape[0] === B;
  return {
    amKind: shape.length === 2 ? 1 : perBatch ? 3 : 2,
    amKey0: cache ? planned.maskKey0 ?? planned.lengthBefore : 0,
    amPass: perRow ? planned.lengthBefore - (planned.maskKey0 ?? planned.lengthBefore) : 0,
    amCols: shape.at(-1),
  };
}

// One projection, Y = X·Wᵀ + b, of `problem` (linear_problems.js) over bindings [x, w, bias, y,
// int8 / int4 weights' scales, int4's zero points]: the call's linear variant, or with int8
// activations the quantised rows' kernels (q8_projection.js); role: the output's.
function encodeProjection(ctx, kernels, problem, bindings, role) {
  if (kernels.pipelines.q8) return encodeQ8Linear(ctx, kernels.pipelines.q8, problem, bindings, role);
  return ctx.dispatch(kernels.pipelines.linear(problem), ctx.uniform(linearUniforms(problem)), bindings, kernels.variants.linear.grid(problem));
}

// The input projections, rotary and cache append; returns the attention operands { q, k, v }.
function encodeInputs(ctx, { plan, config, cache, problems, kernels }) {
  const { B, L, S } = plan;
  const { buffer, upload, uniform, dispatch, params } = ctx;
  const { numHeads: H, numKvHeads: G, headDim: dk, valueHeadDim: dv, rotary } = config;
  // Attention only (api/attention_engines.js): query, key and value are Q, K and V as given.
  if (isAttentionOnly(config)) {
    const operand = (data, role, d) => ({ buf: upload(data, role), off: 0, stride: d });
    return { q: operand(plan.query, 'query', dk), k: operand(plan.key, 'key', dk), v: operand(plan.value, 'value', dv) };
  }
  for (const { input, out, floats, problem } of problems.input) {
    encodeProjection(ctx, kernels, problem,
      [upload(plan[input], input), params.win, params.bin, buffer(floats, Usage.STORAGE, out), ...blockBuffers(params, 'win')], out);
  }
  const operand = (at) => at && { buf: ctx.buffers.get(at.role), off: at.off, stride: at.stride };
  let [q, k, v] = [operand(problems.q), operand(problems.k), operand(problems.v)];
  if (config.qkNorm) {  // before RoPE, as the core does
    const normalize = ({ buf, off, stride }, count, heads, weights) => dispatch(kernels.pipelines.qkNorm,
      uniform(packParams(QK_NORM_PARAMS, { count, heads, headDim: dk, off, stride, eps: config.qkNorm.eps })),
      [weights, buf], [cdiv(heads, QK_NORM_WORKGROUP), count, B]);
    if (q) normalize(q, L, H, params.qNorm);
    if (k) normalize(k, S, G, params.kNorm);
  }
  // With a cache and Q, K and V of one projection, the append rotates them (rotatesInAppend()).
  const inAppend = rotatesInAppend({ plan, config, cache, problems });
  if (rotary && !inAppend) encodeRotary(ctx, { plan, config, kernels }, q, k);
  // A step on an encoded cache appends nothing (S = 0): its attention reads the cache as stored.
  if (cache) [k, v] = k ? appendToCache(ctx, { plan, config, cache, kernels }, k, v, inAppend ? q : null) : storedOperands(cache, config);
  return { q, k, v };
}

/**
 * Whether a call's RoPE is applied by its cache append (cache_append.wgsl.js with qHeads) rather
 * than by a dispatch of its own (rotary.wgsl.js): a cached call that appends rows and projects Q,
 * K and V as one product ('qkv' rows, linear_problems.js), so that a row's query and key heads are
 * one buffer's, which the append's workgroup of that row rotates before it stores K.
 * call: { plan, config, cache, problems }.
 */
export const rotatesInAppend = ({ plan, config, cache, problems }) => Boolean(config.rotary && cache && plan.S > 0 && problems.q?.role === 'qkv');

// The rotary dispatches: Q's and K's heads rotated in place at the call's positions.
function encodeRotary(ctx, { plan, config, kernels }, q, k) {
  const { B, L, S } = plan;
  const { numHeads: H, numKvHeads: G, headDim: dk, rotary } = config;
  const half = rotary.dim / 2;
  const { table: data, batchRows } = callRotaryTable(plan, config);
  const table = ctx.upload(data, 'rotary table');
  const rotate = ({ buf, off, stride }, count, heads) => ctx.dispatch(kernels.pipelines.rotary,
    ctx.uniform(packParams(ROTARY_PARAMS, { count, heads, headDim: dk, off, stride, half, interleaved: rotary.interleaved ? 1 : 0, batchRows })),
    [table, buf], [cdiv(heads * half, ROTARY_WORKGROUP), count, B]);
  // Q and K side by side in each row of one projection (a fused Q/K/V: K's heads right after
  // Q's, linear_problems.js) are H + G heads of one operand: one dispatch rotates both.
  if (q && k && q.buf === k.buf && q.stride === k.stride && k.off === q.off + H * dk && L === S) {
    rotate(q, L, H + G);
  } else {
    rotate(q, L, H);
    rotate(k, S, G);
  }
}

/**
 * The rotary table a call uploads: { table (rotary_table.js), batchRows (the rotary kernel's: 0
 * for one table the batches share, else L: a row per batch and query) }. One table for queries
 * (positions first…first+L−1) and keys (first…first+S−1), first the cache's length before the call
 * (else 0), shared by the batches; with positionIds a row per (batch, query), queries and keys
 * alike (S = L), and rows at lengths of their own each from its own length (as positionIds would).
 */
export function callRotaryTable(plan, { rotary }) {
  const { B, L, S, cache } = plan;
  const perRow = cache && !plan.positionIds ? callRows(plan) : null;
  const ids = plan.positionIds
    ?? (perRow && Int32Array.from({ length: B * L }, (_, at) => perRow.table[2 * Math.floor(at / L) + 1] + at % L));
  const first = cache ? cache.lengthBefore : 0;
  return { table: ids ? rotaryTable(rotary, ids) : consecutiveTable(rotary, first, Math.max(L, S)), batchRows: ids ? L : 0 };
}

// A cache's K and V as the attention kernels' operands (strides in floats, or in words narrow).
const storedOperands = (cache, { numKvHeads: G, headDim: dk, valueHeadDim: dv }) => [
  { buf: cache.keys, off: 0, stride: G * cacheHeadWords(cache.dtype, dk) },
  { buf: cache.values, off: 0, stride: G * cacheHeadWords(cache.dtype, dv) },
];

// The new K and V rows appended to the cache's ring in place (a float16 or int8 cache's rounded or
// quantised: cache_narrow.wgsl.js) and each new slot's flag of the NaN rule, one dispatch; every
// attention kernel then reads each cached position from the ring where it is stored, in the
// cache's dtype (kv_reads.wgsl.js): no float32 copy of a narrow cache is made. With `q` (the
// query operand, rotatesInAppend()) the append rotates Q and K first. Returns the { k, v }
// operands (strides in floats, or in words narrow).
function appendToCache(ctx, { plan, config, cache, kernels }, k, v, q) {
  const { B, S } = plan;  // S: the rows appended (a plain step's L; an encoded cache's filling, its S)
  const perRow = callRows(plan);
  const values = {
    count: S, kOff: k.off, kStride: k.stride, vOff: v.off, vStride: v.stride, capacity: cache.capacity,
    first: plan.cache.lengthBefore, perRow: perRow ? 1 : 0, flagsOff: cache.flagsOffset,
  };
  const rowTable = rowTableOf(ctx, callTable(plan));
  const grid = cacheAppendGrid({ count: S, B });
  if (!q) {
    ctx.dispatch(kernels.pipelines.append, ctx.uniform(packParams(APPEND_PARAMS, values)), [k.buf, v.buf, cache.keys, cache.values, rowTable], grid);
    return storedOperands(cache, config);
  }
  const { rotary } = config;
  const { table, batchRows } = callRotaryTable(plan, config);
  const rotation = { qOff: q.off, half: rotary.dim / 2, interleaved: rotary.interleaved ? 1 : 0, batchRows };
  ctx.dispatch(kernels.pipelines.append, ctx.uniform(packParams(ROTARY_APPEND_PARAMS, { ...values, ...rotation })),
    [k.buf, cache.keys, cache.values, rowTable, ctx.upload(table, 'rotary table')], grid);
  return storedOperands(cache, config);
}

/**
 * The decode path's chunks of keys (its grid's first dimension) for a call whose grid starts at
 * `shift` (the least of its rows' lengths before it): over the keys from the window's start
 * (firstKeyOf(), as the kernels count them: O(W)) to T, or a GpuStep's keysBound().
 */
export function decodeChunks({ plan, cache, kernels }, shift = cache ? plan.cache.lengthBefore : 0) {
  const shape = { causal: Boolean(plan.isCausal || cache), shift, window: cache ? cache.window : 0 };
  return cdiv((keysBound(plan) ?? plan.T) - firstKeyOf(0, shape), kernels.variants.decode.chunk);
}

// Attention (flash or decode) and the weights; returns { heads, weights, weightFloats }.
function encodeAttention(ctx, { plan, config, path, cache, kernels }, { q, k, v }) {
  const { B, L, S, T } = plan;  // T: keys attended (S, or the cache's length after the append)
  const { buffer, upload, uniform, dispatch } = ctx;
  const { numHeads: H, numKvHeads: G, headDim: dk, valueHeadDim: dv } = config;
  // Masks as f32 (a 1-float placeholder when absent: the bindings always exist).
  const kpm = plan.keyPaddingMask.data ? upload(maskToF32(plan.keyPaddingMask), 'keyPaddingMask') : null;
  const am = plan.attnMask.data ? upload(maskToF32(plan.attnMask), 'attnMask') : null;
  const placeholder = kpm && am && !cache ? null : buffer(1, Usage.STORAGE, 'no mask');
  const perRow = cache ? callRows(plan) : null;
  const ids = cache ? windowIds(plan) : null;
  const table = cache ? callTable(plan) : null;
  const rowTable = rowTableOf(ctx, table);
  // Per row: the least shift is the uniform one (the decode grid's first window, decodeChunks()).
  const shift = perRow ? perRow.least : cache ? plan.cache.lengthBefore : 0;
  const bound = keysBound(plan) ?? T;  // a GpuStep's call: over its bound, not T
  const values = {
    B, L, S: bound, H, causal: plan.isCausal || cache ? 1 : 0, hasKpm: kpm ? 1 : 0,
    ...maskUniforms(plan, B, H, cache, perRow),
    qOff: q.off, qStride: q.stride, kOff: k.off, kStride: k.stride, vOff: v.off, vStride: v.stride,
    oStride: H * dv, group: H / G, kvRows: cache ? cache.capacity : S,
    shift, window: cache ? cache.window : 0, scale: plan.scale ?? config.scale, softcap: config.softcap ?? 0, perRow: perRow ? 1 : 0,
    windowIds: ids ? 1 : 0,
  };
  const attention = (average) => uniform(packParams(ATTENTION_PARAMS, { ...values, average: average ? 1 : 0 }));
  const maskBindings = [kpm ?? placeholder, am ?? placeholder];
  // A cached call's NaN rule (nonfinite_rows.wgsl.js) over the flags the append wrote.
  const nanRule = cache && uniform(packParams(NONFINITE_PARAMS, {
    ...values, average: plan.averageAttnWeights ? 1 : 0, flagsOff: cache.flagsOffset,
    hasSinks: config.sinks ? 1 : 0, hasWeights: plan.needWeights ? 1 : 0,
  }));

  // Attention only (no output projection): the heads are the call's output.
  const heads = isAttentionOnly(config) ? buffer(B * L * H * dv, STORAGE_OUT, 'output') : buffer(B * L * H * dv, Usage.STORAGE, 'heads');
  // The decode reduce that applies the NaN rule writes no row stats: no kernel after it reads them.
  const ruleInReduce = nanRuleInReduce({ plan, config, path, cache });
  const stats = ruleInReduce ? null : buffer(B * H * L * 2, Usage.STORAGE, 'row stats');
  if (path === 'decode') {
    // Split-K: per (batch, head, row) one workgroup per chunk of keys, then one combining.
    const chunks = decodeChunks({ plan, cache, kernels }, shift);
    const partials = buffer(B * H * L * chunks * (dv + 2), Usage.STORAGE, 'decode partials');
    const slot = attention(false);
    dispatch(kernels.pipelines.attention, slot, [...maskBindings, q.buf, k.buf, v.buf, partials, rowTable], [chunks, L, B * H]);
    const reduced = ruleInReduce ? [nanRule, [partials, heads, ...maskBindings, q.buf, k.buf, v.buf, ...(table ? [rowTable] : [])]]
      : [slot, [partials, heads, stats]];
    dispatch(kernels.pipelines.decodeReduce, ...reduced, [L, B * H, 1]);
  } else {
    dispatch(kernels.pipelines.attention, attention(false), [...maskBindings, q.buf, k.buf, v.buf, heads, stats, rowTable],
      kernels.variants.attention.grid({ L, BH: B * H }));
  }

  if (config.sinks) {
    const rows = B * H * L;
    dispatch(kernels.pipelines.sinks, uniform(packParams(SINKS_PARAMS, { rows, L, H, DV: dv })), [ctx.params.sinks, stats, heads],
      [cdiv(rows, SINKS_WORKGROUP), 1, 1]);
  }
  const weightFloats = B * weightsPerBatch(plan, H);
  const weights = weightFloats ? buffer(weightFloats, STORAGE_OUT, 'weights') : null;
  if (weights) {
    dispatch(kernels.pipelines.weights, attention(plan.averageAttnWeights), [...maskBindings, q.buf, k.buf, stats, weights, rowTable],
      [cdiv(T, WEIGHTS_WORKGROUP), L, B]);
  }
  // Then the rows that see a non-finite value, computed again over what the kernels above wrote.
  if (cache && !ruleInReduce) {
    dispatch(kernels.pipelines.nonFiniteRows, nanRule, [...maskBindings, q.buf, k.buf, v.buf, ctx.params.sinks ?? placeholder,
      heads, weights ?? buffer(1, Usage.STORAGE, 'no weights'), ...(table ? [rowTable] : [])], [L, B, 1]);
  }
  return { heads, weights, weightFloats };
}

/**
 * Writes the call's inputs and records its dispatches through ctx ({ params, buffers (role →
 * buffer), buffer(floats, usage, role), upload(data, role), uniform(block) → slot,
 * dispatch(pipeline, slot, bindings, groups) }). call: { plan, config, path, cache, problems
 * (linear_problems.js), kernels (call_kernels.js) }. Returns { out, outFloats, weights, weightFloats }.
 */
export function encodeForward(ctx, call) {
  if (call.plan.L === 0) return encodeCacheFill(ctx, call);
  const operands = encodeInputs(ctx, call);
  const { heads, weights, weightFloats } = encodeAttention(ctx, call, operands);
  if (!call.problems.output) return { out: heads, outFloats: call.plan.B * call.plan.L * call.config.valueHeadDim, weights, weightFloats };
  const { floats, problem } = call.problems.output;
  const out = ctx.buffer(floats, STORAGE_OUT, 'output');
  encodeProjection(ctx, call.kernels, problem, [heads, ctx.params.wout, ctx.params.bout, out, ...blockBuffers(ctx.params, 'wout')], 'output');
  return { out, outFloats: floats, weights, weightFloats };
}

// An encoded cache's filling (gpu_encode.js: no query, L = 0): key and value projected and
// appended with each new slot's flag of the NaN rule (kernels/nonfinite_rows.wgsl.js), which the
// steps on the cache read; no attention, no output.
function encodeCacheFill(ctx, call) {
  encodeInputs(ctx, call);
  return { out: null, outFloats: 0, weights: null, weightFloats: 0 };
}
