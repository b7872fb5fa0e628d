// A float64 reference of MultiHeadAttention.forward() in plain JS, for the randomized
// differential test: written from the formulas (docs/attention-math.md §1, §4), sharing no code
// with the package, so a bug in the package's mask or head indexing cannot hide in it.
// Semantics: PyTorch's nn.MultiheadAttention(batch_first=True), with the package's documented
// choices: a row with no allowed key gets zero output and zero weights; a NaN among a row's scores
// (after masking: maskedScore) makes the row NaN; a masked key (causal, boolean, −∞ additive) is
// absent, whatever its key and value hold (PyTorch's 0 · NaN would make the row NaN). A key whose
// score is −∞ by arithmetic (an infinite query or key) is not masked: as in PyTorch, it has
// weight 0 and adds 0 · its value, and a row whose allowed keys all score −∞ is NaN. A module
// with 16- or 8-bit storage computes this with its weights, and a KV cache's keys and values,
// replaced by the values they store (storage.mjs); with activations 'int8', each projection's input
// rows replaced by their int8 blocks' values (storage.mjs's int8Activations). Grouped-query
// attention (numKvHeads G < H): keys and values have G heads, query head h reads K/V head
// floor(h · G / H) (docs/attention-math/decoding.md §9).
import { int8ActivationSlack, projectionInput, stored, storedStateDict } from './storage.mjs';

/**
 * y[r][o] = Σ_c x[r][c] · W[rowOffset + o][c] + b[rowOffset + o], in float64 (also the kernel-case
 * reference's linear, tests/cases/reference.mjs).
 */
export function linear(x, rows, inDim, W, outDim, rowOffset, b) {
  const y = new Float64Array(rows * outDim);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outDim; o++) {
      let s = b ? b[rowOffset + o] : 0;
      const w = (rowOffset + o) * inDim;
      for (let c = 0; c < inDim; c++) s += x[r * inDim + c] * W[w + c];
      y[r * outDim + o] = s;
    }
  }
  return y;
}

/** K/V heads: numKvHeads, or one per query head. */
const kvHeads = (config) => config.numKvHeads ?? config.numHeads;

/**
 * The weights W_q, W_k, W_v and their biases (whatever the state dict's layout: packed
 * in_proj_weight / in_proj_bias or one entry per projection; a bias not there is null), W_O, b_O.
 */
function weights(config, sd) {
  const get = (name) => sd[name]?.data ?? null;
  const packed = get('in_proj_weight');
  const packedBias = get('in_proj_bias');
  const { embedDim: E, numHeads: H, headDim: dk } = config;
  const G = kvHeads(config);
  const q = packed ? packed : get('q_proj_weight');
  const k = packed ? packed.subarray(H * dk * E, (H + G) * dk * E) : get('k_proj_weight');
  const v = packed ? packed.subarray((H + G) * dk * E) : get('v_proj_weight');
  return {
    q, k, v,
    qBias: packedBias ?? get('q_proj_bias'),
    kBias: packedBias ? packedBias.subarray(H * dk) : get('k_proj_bias'),
    vBias: packedBias ? packedBias.subarray((H + G) * dk) : get('v_proj_bias'),
    outW: get('out_proj.weight'), outB: get('out_proj.bias'), sinks: get('sinks'),
  };
}

/**
 * Score (b, h, i, j) after causal and the masks, in that order, or null where they mask the key:
 * causal (key j > query i) masks it; then the key-padding mask [B, S], then the attention mask
 * ([L, S] or [B·H, L, S]), each boolean entry (Uint8Array nonzero) and each -Infinity additive one
 * setting -Infinity, and each other additive (Float32Array) one added; the key is masked where the
 * masks alone (the same steps from 0) give -Infinity. (So an additive NaN after a boolean -Infinity
 * is NaN, as PyTorch's merged mask is.)
 */
