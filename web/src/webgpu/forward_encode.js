// The dispatches of one MHA forward on the GPU, in order (forward_pass.js submits them):
//
//   input projections   linear      Q = query·W_qᵀ + b_q (K, V alike, numKvHeads heads; fused
//                                   into one dispatch when query, key and value are one array,
//                                   or key and value: linear_problems.js)
//   qk-norm (optional)  qkNorm      each head of Q and K RMS-normed in place (input_steps.js)
//   rotary (optional)   rotary      Q and K rotated in place at positions 0…L−1 / 0…S−1
//                                   (with a KV cache: n…n+L−1, n = its length before), or
//                                   at the call's positionIds [B, L]; one dispatch for both
//                                   where they share a row of one projection
//   cache (optional)    cacheAppend the new K and V rows written into the cache's ring (float32,
//                                   or narrow: float16 / int8), which the attention kernels then
//                                   read where stored (bottom-right causal, window), and a flag
//                                   per new slot for the NaN rule: K or V non-finite; for Q, K
//                                   and V of one projection it takes the qk-norm and RoPE first,
//                                   in place of their dispatches (input_steps.js's prepareInAppend())
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
import { Usage } from './device.js';
import { packParams } from './kernel_params.js';
import { ATTENTION_PARAMS, MASK_SENTINEL, firstKeyOf } from './kernels/attention_common.wgsl.js';
import { linearUniforms } from './kernels/linear_common.wgsl.js';
import { blockBuffers } from './weight_storage.js';
import { encodeQ8Linear } from './q8_projection.js';
import { WEIGHTS_WORKGROUP } from './kernels/attention_weights.wgsl.js';
import { SINKS_PARAMS, SINKS_WORKGROUP } from './kernels/attention_sinks.wgsl.js';
import { NONFINITE_PARAMS } from './kernels/nonfinite_rows.wgsl.js';
import { isAttentionOnly } from '../base/attention_only.js';
import { nanRuleInReduce } from './selection/attention_path.js';
import { callRows, callTable, rowTableOf, windowIds } from './call_rows.js';
import { encodeInputSteps } from './input_steps.js';
import { keysBound } from './step_bound.js';

export const cdiv = (a, b) => Math.ceil(a / b);
const STORAGE_OUT = Usage.STORAGE | Usage.COPY_SRC;

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

// The input projections, then qk-norm, RoPE and the cache append; returns the attention operands { q, k, v }.
function encodeInputs(ctx, { plan, config, cache, problems, kernels }) {
  const { buffer, upload, params } = ctx;
  const { headDim: dk, valueHeadDim: dv } = config;
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
  const q = operand(problems.q);
  const { k, v } = encodeInputSteps(ctx, { plan, config, cache, problems, kernels }, { q, k: operand(problems.k), v: operand(problems.v) });
  return { q, k, v };
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
