// MultiHeadAttention.fromConfig() and attentionOptionsFromConfig() (web/src/checks/hf_config.js) over
// the config.json of each family, written into tests/fixtures/hf_configs/ from the published
// files: per fixture and layer, the options, window, causality and checkpoint naming equal the
// table below (docs/checkpoints.md's, written out); fromConfig() modules load checkpoint fixtures
// under their own layout and prefix and match float64; and every config field that is unknown,
// missing, out of range or in conflict is an OptionError naming it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import * as api from '#webattention';
import { resolveMhaConfig } from '../../web/src/checks/module_config.js';
import { runCheckpointCase } from '../contract/run_checkpoint.mjs';
import { decodeCreate } from '../contract/decode.mjs';
import { randomTensor, rng } from '../contract/contract.mjs';

const { MultiHeadAttention, OptionError, attentionOptionsFromConfig } = api;
const configDir = new URL('../fixtures/hf_configs/', import.meta.url);
const fixture = (name) => JSON.parse(readFileSync(new URL(`${name}.json`, configDir), 'utf8'));

const hf = (layer) => ({ layout: 'hf', prefix: `model.layers.${layer}.self_attn.` });
const none = { q: false, k: false, v: false, out: false };
const llama3 = (factor) => ({ type: 'llama3', factor, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositions: 8192 });

// fixture → { layer: [options, window, load, extra] }: the expected mapping, by hand from the
// families' modeling code (which layers slide, which base and scale each uses).
const TABLE = {
  'llama-2-7b': { 0: [{ embedDim: 4096, numHeads: 32, numKvHeads: 32, bias: false, rotary: { base: 10000 } }, null, hf(0)] },
  'llama-3-8b': { 31: [{ embedDim: 4096, numHeads: 32, numKvHeads: 8, bias: false, rotary: { base: 500000 } }, null, hf(31)] },
  'llama-3.1-8b': {
    0: [{ embedDim: 4096, numHeads: 32, numKvHeads: 8, bias: false, rotary: { base: 500000, scaling: llama3(8) } }, null, hf(0)],
  },
  'llama-3.2-1b': {
    15: [{ embedDim: 2048, numHeads: 32, numKvHeads: 8, headDim: 64, valueHeadDim: 64, bias: false, rotary: { base: 500000, scaling: llama3(32) } }, null, hf(15)],
  },
  'smollm2-135m': { 3: [{ embedDim: 576, numHeads: 9, numKvHeads: 3, bias: false, rotary: { base: 100000 } }, null, hf(3)] },
  'mistral-7b-v0.1': { 7: [{ embedDim: 4096, numHeads: 32, numKvHeads: 8, bias: false, rotary: { base: 10000 } }, 4096, hf(7)] },
  // use_sliding_window false: no window although sliding_window is set.
  'qwen2.5-7b': { 27: [{ embedDim: 3584, numHeads: 28, numKvHeads: 4, bias: { q: true, k: true, v: true }, rotary: { base: 1000000 } }, null, hf(27)] },
  'qwen3-8b': {
    1: [{ embedDim: 4096, numHeads: 32, numKvHeads: 8, headDim: 128, valueHeadDim: 128, bias: false, qkNorm: { eps: 1e-6 }, rotary: { base: 1000000 } }, null, hf(1)],
  },
  'phi-3-mini-4k': { 0: [{ embedDim: 3072, numHeads: 32, numKvHeads: 32, bias: false, rotary: { base: 10000 } }, 2047, hf(0)] },
  // Even layers local (window 4096), odd ones global; scale query_pre_attn_scalar^-0.5.
  'gemma-2-9b': {
    0: [{ embedDim: 3584, numHeads: 16, numKvHeads: 8, headDim: 256, valueHeadDim: 256, bias: false, scale: 1 / 16, softcap: 50, rotary: { base: 10000 } }, 4096, hf(0)],
    1: [{ embedDim: 3584, numHeads: 16, numKvHeads: 8, headDim: 256, valueHeadDim: 256, bias: false, scale: 1 / 16, softcap: 50, rotary: { base: 10000 } }, null, hf(1)],
  },
  // Five local layers (window 1024, base 10 000, no scaling), then a global one (base 10^6,
  // linear ×8); defaults of Gemma3TextConfig for the fields the file leaves out.
  'gemma-3-4b': {
    4: [{ embedDim: 2560, numHeads: 8, numKvHeads: 4, headDim: 256, valueHeadDim: 256, bias: false, scale: 1 / 16, qkNorm: { eps: 1e-6 }, rotary: { base: 10000 } },
      1024, { layout: 'hf', prefix: 'language_model.model.layers.4.self_attn.' }, { qkNormWeightOffset: 1 }],
    5: [{ embedDim: 2560, numHeads: 8, numKvHeads: 4, headDim: 256, valueHeadDim: 256, bias: false, scale: 1 / 16, qkNorm: { eps: 1e-6 }, rotary: { base: 1000000, scaling: { type: 'linear', factor: 8 } } },
      null, { layout: 'hf', prefix: 'language_model.model.layers.5.self_attn.' }, { qkNormWeightOffset: 1 }],
  },
  gpt2: { 11: [{ embedDim: 768, numHeads: 12, bias: true }, null, { layout: 'gpt2', prefix: 'h.11.attn.' }] },
  'bert-base-uncased': {
    2: [{ embedDim: 768, numHeads: 12, bias: true }, null, { layout: 'bert', prefix: 'bert.encoder.layer.2.attention.' }, { causal: false }],
  },
};

