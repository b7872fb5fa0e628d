// MultiHeadAttention.fromConfig()'s mapping: one layer's create() options, KV-cache window and
// checkpoint naming from a Hugging Face config.json object, by its model_type's row in
// hf_families.js. Nothing is guessed: an unknown model_type, a field that changes attention
// which the family's row does not read, or a value this package cannot compute exactly is an
// OptionError naming the field as config.json spells it ('config.rope_scaling.rope_type').
import { OptionError, describe } from '../base/errors.js';
import { FAMILIES } from './hf_families.js';
import { resolveMhaConfig } from './module_config.js';
import { checkOptions } from '../base/option_checks.js';

/**
 * Fields of a config.json that change what one attention layer computes, each with its neutral
 * value (null: absent or null is neutral). A family reads those of them it lists in `reads`;
 * another one present with a value other than its neutral one is refused.
 */
const ATTENTION_FIELDS = {
  head_dim: null, rope_scaling: null, sliding_window: null, layer_types: null, use_sliding_window: false,
  max_window_layers: null, sliding_window_pattern: null, rope_local_base_freq: null, query_pre_attn_scalar: null,
  attn_logit_softcapping: null, attention_bias: false, partial_rotary_factor: 1, position_embedding_type: 'absolute',
  scale_attn_weights: true, scale_attn_by_inverse_layer_idx: false, reorder_and_upcast_attn: false,
  // Read by no family here: Llama 4's chunked attention, transformers 5's rope_parameters (in
  // place of rope_theta and rope_scaling), SmolLM3's layers without RoPE, OLMo 2's qk-norm.
  attention_chunk_size: null, rope_parameters: null, no_rope_layers: null, use_qk_norm: false, qk_layernorm: false,
  is_decoder: false, alibi: false,
};

/** What fromConfig() takes beside the config: the layer, and what may replace the config's. */
export const FROM_CONFIG_OPTIONS = ['layer', 'prefix', 'rotary'];

const refuse = (field, expected, actual, why = '') => new OptionError(
  `config.${field}: expected ${expected}, got ${actual}${why}`, { argument: `config.${field}`, expected, actual });

// A config field read as an integer >= 1, a number > 0, or a boolean.
const size = (c, name, at) => (Number.isInteger(c[name]) && c[name] >= 1 ? c[name] : fail(at + name, 'an integer >= 1', c[name]));
const positive = (c, name, at) => (typeof c[name] === 'number' && c[name] > 0 && c[name] < Infinity ? c[name] : fail(at + name, 'a number > 0', c[name]));
const flag = (c, name, at) => (typeof c[name] === 'boolean' ? c[name] : fail(at + name, 'a boolean', c[name]));
function fail(field, expected, value) {
  throw refuse(field, expected, value === undefined ? 'nothing (the field is missing)' : describe(value));
}

/**
 * The layer's { modelType, layer, options (create()'s), window (the KV cache's sliding window,
 * or null), causal, load: { layout, prefix } (loadStateDict()'s), qkNormWeightOffset (added to
 * the file's q_norm/k_norm weights: 1 for Gemma 3) }.
 */
export function attentionOptionsFromConfig(config, options) {
  const { layer, prefix, rotary } = checkOptions('fromConfig', options, FROM_CONFIG_OPTIONS);
  const { family, c, at, modelType } = familyOf(config);
  const layers = size(c, family.sizes.layers, at);
  if (!Number.isInteger(layer) || layer < 0 || layer >= layers) {
    throw new OptionError(`layer: expected an integer in [0, ${layers}) (config.${at}${family.sizes.layers}), got ${describe(layer)}`, {
      argument: 'layer', expected: `[0, ${layers})`, actual: describe(layer),
    });
  }
  if (prefix !== undefined && typeof prefix !== 'string') {
    throw new OptionError(`prefix: expected a string, got ${describe(prefix)}`, { argument: 'prefix', expected: 'string', actual: describe(prefix) });
  }
  const sliding = isSliding(family, c, layer, layers, at);
  const created = {
    ...sizeOptions(family, c, at),
    bias: biasOption(family, c, at),
    ...scoreOptions(family, c, layer, at),
    ...(family.rope ? { rotary: rotary ?? ropeOption(family, c, sliding, at) } : rotary === undefined ? {} : { rotary }),
  };
  checkCreatable(created, family, at, rotary === undefined && family.rope ? (sliding && family.localRope) || 'rope_theta' : null);
  return {
    modelType, layer, options: created,
    window: sliding ? size(c, 'sliding_window', at) : null,
    causal: family.causal,
    load: { layout: family.layout, prefix: prefix ?? family.prefix(layer) },
    qkNormWeightOffset: family.qkNorm?.weightOffset ?? 0,
  };
}

