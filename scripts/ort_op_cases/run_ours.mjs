// A problem (problems.mjs) put to the package as a user would: a MultiHeadAttention whose
// projections are identities (ORT's GroupQueryAttention and MultiHeadAttention take q, k, v
// already projected; ORT Attention's weights load as GPT-2's Conv1D c_attn), the options the case
// needs (scale, softcap, sinks for sinks and smooth softmax, a rotary table from cos_cache /
// sin_cache), float16 tensors for float16 cases, and a KV cache that holds the past and whose
// read() gives present_key / present_value. Resolves to { output, presentKey, presentValue }
// (float64 copies; presents null where the case has none) or { reason } where the package has no
// way to say what the case asks.
import { roundToHalf, widenHalf } from '../../web/src/storage/half_floats.js';
import { rotate } from './float64.mjs';
import { toRows } from './problems.mjs';

/** A weight [rows, cols]: ones on the diagonal (an identity, or an embedding where rows != cols). */
const eye = (rows, cols) => Float32Array.from({ length: rows * cols }, (_, i) => (i % cols === Math.floor(i / cols) ? 1 : 0));

/** Float64 values as the tensor the package takes: float32, or float16 bits for a float16 case. */
function tensor(values, shape, dtype) {
  const f32 = Float32Array.from(values);
  return dtype === 'float16' ? { data: roundToHalf('float16', f32), shape, dtype } : { data: f32, shape };
}
const values = (t) => Float64Array.from(t.dtype ? widenHalf(t.dtype, t.data) : t.data);

/** The create() options and state dict of the problem's module. */
function moduleOf(p) {
  const E = p.projection ? p.projection.inDim : p.hq * p.d;
  const kdim = p.projection ? E : p.hkv * p.d, vdim = p.projection ? E : p.hkv * p.dv;
  const options = {
    embedDim: E, numHeads: p.hq, numKvHeads: p.hkv, kdim, vdim, headDim: p.d, valueHeadDim: p.dv, scale: p.scale,
    bias: p.projection ? { q: true, k: true, v: true } : p.qkvBias ? { q: true, k: true, v: true } : false,
    ...(p.softcap && { softcap: p.softcap }), ...(p.sinks && { sinks: true }),
    ...(p.rotary && { rotary: { table: { cos: tensor(p.rotary.cos, [p.rotary.positions, p.rotary.half]), sin: tensor(p.rotary.sin, [p.rotary.positions, p.rotary.half]) }, interleaved: p.rotary.interleaved } }),
  };
  if (p.projection) {
    const { weight, bias } = p.projection;
    return { options, layout: 'gpt2', stateDict: { 'c_attn.weight': tensor(weight, [E, weight.length / E]), 'c_attn.bias': tensor(bias, [bias.length]), 'c_proj.weight': { data: eye(p.hq * p.dv, E), shape: [p.hq * p.dv, E] } } };
  }
  const sd = {
    'q_proj.weight': { data: eye(p.hq * p.d, E), shape: [p.hq * p.d, E] }, 'k_proj.weight': { data: eye(p.hkv * p.d, kdim), shape: [p.hkv * p.d, kdim] },
    'v_proj.weight': { data: eye(p.hkv * p.dv, vdim), shape: [p.hkv * p.dv, vdim] }, 'o_proj.weight': { data: eye(E, p.hq * p.dv), shape: [E, p.hq * p.dv] },
  };
  if (p.qkvBias) for (const x of ['q', 'k', 'v']) sd[`${x}_proj.bias`] = tensor(p.qkvBias[x], [p.qkvBias[x].length]);
  if (p.sinks) sd.sinks = tensor(p.sinks, [p.hq]);
  return { options, layout: 'hf', stateDict: sd };
}

/**
 * The past as the module's key and value inputs: ORT's past keys are rotated and biased already,
 * so the rotation is undone (positions 0..P−1) and the bias taken off, for the module to redo both.
 */
function pastInputs(p) {
  const k = toRows(p.pastK, [p.B, p.hkv, p.P, p.d]);
  const v = toRows(p.pastV, [p.B, p.hkv, p.P, p.dv]);
  if (p.rotary) rotate(k, p.B * p.P, p.hkv, p.d, p.rotary, (r) => r % p.P, -1);
  const minus = (x, bias, w) => (bias ? x.map((value, i) => value - bias[i % w]) : x);
  return { k: minus(k, p.qkvBias?.k, p.hkv * p.d), v: minus(v, p.qkvBias?.v, p.hkv * p.dv) };
}

