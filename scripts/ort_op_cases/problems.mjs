// Each onnxruntime attention test case as one "problem" in a shape of our own, or the reason it
// cannot be put to the package. A problem (float64 values, row-major):
//   { B, S (query rows), L (new key rows), P (past), hq, hkv, d, dv, dtype ('float32' | 'float16'),
//     q [B, S, hq·d] (ORT Attention: its input x [B, S, inDim]), k [B, L, hkv·d], v [B, L, hkv·dv],
//     pastK [B, hkv, P, d], pastV (as ORT keeps them: keys already rotated, bias added), qkvBias
//     { q, k, v } | null, projection { weight [inDim, qh + kh + vh], bias } | null (ORT Attention),
//     scale, softcap (0: none), sinks Float64Array(hq) | null, causal, window (keys a query sees; 0: all),
//     mask [B, hq, S, P + L] additive | null, rotary { cos, sin [n, half], half, interleaved } | null,
//     positionIds [B][S] | null (only where they differ from P + i), expected { output, presentKey?, presentValue? } }
// The operators' definitions: onnxruntime's docs/ContribOperators.md (GroupQueryAttention,
// MultiHeadAttention, Attention).
import { tensorOf } from './jsonc.mjs';

const unsupported = (reason) => ({ reason });

/** [B, N, T, H] (BNSH) → [B, T, N·H]. */
export function toRows(values, [B, N, T, H]) {
  const out = new Float64Array(values.length);
  for (let b = 0; b < B; b++) for (let n = 0; n < N; n++) for (let t = 0; t < T; t++) {
    for (let h = 0; h < H; h++) out[((b * T + t) * N + n) * H + h] = values[((b * N + n) * T + t) * H + h];
  }
  return out;
}

/** Additive bias [B or 1, H or 1, S, T] broadcast to [B, H, S, T]. */
function broadcastBias(t, B, H, S, T) {
  const [b1, h1] = t.dims;
  const out = new Float64Array(B * H * S * T);
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) {
    const from = (((b1 === 1 ? 0 : b) * h1) + (h1 === 1 ? 0 : h)) * S * T;
    out.set(t.values.subarray(from, from + S * T), (b * H + h) * S * T);
  }
  return out;
}

function expected(outputs) {
  const [output, presentKey, presentValue] = outputs.map(tensorOf);
  return { output, presentKey, presentValue };
}

/** com.microsoft GroupQueryAttention: causal over past + new, grouped K/V heads. */
function groupQueryAttention(attrs, inputs, outputs) {
  const known = ['num_heads', 'kv_num_heads', 'scale', 'softcap', 'do_rotary', 'rotary_interleaved', 'local_window_size', 'smooth_softmax'];
  const unknown = Object.keys(attrs).filter((a) => !known.includes(a));
  if (unknown.length) return unsupported(`attribute ${unknown.join(', ')}`);
  const [query, key, value, pastKey, pastValue, seqlensK, total, cos, sin, positionIds, bias, headSink] = inputs.map(tensorOf);
  const hq = attrs.num_heads, hkv = attrs.kv_num_heads;
  const [B, S] = query.dims;
  let q = query.values, k = key?.values, v = value?.values, d;
  if (!key) {  // packed QKV [B, S, (hq + 2·hkv)·d]
    d = query.dims[2] / (hq + 2 * hkv);
    q = new Float64Array(B * S * hq * d); k = new Float64Array(B * S * hkv * d); v = new Float64Array(B * S * hkv * d);
    const w = (hq + 2 * hkv) * d;
    for (let r = 0; r < B * S; r++) {
      q.set(query.values.subarray(r * w, r * w + hq * d), r * hq * d);
      k.set(query.values.subarray(r * w + hq * d, r * w + (hq + hkv) * d), r * hkv * d);
      v.set(query.values.subarray(r * w + (hq + hkv) * d, (r + 1) * w), r * hkv * d);
    }
  } else {
    d = query.dims[2] / hq;
  }
  const T = total.values[0];
  // seqlens_k is each batch entry's length − 1; the files of early 2024 (the first WebGPU
  // kernel's) hold the length itself. Either way one length for every entry is what a cache has.
  const lengths = [...seqlensK.values];
  if (!lengths.every((n) => n + 1 === T) && !lengths.every((n) => n === T)) {
    return unsupported(`per-batch sequence lengths (seqlens_k ${lengths.join(', ')}, total ${T}): one cache length serves every batch entry`);
  }
  const P = T - S;
  if (P < 0) return unsupported(`total_sequence_length ${T} below the ${S} new tokens`);
  const buffered = pastKey?.dims[2] ?? 0;
  if (buffered < P) return unsupported(`past of ${buffered} positions for a past length of ${P}`);
  const valid = (t) => (t && P ? Float64Array.from({ length: B * hkv * P * d }, (_, i) => {
    const row = Math.floor(i / d), c = i % d, pos = row % P, bh = Math.floor(row / P);
    return t.values[(bh * buffered + pos) * d + c];
  }) : null);
  // position_ids [B, S]: "when processing the first prompt the kernel uses only the first
  // element" (the schema's words): there row b's positions are ids[b][0] + i.
  let positions = null;
  if (positionIds) {
    const ids = Array.from({ length: B }, (_, b) => [...positionIds.values.subarray(b * S, (b + 1) * S)]
      .map((id, i, row) => (P === 0 ? row[0] + i : id)));
    if (ids.some((row) => row.some((p, i) => p !== P + i))) positions = ids;
  }
  const rotary = attrs.do_rotary ? { cos: cos.values, sin: sin.values, positions: cos.dims[0], half: cos.dims[1], interleaved: Boolean(attrs.rotary_interleaved) } : null;
  const sinks = headSink ? headSink.values : attrs.smooth_softmax ? new Float64Array(hq) : null;
  return {
    B, S, L: S, P, hq, hkv, d, dv: d, dtype: query.type, q, k, v, pastK: valid(pastKey), pastV: valid(pastValue), qkvBias: null, projection: null,
    scale: attrs.scale || 1 / Math.sqrt(d), softcap: attrs.softcap ?? 0, sinks, causal: true,
    // local_window_size w: each query sees its own key and the w − 1 before it (what onnxruntime's
    // local-window test file expects: with w = 1 every row is its own value).
    window: attrs.local_window_size > 0 ? attrs.local_window_size : 0,
    mask: bias ? broadcastBias(bias, B, hq, S, T) : null, rotary, positionIds: positions, expected: expected(outputs),
  };
}