// The family row and the config with the row's defaults under it (text_config's for Gemma 3's
// multimodal config), checked for attention fields the row does not read.
function familyOf(config) {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new OptionError(`config: expected a config.json object, got ${describe(config)}`, { argument: 'config', expected: 'object', actual: describe(config) });
  }
  const modelType = config.model_type;
  if (!Object.hasOwn(FAMILIES, modelType ?? '')) {
    throw refuse('model_type', `one of ${Object.keys(FAMILIES).map((t) => `'${t}'`).join(', ')}`, describe(modelType),
      ' (fromConfig knows only these families; give create() the options yourself: docs/checkpoints.md)');
  }
  let family = FAMILIES[modelType];
  let fields = config;
  let at = '';
  if (family.textConfig) {
    fields = config.text_config;
    at = 'text_config.';
    if (fields === null || typeof fields !== 'object') fail('text_config', 'an object', fields);
    const inner = fields.model_type;
    if (inner !== undefined && inner !== family.textConfig) fail('text_config.model_type', `'${family.textConfig}'`, inner);
  }
  const c = { ...family.defaults };
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) c[name] = value;
  for (const [name, neutral] of Object.entries(ATTENTION_FIELDS)) {
    const value = c[name];
    if (value === undefined || value === null || value === neutral || family.reads.includes(name)) continue;
    throw refuse(at + name, neutral === null ? 'no value (null or absent)' : describe(neutral), describe(value),
      ` (model_type '${modelType}' does not read it here, and it changes attention)`);
  }
  return { family, c, at, modelType };
}

// embedDim, numHeads, numKvHeads; headDim and valueHeadDim where the config gives head_dim.
function sizeOptions(family, c, at) {
  const { embedDim, numHeads, numKvHeads } = family.sizes;
  const out = { embedDim: size(c, embedDim, at), numHeads: size(c, numHeads, at) };
  if (numKvHeads && c[numKvHeads] !== undefined && c[numKvHeads] !== null) out.numKvHeads = size(c, numKvHeads, at);
  if (family.reads.includes('head_dim') && c.head_dim !== undefined && c.head_dim !== null) {
    out.headDim = size(c, 'head_dim', at);
    out.valueHeadDim = out.headDim;
  }
  return out;
}

// bias: the family's fixed flags, or its config flag (attention_bias: all four projections).
function biasOption(family, c, at) {
  if (family.fixedBias !== undefined) return family.fixedBias;
  return family.bias ? flag(c, family.bias, at) : false;
}

// scale, softcap, sinks and qkNorm, as the family has them.
function scoreOptions(family, c, layer, at) {
  const out = {};
  if (family.scale) out.scale = positive(c, family.scale, at) ** -0.5;
  if (family.gpt2Scale) {
    // GPT-2 divides the scores by √headDim unless scale_attn_weights is false, and by layer + 1
    // with scale_attn_by_inverse_layer_idx (reorder_and_upcast_attn only changes float16 rounding).
    const weights = flag(c, 'scale_attn_weights', at);
    const byLayer = flag(c, 'scale_attn_by_inverse_layer_idx', at);
    flag(c, 'reorder_and_upcast_attn', at);
    const headDim = size(c, family.sizes.embedDim, at) / size(c, family.sizes.numHeads, at);
    if (!weights || byLayer) out.scale = (weights ? headDim ** -0.5 : 1) / (byLayer ? layer + 1 : 1);
  }
  if (family.softcap && c[family.softcap] !== null) out.softcap = positive(c, family.softcap, at);
  if (family.sinks) out.sinks = true;
  if (family.qkNorm) out.qkNorm = { eps: positive(c, 'rms_norm_eps', at) };
  if (c.position_embedding_type !== 'absolute' && family.reads.includes('position_embedding_type')) {
    fail(at + 'position_embedding_type', "'absolute' (relative position scores are not part of this module)", c.position_embedding_type);
  }
  return out;
}