function maskedScore(score, o, H, L, S, b, h, i, j) {
  if (o.isCausal && j > i) return null;
  let s = score, masks = 0;
  const apply = (x, m, at) => (m.data instanceof Uint8Array ? (m.data[at] ? -Infinity : x) : m.data[at] === -Infinity ? -Infinity : x + m.data[at]);
  for (const [m, at] of [[o.keyPaddingMask, b * S + j], [o.attnMask, o.attnMask?.shape.length === 2 ? i * S + j : ((b * H + h) * L + i) * S + j]]) {
    if (!m) continue;
    s = apply(s, m, at);
    masks = apply(masks, m, at);
  }
  return masks === -Infinity ? null : s;
}

/**
 * Softmax of one row, scores[j] null where key j is masked (absent, weight 0): NaN anywhere makes
 * it NaN; no allowed key makes it zero; allowed keys that all score -Infinity (by arithmetic: an
 * infinite query or key), with no sink above them, make it NaN, as PyTorch's exp(-Inf - -Inf).
 * A sink (a number: attention sinks) is one more logit in the denominator, with no value.
 */
export function softmaxRow(scores, sink = -Infinity) {
  // The package refuses a +Inf sink at loadStateDict() (docs/attention-math/scores.md §10): so does this.
  if (sink === Infinity) throw new Error('reference: a +Inf sink is refused');
  const allowed = scores.filter((s) => s !== null);
  if (allowed.some(Number.isNaN)) return scores.map(() => NaN);
  if (allowed.length === 0) return scores.map(() => 0);
  const max = Math.max(...allowed, sink);
  if (max === -Infinity) return scores.map(() => NaN);
  const e = scores.map((s) => (s === null ? 0 : Math.exp(s - max)));
  const sum = e.reduce((a, b) => a + b, Math.exp(sink - max));
  return e.map((x) => x / sum);
}

/**
 * One query row of attention, the one float64 rule every JS reference uses (this file's
 * mhaReference(), the kernel cases' tests/cases/reference.mjs, the onnxruntime cases'
 * scripts/ort_op_cases/float64.mjs): scores[j] is key j's logit after the scale, the softcap and
 * the masks (null: the key is masked, absent), sink one more logit with no value (-Infinity: none).
 * Adds Σ_j p_j · V[valueAt(j) + c] to out[at + c], c < dv, over the keys present only (a masked
 * key adds nothing, not 0 · its value: NaN stays out; a key of score -Infinity by arithmetic is
 * present and adds 0 · its value, NaN where that is infinite, as in PyTorch); returns p
 * (softmaxRow()).
 */
export function attendRow(scores, sink, V, valueAt, dv, out, at) {
  const p = softmaxRow(scores, sink);
  for (let j = 0; j < scores.length; j++) {
    if (scores[j] === null) continue;
    const row = valueAt(j);
    for (let c = 0; c < dv; c++) out[at + c] += p[j] * V[row + c];
  }
  return p;
}

/**
 * RoPE (docs/attention-math/decoding.md §8) on projected rows [n, H·dk] of H heads, row t at position t:
 * pair j of each head ((j, j + dim/2), or (2j, 2j + 1) interleaved) turned by t·base^(−2j/dim).
 * Unscaled θ only.
 */
function rotated(config, x, H) {
  const r = config.rotary;
  if (!r) return x;
  if (r.scaling || r.table) throw new Error('reference: RoPE scaling and tables are not modelled here');
  const { headDim: dk } = config;
  const y = Float64Array.from(x);
  const half = r.dim / 2;
  for (let t = 0; t < y.length / (H * dk); t++) {
    for (let h = 0; h < H; h++) {
      for (let j = 0; j < half; j++) {
        const angle = t * r.base ** (-2 * j / r.dim);
        const i1 = (t * H + h) * dk + (r.interleaved ? 2 * j : j), i2 = (t * H + h) * dk + (r.interleaved ? 2 * j + 1 : j + half);
        const [x1, x2] = [y[i1], y[i2]];
        y[i1] = x1 * Math.cos(angle) - x2 * Math.sin(angle);
        y[i2] = x2 * Math.cos(angle) + x1 * Math.sin(angle);
      }
    }
  }
  return y;
}

