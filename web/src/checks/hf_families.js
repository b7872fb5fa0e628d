// The Hugging Face model families MultiHeadAttention.fromConfig() knows (hf_config.js reads a
// config.json with them), one row per `model_type`. A row says where the attention's numbers are
// in that family's config.json, the defaults its transformers config class fills in for fields a
// published config.json leaves out (Gemma 3's text_config gives neither num_attention_heads nor
// head_dim), and what the family adds to plain attention. `reads` lists the attention fields of
// hf_config.js's ATTENTION_FIELDS the row understands: any other of them, present and not
// neutral, is an OptionError (a field is never read by a family that would ignore it).

const decoderPrefix = (layer) => `model.layers.${layer}.self_attn.`;

// Llama-like decoders: q/k/v/o_proj ('hf'), RoPE from rope_theta, causal.
const decoder = {
  layout: 'hf', prefix: decoderPrefix, causal: true,
  sizes: { embedDim: 'hidden_size', numHeads: 'num_attention_heads', numKvHeads: 'num_key_value_heads', layers: 'num_hidden_layers' },
  rope: true,
};

// Which layers have a sliding window when a config.json has no layer_types: the family's rule,
// as its transformers config class writes layer_types.
const SLIDING = {
  all: (layer, c) => c.sliding_window !== null,
  // Qwen2/3: only with use_sliding_window, from layer max_window_layers on.
  qwen: (layer, c) => c.use_sliding_window === true && c.sliding_window !== null && layer >= c.max_window_layers,
  // Gemma 2: even layers are local.
  gemma2: (layer) => layer % 2 === 0,
  // Gemma 3: every sliding_window_pattern-th layer is global, the others local.
  gemma3: (layer, c) => (layer + 1) % c.sliding_window_pattern !== 0,
};

const GEMMA3_TEXT = {
  ...decoder,
  defaults: {
    num_attention_heads: 8, num_key_value_heads: 4, head_dim: 256, query_pre_attn_scalar: 256, rope_theta: 1000000,
    rope_local_base_freq: 10000, sliding_window: 4096, sliding_window_pattern: 6, rms_norm_eps: 1e-6,
    attn_logit_softcapping: null, attention_bias: false,
  },
  reads: ['head_dim', 'rope_scaling', 'sliding_window', 'sliding_window_pattern', 'layer_types', 'rope_local_base_freq',
    'query_pre_attn_scalar', 'attn_logit_softcapping', 'attention_bias'],
  sliding: SLIDING.gemma3,
  bias: 'attention_bias',
  // Gemma's RMSNorm multiplies by (1 + weight): the file's q_norm/k_norm weights are w − 1.
  qkNorm: { weightOffset: 1 },
  scale: 'query_pre_attn_scalar',
  softcap: 'attn_logit_softcapping',
  // Local layers rotate with rope_local_base_freq and no scaling (transformers' rotary_emb_local).
  localRope: 'rope_local_base_freq',
};

/** model_type → the family's row. */
export const FAMILIES = {
  // Llama 2, 3, 3.1, 3.2 and SmolLM/SmolLM2 (model_type 'llama').
  llama: {
    ...decoder,
    defaults: { rope_theta: 10000, attention_bias: false },
    reads: ['head_dim', 'rope_scaling', 'attention_bias'],
    bias: 'attention_bias',
  },
  mistral: {
    ...decoder,
    defaults: { rope_theta: 10000, sliding_window: null },
    reads: ['head_dim', 'rope_scaling', 'sliding_window'],
    sliding: SLIDING.all,
  },
  // Qwen2 and Qwen2.5: biases on q, k and v, none on o_proj.
  qwen2: {
    ...decoder,
    defaults: { rope_theta: 10000, sliding_window: null, use_sliding_window: false, max_window_layers: 28 },
    reads: ['rope_scaling', 'sliding_window', 'use_sliding_window', 'max_window_layers', 'layer_types'],
    sliding: SLIDING.qwen,
    fixedBias: { q: true, k: true, v: true },
  },
  qwen3: {
    ...decoder,
    defaults: {
      head_dim: 128, rope_theta: 10000, attention_bias: false, sliding_window: null, use_sliding_window: false,
      max_window_layers: 28, rms_norm_eps: 1e-6,
    },
    reads: ['head_dim', 'rope_scaling', 'attention_bias', 'sliding_window', 'use_sliding_window', 'max_window_layers', 'layer_types'],
    sliding: SLIDING.qwen,
    bias: 'attention_bias',
    qkNorm: { weightOffset: 0 },
  },
  // Phi-3: one packed qkv_proj, no biases; a sliding window on every layer.
  phi3: {
    ...decoder,
    defaults: { rope_theta: 10000, sliding_window: null, partial_rotary_factor: 1 },
    reads: ['rope_scaling', 'sliding_window', 'partial_rotary_factor'],
    sliding: SLIDING.all,
  },
  gemma2: {
    ...decoder,
    defaults: {
      head_dim: 256, query_pre_attn_scalar: 256, attn_logit_softcapping: 50, sliding_window: 4096, rope_theta: 10000,
      attention_bias: false,
    },
    reads: ['head_dim', 'rope_scaling', 'sliding_window', 'layer_types', 'query_pre_attn_scalar', 'attn_logit_softcapping', 'attention_bias'],
    sliding: SLIDING.gemma2,
    bias: 'attention_bias',
    scale: 'query_pre_attn_scalar',
    softcap: 'attn_logit_softcapping',
  },
  gemma3_text: GEMMA3_TEXT,
  // Gemma 3's multimodal config.json: the language model's fields are in text_config, its weights
  // under language_model.model.
  gemma3: {
    ...GEMMA3_TEXT,
    textConfig: 'gemma3_text',
    prefix: (layer) => `language_model.model.layers.${layer}.self_attn.`,
  },
  // gpt-oss: a sink logit per head, biases on all four projections, alternating windowed layers.
  gpt_oss: {
    ...decoder,
    defaults: { head_dim: 64, rope_theta: 150000, attention_bias: true, sliding_window: 128 },
    reads: ['head_dim', 'rope_scaling', 'sliding_window', 'layer_types', 'attention_bias'],
    sliding: (layer) => layer % 2 === 0,
    bias: 'attention_bias',
    sinks: true,
  },
  // GPT-2: Conv1D c_attn/c_proj with biases, learned positions outside the block (no RoPE).
  gpt2: {
    layout: 'gpt2', prefix: (layer) => `h.${layer}.attn.`, causal: true,
    sizes: { embedDim: 'n_embd', numHeads: 'n_head', layers: 'n_layer' },
    defaults: { scale_attn_weights: true, scale_attn_by_inverse_layer_idx: false, reorder_and_upcast_attn: false },
    reads: ['scale_attn_weights', 'scale_attn_by_inverse_layer_idx', 'reorder_and_upcast_attn'],
    fixedBias: true,
    gpt2Scale: true,
  },
  // BERT: the encoder's attention block (self.query, ..., output.dense), not causal.
  bert: {
    layout: 'bert', prefix: (layer) => `bert.encoder.layer.${layer}.attention.`, causal: false,
    sizes: { embedDim: 'hidden_size', numHeads: 'num_attention_heads', layers: 'num_hidden_layers' },
    defaults: { position_embedding_type: 'absolute' },
    reads: ['position_embedding_type'],
    fixedBias: true,
  },
};