/** com.microsoft MultiHeadAttention: q, k, v already projected, optional bias, past and masks. */
function multiHeadAttention(attrs, inputs, outputs) {
  const unknown = Object.keys(attrs).filter((a) => !['num_heads', 'scale', 'unidirectional', 'mask_filter_value'].includes(a));
  if (unknown.length) return unsupported(`attribute ${unknown.join(', ')}`);
  const [query, key, value, bias, keyPadding, attnBias, pastKey, pastValue, ...rest] = inputs.map(tensorOf);
  if (rest.some(Boolean)) return unsupported('inputs past past_value (past_sequence_length, cache_indirection)');
  if (!key || !value) return unsupported('packed QKV / packed KV in the query');
  const h = attrs.num_heads;
  const [B, S, width] = query.dims;
  const d = width / h;
  const fourD = key.dims.length === 4;
  if (fourD && bias) return unsupported('4-D key/value with a bias');
  const k = fourD ? toRows(key.values, key.dims) : key.values;
  const v = fourD ? toRows(value.values, value.dims) : value.values;
  const L = fourD ? key.dims[2] : key.dims[1];
  const dv = (fourD ? value.dims[3] * value.dims[1] : value.dims[2]) / h;
  const P = pastKey?.dims[2] ?? 0;
  const T = P + L;
  let mask = attnBias ? broadcastBias(attnBias, B, h, S, T) : null;
  if (keyPadding) {
    if (keyPadding.dims.length !== 2 || keyPadding.dims[1] !== T) return unsupported(`key_padding_mask of shape [${keyPadding.dims}] (only [B, total] is mapped)`);
    mask ??= new Float64Array(B * h * S * T);
    for (let b = 0; b < B; b++) for (let j = 0; j < T; j++) {
      if (keyPadding.values[b * T + j] === 0) for (let r = 0; r < h * S; r++) mask[(b * h * S + r) * T + j] = -Infinity;
    }
  }
  const qkvBias = bias ? {
    q: bias.values.subarray(0, h * d), k: bias.values.subarray(h * d, 2 * h * d), v: bias.values.subarray(2 * h * d),
  } : null;
  return {
    B, S, L, P, hq: h, hkv: h, d, dv, dtype: query.type, q: query.values, k, v, pastK: pastKey?.values ?? null, pastV: pastValue?.values ?? null,
    qkvBias, projection: null, scale: attrs.scale || 1 / Math.sqrt(d), softcap: 0, sinks: null, causal: Boolean(attrs.unidirectional),
    window: 0, mask, rotary: null, positionIds: null, expected: expected(outputs),
  };
}

/** com.microsoft Attention: the input projected by weights [inDim, qh + kh + vh] (+ bias), no output projection. */
function attention(attrs, inputs, outputs) {
  const unknown = Object.keys(attrs).filter((a) => !['num_heads', 'qkv_hidden_sizes', 'unidirectional', 'scale'].includes(a));
  if (unknown.length) return unsupported(`attribute ${unknown.join(', ')}`);
  const [input, weight, bias, maskIndex, past, attnBias, ...rest] = inputs.map(tensorOf);
  if (maskIndex || past || attnBias || rest.some(Boolean)) return unsupported('mask_index, past or attention_bias inputs');
  const h = attrs.num_heads;
  const [B, S, inDim] = input.dims;
  const [qh, kh, vh] = attrs.qkv_hidden_sizes ?? Array(3).fill(weight.dims[1] / 3);
  if (qh !== kh) return unsupported('q and k hidden sizes differ');
  if (vh > inDim) return unsupported(`v hidden size ${vh} above the input width ${inDim}: the module's output is embedDim wide`);
  return {
    B, S, L: S, P: 0, hq: h, hkv: h, d: qh / h, dv: vh / h, dtype: input.type, q: input.values, k: null, v: null, pastK: null, pastV: null,
    qkvBias: null, projection: { weight: weight.values, bias: bias?.values ?? new Float64Array(qh + kh + vh), inDim },
    scale: attrs.scale || 1 / Math.sqrt(qh / h), softcap: 0, sinks: null, causal: Boolean(attrs.unidirectional), window: 0,
    mask: null, rotary: null, positionIds: null, expected: expected(outputs),
  };
}

const OPERATORS = { GroupQueryAttention: groupQueryAttention, MultiHeadAttention: multiHeadAttention, Attention: attention };

/** A group's case as a problem, or { reason } why it is not put to the package. */
export function problemOf(group, c) {
  const translate = OPERATORS[group.operator];
  if (!translate) return unsupported(`operator ${group.operator}`);
  if (c.inputs.some((t) => t?.data && !['float32', 'float16', 'int32', 'int64'].includes(t.type))) {
    return unsupported(`input type ${c.inputs.find((t) => t?.data && !['float32', 'float16', 'int32', 'int64'].includes(t.type)).type}`);
  }
  return translate(group.attrs, c.inputs, c.outputs);
}