for (const [name, layers] of Object.entries(TABLE)) {
  test(`${name}: each layer's options, window, causality and state-dict naming`, () => {
    const config = fixture(name);
    for (const [layer, [options, window, load, extra = {}]] of Object.entries(layers)) {
      const expected = { modelType: config.model_type, layer: Number(layer), options, window, causal: true, load, qkNormWeightOffset: 0, ...extra };
      assert.deepEqual(attentionOptionsFromConfig(config, { layer: Number(layer) }), expected, `layer ${layer}`);
    }
  });
}

test('every fixture is in the table, and the table covers every family of docs/checkpoints.md', () => {
  const files = readdirSync(configDir).map((f) => f.replace(/\.json$/, '')).sort();
  assert.deepEqual(files, [...Object.keys(TABLE), 'gpt-oss-20b'].sort());
  const types = new Set(files.map((f) => fixture(f).model_type));
  assert.deepEqual([...types].sort(), ['bert', 'gemma2', 'gemma3', 'gpt2', 'gpt_oss', 'llama', 'mistral', 'phi3', 'qwen2', 'qwen3']);
});

test('gpt-oss-20b: yarn scaling is refused by name; with the caller\'s rotary, sinks, biases and alternating windows', () => {
  const config = fixture('gpt-oss-20b');
  assert.throws(() => attentionOptionsFromConfig(config, { layer: 0 }), { name: 'OptionError', argument: 'config.rope_scaling.rope_type', message: /"yarn"/ });
  const rotary = { base: 150000 };
  const options = { embedDim: 2880, numHeads: 64, numKvHeads: 8, headDim: 64, valueHeadDim: 64, bias: true, sinks: true, rotary };
  for (const [layer, window] of [[0, 128], [1, null], [22, 128], [23, null]]) {
    assert.deepEqual(attentionOptionsFromConfig(config, { layer, rotary }),
      { modelType: 'gpt_oss', layer, options, window, causal: true, load: hf(layer), qkNormWeightOffset: 0 });
  }
});

test('Gemma 2 without layer_types and Gemma 3 with it: the same layers slide', () => {
  const gemma3 = fixture('gemma-3-4b');
  const types = Array.from({ length: 34 }, (_, i) => ((i + 1) % 6 === 0 ? 'full_attention' : 'sliding_attention'));
  const listed = { ...gemma3, text_config: { ...gemma3.text_config, layer_types: types } };
  for (let layer = 0; layer < 34; ++layer) {
    assert.deepEqual(attentionOptionsFromConfig(listed, { layer }), attentionOptionsFromConfig(gemma3, { layer }), `layer ${layer}`);
  }
  // layer_types wins over the family's rule: here every layer of Gemma 2 is global.
  const gemma2 = fixture('gemma-2-9b');
  const allFull = { ...gemma2, layer_types: Array(42).fill('full_attention') };
  assert.equal(attentionOptionsFromConfig(allFull, { layer: 0 }).window, null);
  assert.equal(attentionOptionsFromConfig(gemma2, { layer: 40 }).window, 4096);
});

test('Qwen2 with use_sliding_window: a window from max_window_layers on', () => {
  const config = { ...fixture('qwen2.5-7b'), use_sliding_window: true, sliding_window: 4096, max_window_layers: 20 };
  assert.equal(attentionOptionsFromConfig(config, { layer: 19 }).window, null);
  assert.equal(attentionOptionsFromConfig(config, { layer: 20 }).window, 4096);
});

