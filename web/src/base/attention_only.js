// The config of scaledDotProductAttention() and selfAttention() on a backend other than the
// calling thread's WASM (api/attention_engines.js): a module config the executors and the cost
// model read, of one head of widths d_k and d_v, with no projections and no weights. The inputs
// are then Q, K and V as given, and the heads' output is the result (webgpu/forward_encode.js).

/** An attention-only config for head widths dk and dv. */
export const attentionConfig = (dk, dv) => ({
  embedDim: dk, kdim: dk, vdim: dv, numHeads: 1, numKvHeads: 1, headDim: dk, valueHeadDim: dv,
  scale: 1 / Math.sqrt(dk), projections: false,
});

/** Whether `config` is attentionConfig()'s: no projections, no weights. */
export const isAttentionOnly = (config) => config.projections === false;