/**
 * config: resolved create() options (weightsDtype: how the weights are stored, default float32;
 * activations: how the projections' inputs meet them, default float32);
 * sd: state dict of { data, shape } (16-bit tensors too); query [B, L, E], key [B, S, kdim],
 * value [B, S, vdim] (batched); options as forward() takes them (masks batched). kvDtype: how a
 * KV cache stores the projected keys and values (a cached forward of the whole sequence is this
 * one, causal), rounded per (position, head) row. Returns { output: Float64Array [B, L, E],
 * weights: Float64Array | null (averaged [B, L, S] or [B, H, L, S]), outputSlack: Float64Array |
 * null } (int8 activations: the output's extra tolerance for the heads that sit by a rounding
 * boundary, storage.mjs's int8ActivationSlack through |W_O|).
 */
export function mhaReference(config, sd, query, key, value, options = {}, kvDtype = 'float32') {
  const { embedDim: E, kdim, vdim, numHeads: H, headDim: dk, valueHeadDim: dv } = config;
  const G = kvHeads(config);
  const [B, L] = query.shape;
  const S = key.shape[1];
  const w = weights(config, storedStateDict(sd, config.weightsDtype));
  const act = (x, width) => projectionInput(x, width, config.activations);
  // The cache stores the float32 projections: rounded to float32 first, as the core has them.
  const cached = (rows, width) => (kvDtype === 'float32' ? rows : stored(Float32Array.from(rows), kvDtype, rows.length / S, width));
  const out = new Float64Array(B * L * E);
  const outSlack = config.activations === 'int8' ? new Float64Array(B * L * E) : null;
  const perHead = options.needWeights ? new Float64Array(B * H * L * S) : null;
  const scale = config.scale ?? 1 / Math.sqrt(dk);
  // Logit softcapping (issue 20): after the scale, before the masks.
  const cap = config.softcap ? (x) => config.softcap * Math.tanh(x / config.softcap) : (x) => x;
  for (let b = 0; b < B; b++) {
    const Q = rotated(config, linear(act(query.data.subarray(b * L * E, (b + 1) * L * E), E), L, E, w.q, H * dk, 0, w.qBias), H);
    const K = cached(rotated(config, linear(act(key.data.subarray(b * S * kdim, (b + 1) * S * kdim), kdim), S, kdim, w.k, G * dk, 0, w.kBias), G), dk);
    const V = cached(linear(act(value.data.subarray(b * S * vdim, (b + 1) * S * vdim), vdim), S, vdim, w.v, G * dv, 0, w.vBias), dv);
    const heads = new Float64Array(L * H * dv);
    for (let h = 0; h < H; h++) {
      const g = Math.floor((h * G) / H);  // its K/V head
      for (let i = 0; i < L; i++) {
        const scores = [];
        for (let j = 0; j < S; j++) {
          let s = 0;
          for (let c = 0; c < dk; c++) s += Q[i * H * dk + h * dk + c] * K[j * G * dk + g * dk + c];
          scores.push(maskedScore(cap(s * scale), options, H, L, S, b, h, i, j));
        }
        const p = attendRow(scores, w.sinks ? w.sinks[h] : -Infinity, V, (j) => j * G * dv + g * dv, dv, heads, i * H * dv + h * dv);
        if (perHead) p.forEach((x, j) => { perHead[((b * H + h) * L + i) * S + j] = x; });
      }
    }
    out.set(linear(act(heads, H * dv), L, H * dv, w.outW, E, 0, w.outB), b * L * E);
    if (outSlack) outSlack.set(linear(int8ActivationSlack(heads, H * dv), L, H * dv, w.outW.map(Math.abs), E, 0, null), b * L * E);
  }
  if (!perHead || options.averageAttnWeights === false) return { output: out, weights: perHead, outputSlack: outSlack };
  const avg = new Float64Array(B * L * S);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      for (let k = 0; k < L * S; k++) avg[b * L * S + k] += perHead[(b * H + h) * L * S + k] / H;
    }
  }
  return { output: out, weights: avg, outputSlack: outSlack };
}