/** forward()'s positionIds option (issue 20's other half): [B, S] integer positions. */
const positionIdsOption = (p) => ({ positionIds: { data: Int32Array.from(p.positionIds.flat()), shape: [p.B, p.S] } });

/** Whether the package refused `positionIds` as an option it does not know. */
const lacksPositionIds = (e) => e?.name === 'OptionError' && /positionIds/.test(e.message) && /unknown option/.test(e.message);

export async function runOurs(api, p) {
  const needsMask = Boolean(p.mask) || (!p.causal && p.S > 1) || p.L !== p.S;
  if (needsMask && p.rotary && p.P) return { reason: 'an attention bias beside rotary and a past: a forward without a cache puts queries at 0..S−1' };
  if (p.positionIds && needsMask) return { reason: 'position ids beside an attention bias' };
  const { options, layout, stateDict } = moduleOf(p);
  const mha = await api.MultiHeadAttention.create(options);
  try {
    mha.loadStateDict(stateDict, { layout });
    const E = options.embedDim;
    const query = tensor(p.q, [p.B, p.S, E], p.dtype);
    const key = p.projection ? query : tensor(p.k, [p.B, p.L, options.kdim], p.dtype);
    const value = p.projection ? query : tensor(p.v, [p.B, p.L, options.vdim], p.dtype);
    const past = p.P ? pastInputs(p) : null;
    let output = null, presentKey = null, presentValue = null;
    if (p.L === p.S) {
      // The cached pass: the past appended first (its output unused), then the new rows; causal,
      // which is the op's own rule for GQA and, for one query row, no rule at all.
      const cache = mha.createCache({ batchSize: p.B, maxLength: p.P + p.S, ...(p.window && { window: p.window }), dtype: p.dtype === 'float16' ? 'float16' : 'float32' });
      try {
        if (past) {
          await mha.forward(tensor(new Float64Array(p.B * p.P * E), [p.B, p.P, E], p.dtype), tensor(past.k, [p.B, p.P, options.kdim], p.dtype),
            tensor(past.v, [p.B, p.P, options.vdim], p.dtype), { cache });
        }
        try {
          ({ output } = await mha.forward(query, key, value, { cache, ...(p.positionIds && positionIdsOption(p)) }));
        } catch (e) {
          if (lacksPositionIds(e)) return { reason: 'needs forward(..., { positionIds })', positionIds: true };
          throw e;
        }
        const held = await cache.read();
        presentKey = values(held.key);
        presentValue = values(held.value);
      } finally {
        cache.dispose();
      }
    }
    if (needsMask) {
      // Every rule as one additive mask over past + new keys, the causal one bottom-right aligned.
      const T = p.P + p.L;
      const mask = new Float32Array(p.B * p.hq * p.S * T);
      for (let r = 0; r < p.B * p.hq * p.S; r++) {
        const self = p.P + (r % p.S);
        for (let j = 0; j < T; j++) {
          const hidden = (p.causal && j > self) || (p.window && j <= self - p.window);
          mask[r * T + j] = hidden ? -Infinity : p.mask ? p.mask[r * T + j] : 0;
        }
      }
      const cat = (a, b, w) => (past ? joinRows(a, b, p.B, p.P, p.L, w) : b);
      const [keys, vals] = p.projection ? [query, query]
        : [tensor(cat(past?.k, p.k, options.kdim), [p.B, T, options.kdim], p.dtype), tensor(cat(past?.v, p.v, options.vdim), [p.B, T, options.vdim], p.dtype)];
      ({ output } = await mha.forward(query, keys, vals, { attnMask: { data: mask, shape: [p.B * p.hq, p.S, T] } }));
    }
    const head = p.projection ? outputColumns(values(output), p.B * p.S, E, p.hq * p.dv) : values(output);
    return { output: head, presentKey, presentValue };
  } finally {
    mha.dispose();
  }
}

/** Per batch: P rows of a, then L rows of b (width w). */
function joinRows(a, b, B, P, L, w) {
  const out = new Float64Array(B * (P + L) * w);
  for (let i = 0; i < B; i++) {
    out.set(a.subarray(i * P * w, (i + 1) * P * w), i * (P + L) * w);
    out.set(b.subarray(i * L * w, (i + 1) * L * w), (i * (P + L) + P) * w);
  }
  return out;
}

/** The first n of E columns: the attention heads, where the identity-embedding out_proj put them. */
const outputColumns = (x, rows, E, n) => Float64Array.from({ length: rows * n }, (_, i) => x[Math.floor(i / n) * E + (i % n)]);

