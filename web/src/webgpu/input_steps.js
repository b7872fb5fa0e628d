// The steps of a forward between its input projections and its attention (forward_encode.js):
// the qk-norm of Q's and K's heads (kernels/qk_norm.wgsl.js), RoPE (rotary.wgsl.js), and with a
// cache the append of the new K and V rows (cache_append.wgsl.js), which for Q, K and V of one
// projection takes the qk-norm and RoPE itself (append_prepare.wgsl.js: prepareInAppend()).
import { packParams } from './kernel_params.js';
import { callRows, callTable, rowTableOf } from './call_rows.js';
import { consecutiveTable, rotaryTable } from './rotary_table.js';
import { stepTableSpan } from './step_bound.js';
import { ROTARY_PARAMS, ROTARY_WORKGROUP } from './kernels/rotary.wgsl.js';
import { QK_NORM_PARAMS, QK_NORM_WORKGROUP } from './kernels/qk_norm.wgsl.js';
import { APPEND_PARAMS, PREPARED_APPEND_PARAMS, cacheAppendGrid } from './kernels/cache_append.wgsl.js';
import { prepareOf, prepareSteps } from './kernels/append_prepare.wgsl.js';
import { cacheHeadWords } from './kernels/cache_narrow.wgsl.js';

const cdiv = (a, b) => Math.ceil(a / b);

/**
 * The steps over the projected { q, k, v } operands ({ buf, off, stride }, or null where the call
 * has none) of `call` ({ plan, config, cache, problems, kernels }); returns the attention's K and V
 * operands { k, v }: the cache's storage where the call has one (its rows appended), else k and v.
 */
export function encodeInputSteps(ctx, call, { q, k, v }) {
  const { plan, config, cache, kernels } = call;
  const prepare = prepareInAppend(call);
  if (config.qkNorm && !prepare) encodeQkNorm(ctx, call, q, k);  // before RoPE, as the core does
  if (config.rotary && !prepare) encodeRotary(ctx, call, q, k);
  if (!cache) return { k, v };
  // A step on an encoded cache appends nothing (S = 0): its attention reads the cache as stored.
  const [kStored, vStored] = k ? appendToCache(ctx, { plan, config, cache, kernels }, { k, v, q, prepare }) : storedOperands(cache, config);
  return { k: kStored, v: vStored };
}

// The qk-norm dispatches: each of Q's and K's heads RMS-normed in place.
function encodeQkNorm(ctx, { plan, config, kernels }, q, k) {
  const { B, L, S } = plan;
  const { numHeads: H, numKvHeads: G, headDim: dk } = config;
  const normalize = ({ buf, off, stride }, count, heads, weights) => ctx.dispatch(kernels.pipelines.qkNorm,
    ctx.uniform(packParams(QK_NORM_PARAMS, { count, heads, headDim: dk, off, stride, eps: config.qkNorm.eps })),
    [weights, buf], [cdiv(heads, QK_NORM_WORKGROUP), count, B]);
  if (q) normalize(q, L, H, ctx.params.qNorm);
  if (k) normalize(k, S, G, ctx.params.kNorm);
}

/**
 * What a call's cache append does to the new rows before it stores them (append_prepare.wgsl.js:
 * 'norm', 'rope', 'norm+rope'), or '' where the qk-norm and RoPE, if any, are dispatches of their
 * own (qk_norm.wgsl.js, rotary.wgsl.js): the module's steps, for a cached call that appends rows
 * and projects Q, K and V as one product ('qkv' rows, linear_problems.js), so that a row's query
 * and key heads are one buffer's, which the append's workgroup of that row holds.
 * call: { plan, config, cache, problems }.
 */
export const prepareInAppend = ({ plan, config, cache, problems }) => (cache && plan.S > 0 && problems.q?.role === 'qkv' ? prepareOf(config) : '');

/**
 * The pooled buffers (roles) a rotary table goes in: a GpuStep's table spanning its replays in one
 * of its own, which the module's other calls (a prompt's chunks, unbatched steps) do not write
 * over, so that step_tape.js can play it as written; every other table in TABLE.
 */
export const TABLE = 'rotary table';
export const SPAN_TABLE = 'rotary span table';

// The table last uploaded into each SPAN_TABLE buffer: another step's call of the module, or its
// second call in the same step at another bound, writes its own span there (spanTableIn()).
const spanTables = new WeakMap();
/** The values last uploaded into a SPAN_TABLE buffer (undefined: none). */
export const spanTableIn = (buffer) => spanTables.get(buffer);

// callRotaryTable()'s `rope` uploaded through ctx into its role's buffer, returned.
function uploadTable(ctx, rope) {
  if (rope.spanFirst === null) return ctx.upload(rope.table, TABLE);
  const buffer = ctx.upload(rope.table, SPAN_TABLE);
  spanTables.set(buffer, rope.table);
  return buffer;
}

// The uniforms of a rotation (rotary.wgsl.js's ROTATION_FIELDS) by callRotaryTable()'s `rope`.
const rotationUniforms = (rotary, { batchRows, row0 }) => ({ half: rotary.dim / 2, interleaved: rotary.interleaved ? 1 : 0, batchRows, row0 });