test('GPT-2\'s scale flags and partial_rotary_factor become scale and rotary.dim', () => {
  const gpt2 = fixture('gpt2');
  assert.equal(attentionOptionsFromConfig({ ...gpt2, scale_attn_weights: false }, { layer: 0 }).options.scale, 1);
  assert.equal(attentionOptionsFromConfig({ ...gpt2, scale_attn_by_inverse_layer_idx: true }, { layer: 3 }).options.scale, 1 / (8 * 4));
  const phi = { ...fixture('phi-3-mini-4k'), partial_rotary_factor: 0.75 };
  assert.deepEqual(attentionOptionsFromConfig(phi, { layer: 0 }).options.rotary, { base: 10000, dim: 72 });
});

// Small configs of a family whose create() options are those of a checkpoint fixture
// (tests/fixtures/checkpoints/): the fromConfig() module loads the file under its own layout and
// prefix, with no loadStateDict() options but `strict`, and matches the float64 outputs.
const SMALL = {
  gpt2_conv1d: [{ model_type: 'gpt2', n_embd: 16, n_head: 4, n_layer: 1 }, 0],
  bert: [{ model_type: 'bert', hidden_size: 16, num_attention_heads: 2, num_hidden_layers: 1 }, 0],
  qwen3_qk_norm_rope: [{
    model_type: 'qwen3', hidden_size: 16, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 4, num_hidden_layers: 3,
    rope_theta: 10000, rms_norm_eps: 1e-6,
  }, 2],
};
const checkpoints = new URL('../fixtures/checkpoints/', import.meta.url);
const { cases } = JSON.parse(readFileSync(new URL('checkpoints.json', checkpoints), 'utf8'));

for (const [name, [config, layer]] of Object.entries(SMALL)) {
  test(`fromConfig(${config.model_type}) loads ${name}.safetensors under its checkpoint naming and matches float64`, async () => {
    const c = cases.find((k) => k.name === name);
    const mapped = attentionOptionsFromConfig(config, { layer });
    assert.deepEqual(resolveMhaConfig(mapped.options), resolveMhaConfig(decodeCreate(c.create)));
    assert.deepEqual(mapped.load, { layout: c.load.layout, prefix: c.load.prefix });
    let made;
    const shim = { ...api, MultiHeadAttention: { create: async () => (made = await MultiHeadAttention.fromConfig(config, { layer, threads: 1 })) } };
    const result = await runCheckpointCase(shim, { ...c, load: { strict: c.load.strict } }, readFileSync(new URL(c.file, checkpoints)));
    try {
      for (const pass of ['full', 'causal', 'cached', 'cacheKey', 'cacheValue']) assert.ok(result[pass].ok, `${pass}: ${result[pass].detail}`);
      assert.deepEqual(made.checkpoint, {
        modelType: config.model_type, layer, window: null, causal: mapped.causal, ...mapped.load, qkNormWeightOffset: 0,
      });
    } finally {
      made.dispose();
    }
  });
}

test('fromConfig(): the module\'s config is create()\'s, its loadStateDict() options override the checkpoint\'s', async () => {
  const config = { ...fixture('gemma-3-4b') };
  config.text_config = { ...config.text_config, hidden_size: 32, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8 };
  const mha = await MultiHeadAttention.fromConfig(config, { layer: 5, threads: 1, weightsDtype: 'float16' });
  const reference = await MultiHeadAttention.create({ ...attentionOptionsFromConfig(config, { layer: 5 }).options, threads: 1, weightsDtype: 'float16' });
  try {
    assert.deepEqual(mha.config, reference.config);
    assert.equal(mha.config.rotary.scaling.type, 'linear');
    assert.equal(mha.checkpoint.prefix, 'language_model.model.layers.5.self_attn.');
    assert.equal(reference.checkpoint, null);
    // The call's layout replaces the checkpoint's: 'torch' names in_proj_weight, not q_proj.
    assert.throws(() => mha.loadStateDict({}, { layout: 'torch' }), { name: 'StateDictError', message: /in_proj_weight|q_proj_weight/ });
    assert.throws(() => mha.loadStateDict({}), { name: 'StateDictError', message: /language_model\.model\.layers\.5\.self_attn\.q_proj\.weight/ });
  } finally {
    mha.dispose();
    reference.dispose();
  }
});