// Whether `layer` has a sliding window: config.layer_types where the config has it, else the
// family's rule.
function isSliding(family, c, layer, layers, at) {
  if (c.layer_types !== undefined && c.layer_types !== null) {
    const types = c.layer_types;
    if (!Array.isArray(types) || types.length !== layers) {
      fail(at + 'layer_types', `an array of ${layers} layer types (num_hidden_layers)`, types);
    }
    const type = types[layer];
    if (type !== 'full_attention' && type !== 'sliding_attention') fail(`${at}layer_types[${layer}]`, "'full_attention' or 'sliding_attention'", type);
    if (type === 'sliding_attention' && (c.sliding_window === null || c.sliding_window === undefined)) {
      fail(at + 'sliding_window', `a window for layer_types[${layer}] 'sliding_attention'`, c.sliding_window);
    }
    return type === 'sliding_attention';
  }
  if (!family.sliding) return false;
  if (family.reads.includes('sliding_window_pattern')) size(c, 'sliding_window_pattern', at);
  if (family.reads.includes('use_sliding_window') && flag(c, 'use_sliding_window', at)) {
    if (!Number.isInteger(c.max_window_layers) || c.max_window_layers < 0) fail(at + 'max_window_layers', 'an integer >= 0', c.max_window_layers);
  }
  // A rule that slides the layer needs a window (Mistral's and Qwen's say no window without one;
  // Gemma's local layers have no meaning without it).
  const slides = family.sliding(layer, c);
  if (slides) size(c, 'sliding_window', at);
  return slides;
}

// RoPE: base rope_theta (rope_local_base_freq on a local layer where the family has one, without
// scaling), its rope_scaling, and partial_rotary_factor's dim.
function ropeOption(family, c, sliding, at) {
  if (sliding && family.localRope) return { base: positive(c, family.localRope, at) };
  const rotary = { base: positive(c, 'rope_theta', at) };
  if (c.partial_rotary_factor !== undefined && c.partial_rotary_factor !== 1) {
    const headDim = c.head_dim ?? size(c, family.sizes.embedDim, at) / size(c, family.sizes.numHeads, at);
    rotary.dim = Math.floor(headDim * positive(c, 'partial_rotary_factor', at));
  }
  const scaling = ropeScaling(c.rope_scaling, at);
  if (scaling) rotary.scaling = scaling;
  return rotary;
}

// rope_scaling → rotary.scaling: linear and llama3; 'default' (or null) is none. Any other type
// (dynamic, yarn, longrope, su) computes angles this mapping does not: fromConfig's `rotary`
// option then takes your own { table: { cos, sin } }.
function ropeScaling(s, at) {
  if (s === undefined || s === null) return null;
  const field = `${at}rope_scaling`;
  if (typeof s !== 'object' || Array.isArray(s)) fail(field, 'an object or null', s);
  if (s.type !== undefined && s.rope_type !== undefined && s.type !== s.rope_type) {
    fail(`${field}.type`, `the same as rope_type (${describe(s.rope_type)})`, s.type);
  }
  const type = s.rope_type ?? s.type;
  const typeField = `${field}.${s.rope_type === undefined ? 'type' : 'rope_type'}`;
  if (type === 'default') return null;
  if (type !== 'linear' && type !== 'llama3') {
    fail(typeField, "'linear', 'llama3' or 'default' (other scalings: fromConfig(config, { rotary: { table: { cos, sin } } }))", type);
  }
  const factor = positive(s, 'factor', `${field}.`);
  if (type === 'linear') return { type, factor };
  return {
    type, factor, lowFreqFactor: positive(s, 'low_freq_factor', `${field}.`), highFreqFactor: positive(s, 'high_freq_factor', `${field}.`),
    originalMaxPositions: size(s, 'original_max_position_embeddings', `${field}.`),
  };
}

// create()'s own checks over the options (sizes that do not divide, numKvHeads not a divisor,
// a base or eps float32 cannot hold), named by the config field the option came from. rotary:
// the field its base came from, or null where the caller gave rotary (its errors are its own).
function checkCreatable(options, family, at, rotary) {
  try {
    resolveMhaConfig(options);
  } catch (e) {
    if (!(e instanceof OptionError)) throw e;
    const sources = {
      ...family.sizes, headDim: 'head_dim', valueHeadDim: 'head_dim', scale: family.scale, softcap: family.softcap, 'qkNorm.eps': 'rms_norm_eps',
      ...(rotary && { 'rotary.base': rotary, 'rotary.dim': 'partial_rotary_factor', 'rotary.scaling': 'rope_scaling' }),
    };
    // The longest option path that names a source: 'rotary.scaling.highFreqFactor' → rope_scaling.
    const path = String(e.argument).split('.');
    const key = path.map((_, i) => path.slice(0, path.length - i).join('.')).find((k) => sources[k]);
    if (!key) throw e;
    const field = `config.${at}${sources[key]}`;
    throw new OptionError(`${field}: ${e.message}`, { argument: field, expected: e.expected, actual: e.actual });
  }
}
