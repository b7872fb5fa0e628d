// A float64 reference of one attention layer with grouped KV heads and RoPE, for modules whose
// weights come from a checkpoint (tests/js/quantised_load.test.js, gguf_module.test.js): the
// kernel cases' float64 pieces (tests/cases/reference.mjs: linear, rotary, attention) put
// together, sharing no code with the package.
import { attention, linear, rotary } from '../cases/reference.mjs';

/**
 * config: { embedDim: E, numHeads: H, numKvHeads: G = H, headDim: dk = E / H, rotary?: { dim,
 * interleaved, base }, qkNorm?: { eps } }; weights: { q, k, v, out: Float32Array | Float64Array
 * [out, in] (PyTorch's), qBias?, kBias?, vBias?, outBias?, qNorm?, kNorm? ([headDim]) }; x: { data, shape: [B, L, E] } (self-attention). Returns
 * Float64Array [B, L, E].
 */
export function layerReference(config, weights, x, { causal = false } = {}) {
  const { embedDim: E, numHeads: H } = config;
  const G = config.numKvHeads ?? H, dk = config.headDim ?? E / H;
  const [B, L] = x.shape;
  let q = linear(x.data, B * L, E, weights.q, H * dk, weights.qBias ?? null);
  let k = linear(x.data, B * L, E, weights.k, G * dk, weights.kBias ?? null);
  const v = linear(x.data, B * L, E, weights.v, G * dk, weights.vBias ?? null);
  if (config.qkNorm) {
    q = headNorm(q, dk, weights.qNorm, config.qkNorm.eps);
    k = headNorm(k, dk, weights.kNorm, config.qkNorm.eps);
  }
  if (config.rotary) {
    q = rotary(q, B, L, H, dk, config.rotary);
    k = rotary(k, B, L, G, dk, config.rotary);
  }
  const heads = attention({ batch: B, heads: H, kvHeads: G, L, S: L, dk, dv: dk, causal }, q, k, v, null, null);
  return linear(heads, B * L, H * dk, weights.out, E, weights.outBias ?? null);
}

/** RMSNorm of every head's row of d values (Qwen3's q and k norm, before RoPE): x / √(mean(x²) + eps) · w. */
function headNorm(x, d, w, eps) {
  const y = Float64Array.from(x);
  for (let r = 0; r < x.length; r += d) {
    let s = 0;
    for (let i = 0; i < d; i++) s += x[r + i] ** 2;
    const scale = 1 / Math.sqrt(s / d + eps);
    for (let i = 0; i < d; i++) y[r + i] = x[r + i] * scale * w[i];
  }
  return y;
}

/** A torch-layout state dict's weights ({ name: { data } }) as layerReference() takes them. */
export function torchWeights(sd, { embedDim: E, numHeads: H, numKvHeads: G = H, headDim: dk = E / H }) {
  const get = (name) => sd[name]?.data;
  const packed = get('in_proj_weight'), packedBias = get('in_proj_bias');
  const rows = [H * dk * E, G * dk * E], biasRows = [H * dk, G * dk];
  return {
    q: packed ? packed.subarray(0, rows[0]) : get('q_proj_weight'),
    k: packed ? packed.subarray(rows[0], rows[0] + rows[1]) : get('k_proj_weight'),
    v: packed ? packed.subarray(rows[0] + rows[1]) : get('v_proj_weight'),
    out: get('out_proj.weight'),
    qBias: packedBias ? packedBias.subarray(0, biasRows[0]) : get('q_proj_bias'),
    kBias: packedBias ? packedBias.subarray(biasRows[0], biasRows[0] + biasRows[1]) : get('k_proj_bias'),
    vBias: packedBias ? packedBias.subarray(biasRows[0] + biasRows[1]) : get('v_proj_bias'),
    outBias: get('out_proj.bias'),
  };
}