test('a Gemma 3 fromConfig() module adds 1 to the file\'s q_norm/k_norm weights (stored as w − 1), not to the caller\'s arrays', async () => {
  const config = { ...fixture('gemma-3-4b') };
  config.text_config = { ...config.text_config, hidden_size: 32, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8 };
  const { options, load } = attentionOptionsFromConfig(config, { layer: 0 });
  const mha = await MultiHeadAttention.fromConfig(config, { layer: 0, threads: 1 });
  const reference = await MultiHeadAttention.create({ ...options, threads: 1 });
  try {
    const next = rng(38);
    const shapes = { q_proj: [32, 32], k_proj: [16, 32], v_proj: [16, 32], o_proj: [32, 32], q_norm: [8], k_norm: [8] };
    const file = Object.fromEntries(Object.entries(shapes).map(([name, shape]) => [`${load.prefix}${name}.weight`, randomTensor(shape, next)]));
    const stored = file[`${load.prefix}q_norm.weight`].data.slice();
    mha.loadStateDict(file);
    assert.deepEqual(file[`${load.prefix}q_norm.weight`].data, stored, 'the caller\'s array is unchanged');
    const plusOne = (t) => ({ data: t.data.map((w) => w + 1), shape: t.shape });
    reference.loadStateDict({
      ...file, [`${load.prefix}q_norm.weight`]: plusOne(file[`${load.prefix}q_norm.weight`]),
      [`${load.prefix}k_norm.weight`]: plusOne(file[`${load.prefix}k_norm.weight`]),
    }, load);
    const x = randomTensor([1, 5, 32], next);
    const [ours, expected] = await Promise.all([mha.forward(x, x, x, { isCausal: true }), reference.forward(x, x, x, { isCausal: true })]);
    assert.deepEqual(ours.output.data, expected.output.data);
  } finally {
    mha.dispose();
    reference.dispose();
  }
});