// The rotary dispatches: Q's and K's heads rotated in place at the call's positions.
function encodeRotary(ctx, { plan, config, kernels }, q, k) {
  const { B, L, S } = plan;
  const { numHeads: H, numKvHeads: G, headDim: dk, rotary } = config;
  const rope = callRotaryTable(plan, config);
  const table = uploadTable(ctx, rope);
  const rotation = rotationUniforms(rotary, rope);
  const rotate = ({ buf, off, stride }, count, heads) => ctx.dispatch(kernels.pipelines.rotary,
    ctx.uniform(packParams(ROTARY_PARAMS, { count, heads, headDim: dk, off, stride, ...rotation })),
    [table, buf], [cdiv(heads * rotation.half, ROTARY_WORKGROUP), count, B]);
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
 * The rotary table a call uploads: { table (rotary_table.js), batchRows (the rotary kernels': 0
 * for one table the batches share, else L: a row per batch and query), row0 (the table's row of
 * the call's first position, batchRows 0), spanFirst (the first position of a GpuStep's table, else
 * null) }. One table for queries (positions first…first+L−1) and keys (first…first+S−1), first the
 * cache's length before the call (else 0), shared by the batches; a GpuStep's call's over every
 * position its replays can have (step_bound.js's stepTableSpan()), so that a replay writes no
 * table, only row0. With positionIds a row per (batch, query), queries and keys alike (S = L), and
 * rows at lengths of their own each from its own length (as positionIds would).
 */
export function callRotaryTable(plan, { rotary }) {
  const { B, L, S, cache } = plan;
  const perRow = cache && !plan.positionIds ? callRows(plan) : null;
  const ids = plan.positionIds
    ?? (perRow && Int32Array.from({ length: B * L }, (_, at) => perRow.table[2 * Math.floor(at / L) + 1] + at % L));
  if (ids) return { table: rotaryTable(rotary, ids), batchRows: L, row0: 0, spanFirst: null };
  const first = cache ? cache.lengthBefore : 0;
  const span = stepTableSpan(plan);
  if (!span) return { table: consecutiveTable(rotary, first, Math.max(L, S)), batchRows: 0, row0: 0, spanFirst: null };
  // A given table has rows up to its last position (a call past it was refused: plans.js).
  const count = rotary.table ? Math.min(span.count, rotary.table.positions - span.first) : span.count;
  return { table: consecutiveTable(rotary, span.first, count), batchRows: 0, row0: first - span.first, spanFirst: span.first };
}

/**
 * The first position of a call's rotary table where it spans a GpuStep's replays (callRotaryTable()'s
 * spanFirst, without forming the table), or null.
 */
export const rotarySpanFirst = (plan) => (plan.positionIds || (plan.cache && callRows(plan)) ? null : stepTableSpan(plan)?.first ?? null);

// A cache's K and V as the attention kernels' operands (strides in floats, or in words narrow).
const storedOperands = (cache, { numKvHeads: G, headDim: dk, valueHeadDim: dv }) => [
  { buf: cache.keys, off: 0, stride: G * cacheHeadWords(cache.dtype, dk) },
  { buf: cache.values, off: 0, stride: G * cacheHeadWords(cache.dtype, dv) },
];

// The new K and V rows appended to the cache's ring in place (a float16 or int8 cache's rounded or
// quantised: cache_narrow.wgsl.js) and each new slot's flag of the NaN rule, one dispatch; every
// attention kernel then reads each cached position from the ring where it is stored, in the
// cache's dtype (kv_reads.wgsl.js): no float32 copy of a narrow cache is made. With `prepare`
// (prepareInAppend()) the append first takes those steps over the rows of Q and K in place.
// Returns the { k, v } operands (strides in floats, or in words narrow).
function appendToCache(ctx, { plan, config, cache, kernels }, { k, v, q, prepare }) {
  const { B, S } = plan;  // S: the rows appended (a plain step's L; an encoded cache's filling, its S)
  const perRow = callRows(plan);
  const values = {
    count: S, kOff: k.off, kStride: k.stride, vOff: v.off, vStride: v.stride, capacity: cache.capacity,
    first: plan.cache.lengthBefore, perRow: perRow ? 1 : 0, flagsOff: cache.flagsOffset,
  };
  const bindings = [cache.keys, cache.values, rowTableOf(ctx, callTable(plan))];
  if (!prepare) {
    ctx.dispatch(kernels.pipelines.append, ctx.uniform(packParams(APPEND_PARAMS, values)), [k.buf, v.buf, ...bindings], cacheAppendGrid({ count: S, B }));
    return storedOperands(cache, config);
  }
  const { rotary, qkNorm } = config;
  const steps = prepareSteps(prepare);
  const rope = steps.includes('rope') ? callRotaryTable(plan, config) : null;
  if (rope) bindings.push(uploadTable(ctx, rope));
  if (steps.includes('norm')) bindings.push(ctx.params.qNorm, ctx.params.kNorm);
  const stepValues = { qOff: q.off, eps: qkNorm?.eps ?? 0, ...(rope ? rotationUniforms(rotary, rope) : {}) };
  ctx.dispatch(kernels.pipelines.append, ctx.uniform(packParams(PREPARED_APPEND_PARAMS, { ...values, ...stepValues })), [k.buf, ...bindings],
    cacheAppendGrid({ count: S, B }));
  return storedOperands(cache, config);
}