// Hostile configs: each an OptionError whose argument names the config field (or fromConfig's
// own option) that is wrong.
const llama = fixture('llama-3.1-8b');
const HOSTILE = [
  ['an unknown model_type', { ...llama, model_type: 'llama4' }, { layer: 0 }, 'config.model_type'],
  ['no model_type', { hidden_size: 16 }, { layer: 0 }, 'config.model_type'],
  ['dynamic rope scaling', { ...llama, rope_scaling: { type: 'dynamic', factor: 2 } }, { layer: 0 }, 'config.rope_scaling.type'],
  ['longrope on Phi-3', { ...fixture('phi-3-mini-4k'), rope_scaling: { type: 'longrope', long_factor: [1], short_factor: [1] } }, { layer: 0 }, 'config.rope_scaling.type'],
  ['type and rope_type in conflict', { ...llama, rope_scaling: { ...llama.rope_scaling, type: 'linear' } }, { layer: 0 }, 'config.rope_scaling.type'],
  ['llama3 scaling without its factors', { ...llama, rope_scaling: { rope_type: 'llama3', factor: 8 } }, { layer: 0 }, 'config.rope_scaling.low_freq_factor'],
  ['layer past num_hidden_layers', llama, { layer: 32 }, 'layer'],
  ['a negative layer', llama, { layer: -1 }, 'layer'],
  ['a non-integer layer', llama, { layer: 1.5 }, 'layer'],
  ['a layer as a string', llama, { layer: '0' }, 'layer'],
  ['no layer', llama, undefined, 'layer'],
  ['an unknown fromConfig option', llama, { layer: 0, window: 4 }, 'window'],
  ['missing hidden_size', { ...llama, hidden_size: undefined }, { layer: 0 }, 'config.hidden_size'],
  ['missing num_hidden_layers', { ...llama, num_hidden_layers: undefined }, { layer: 0 }, 'config.num_hidden_layers'],
  ['a string hidden size', { ...llama, hidden_size: '4096' }, { layer: 0 }, 'config.hidden_size'],
  ['heads that do not divide hidden_size', { ...llama, num_attention_heads: 30 }, { layer: 0 }, 'config.hidden_size'],
  ['kv heads that do not divide the heads', { ...llama, num_key_value_heads: 5 }, { layer: 0 }, 'config.num_key_value_heads'],
  ['a rope_theta of 0', { ...llama, rope_theta: 0 }, { layer: 0 }, 'config.rope_theta'],
  ['sliding_window on Llama (not read there)', { ...llama, sliding_window: 4096 }, { layer: 0 }, 'config.sliding_window'],
  ['softcapping on Llama', { ...llama, attn_logit_softcapping: 30 }, { layer: 0 }, 'config.attn_logit_softcapping'],
  ['chunked attention (Llama 4)', { ...llama, attention_chunk_size: 8192 }, { layer: 0 }, 'config.attention_chunk_size'],
  ['transformers 5 rope_parameters', { ...llama, rope_parameters: { rope_type: 'default', rope_theta: 10000 } }, { layer: 0 }, 'config.rope_parameters'],
  ['layer_types of the wrong length', { ...fixture('gpt-oss-20b'), layer_types: ['full_attention'] }, { layer: 0, rotary: {} }, 'config.layer_types'],
  ['an unknown layer type', { ...fixture('gemma-2-9b'), layer_types: Array(42).fill('chunked_attention') }, { layer: 3 }, 'config.layer_types[3]'],
  ['a sliding layer without a window', { ...fixture('gemma-2-9b'), sliding_window: null }, { layer: 0 }, 'config.sliding_window'],
  ['use_sliding_window not a boolean', { ...fixture('qwen3-8b'), use_sliding_window: 'yes', sliding_window: 4096 }, { layer: 0 }, 'config.use_sliding_window'],
  ['relative position scores in BERT', { ...fixture('bert-base-uncased'), position_embedding_type: 'relative_key' }, { layer: 0 }, 'config.position_embedding_type'],
  ['BERT as a decoder', { ...fixture('bert-base-uncased'), is_decoder: true }, { layer: 0 }, 'config.is_decoder'],
  ['Gemma 3 without text_config', { model_type: 'gemma3' }, { layer: 0 }, 'config.text_config'],
  ['Gemma 3 text_config of another model', { model_type: 'gemma3', text_config: { ...fixture('gemma-3-4b').text_config, model_type: 'llama' } }, { layer: 0 }, 'config.text_config.model_type'],
  ['Gemma 3 query_pre_attn_scalar negative', { model_type: 'gemma3', text_config: { ...fixture('gemma-3-4b').text_config, query_pre_attn_scalar: -1 } }, { layer: 0 }, 'config.text_config.query_pre_attn_scalar'],
  ['a non-string prefix', llama, { layer: 0, prefix: 3 }, 'prefix'],
  // Values only create()'s checks refuse, named by the field they came from.
  ['a rope_theta of 1 (rising frequencies)', { ...llama, rope_theta: 1 }, { layer: 0 }, 'config.rope_theta'],
  ['a Gemma 3 local base of 1', { model_type: 'gemma3', text_config: { ...fixture('gemma-3-4b').text_config, rope_local_base_freq: 1 } }, { layer: 0 }, 'config.text_config.rope_local_base_freq'],
  ['llama3 factors out of order', { ...llama, rope_scaling: { ...llama.rope_scaling, high_freq_factor: 0.5 } }, { layer: 0 }, 'config.rope_scaling'],
  ['an rms_norm_eps float32 cannot hold', { ...fixture('qwen3-8b'), rms_norm_eps: 1e-50 }, { layer: 0 }, 'config.rms_norm_eps'],
  ['the caller\'s rotary, wrong', llama, { layer: 0, rotary: { base: 0.5 } }, 'rotary.base'],
];

test('hostile configs and options: an OptionError naming the field, before any WASM', async () => {
  for (const [what, config, options, argument] of HOSTILE) {
    assert.throws(() => attentionOptionsFromConfig(config, options), (e) => e instanceof OptionError && e.argument === argument
      && e.message.includes(argument.replace(/^config\./, '')), what);
    await assert.rejects(() => MultiHeadAttention.fromConfig(config, options), (e) => e instanceof OptionError && e.argument === argument, what);
  }
  for (const config of [null, undefined, 'llama', [llama]]) {
    assert.throws(() => attentionOptionsFromConfig(config, { layer: 0 }), { name: 'OptionError', argument: 'config' });
  }
  // create()'s own options beside the config are still checked.
  await assert.rejects(() => MultiHeadAttention.fromConfig(llama, { layer: 0, embedDim: 8 }), { name: 'OptionError', argument: 'embedDim' });
  await assert.rejects(() => MultiHeadAttention.fromConfig(llama, { layer: 0, threads: 0 }), { name: 'OptionError', argument: 'threads' });
});
