// MultiHeadAttention.fromGguf() and loadStateDict(file, { layout: 'gguf' }) on GGUF files that
// scripts/write_gguf.mjs writes in llama.cpp's own layout (F32, F16, Q8_0, Q4_0; its Q/K rows
// permuted as llama.cpp's converter permutes them). The reference is independent of that
// layout: the float64 layer on the weights as stored, in Hugging Face's row order, with Hugging
// Face's rotary pairs (i, i + d/2); the module reads the rows as stored, with the pairing fromGguf
// chose. The weights read back bit for bit; metadata fromGguf cannot honour is an OptionError.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DTypeError, MultiHeadAttention, OptionError, StateDictError, loadGguf } from '#webattention';
import { WasmExecutor, coreConfig, resolveModuleStateDict } from '../internals.mjs';
import { compare, randomTensor, rng } from '../contract/contract.mjs';
import { layerReference } from '../contract/layer_reference.mjs';
import { llamaModel, permuteRows } from '../../scripts/write_gguf.mjs';
import { llamaGguf } from '../fixtures/make_gguf.mjs';
import { loadNodeCore } from '../../web/src/node_core.js';
import { pickVariant } from '../../web/src/wasm/variant.js';

const { core } = await loadNodeCore(pickVariant());
const SIZES = { embed: 64, heads: 4, kvHeads: 2, layers: 2, ropeBase: 5000 };
const WEIGHTS_DTYPE = { F32: 'float32', F16: 'float16', Q8_0: 'int8', Q4_0: 'int4' };

/** `file` with metadata key `key` set to `value` (undefined: removed) and tensors `extra` added. */
function edited(file, key, value, extra = []) {
  const copy = new Map([...file, ...extra]);
  const metadata = new Map(file.metadata);
  if (value === undefined) metadata.delete(key);
  else metadata.set(key, value);
  return Object.defineProperty(copy, 'metadata', { value: metadata });
}

/** The module's weights as its WASM core stores them, loaded from the file's layer. */
function storedWeights(config, file, prefix) {
  const executor = new WasmExecutor(core, config, coreConfig(config));
  try {
    executor.loadStateDict(resolveModuleStateDict(executor.parameterSpecs(), file, { layout: 'gguf', prefix }, config.weightsDtype));
    return Object.fromEntries(executor.readStateDict().map(({ name, data }) => [name, data]));
  } finally {
    executor.dispose();
  }
}

for (const type of ['F32', 'F16', 'Q8_0', 'Q4_0']) {
  test(`fromGguf on a ${type} llama file: options from the metadata, weights as stored, forward against the float64 reference`, async () => {
    const { bytes, layers } = llamaModel({ ...SIZES, type });
    const file = loadGguf(bytes);
    const mha = await MultiHeadAttention.fromGguf(file, { layer: 1 });
    try {
      const { config } = mha;
      assert.deepEqual([config.embedDim, config.numHeads, config.numKvHeads, config.headDim, config.weightsDtype], [64, 4, 2, 16, WEIGHTS_DTYPE[type]]);
      assert.deepEqual({ ...config.rotary, table: undefined }, { base: 5000, dim: 16, interleaved: true, scaling: null, table: undefined });
      assert.deepEqual(mha.checkpoint, { modelType: 'llama', layer: 1, window: null, causal: true, layout: 'gguf', prefix: 'blk.1.', qkNormWeightOffset: 0 });
      const w = layers[1];
      // Bit for bit: the layer's values as stored, in the file's (llama.cpp's) row order.
      const stored = storedWeights(config, file, 'blk.1.');
      const expected = { q_proj_weight: permuteRows(w.q, 4, 64), k_proj_weight: permuteRows(w.k, 2, 64), v_proj_weight: w.v, 'out_proj.weight': w.out };
      for (const [name, values] of Object.entries(expected)) {
        assert.ok(stored[name].every((v, i) => Object.is(v, Math.fround(values[i])) && values[i] === v), `${name} not as stored`);
      }
      const x = randomTensor([2, 7, 64], rng(5));
      const { output } = await mha.forward(x, x, x, { isCausal: true });
      const hf = (interleaved) => layerReference({ embedDim: 64, numHeads: 4, numKvHeads: 2, rotary: { dim: 16, base: 5000, interleaved } }, w, x, { causal: true });
      const c = compare(output, { data: hf(false), shape: output.shape });
      assert.ok(c.ok, c.detail);
      // The pairing matters: Hugging Face's rows with adjacent pairs are another layer.
      assert.ok(!compare(output, { data: hf(true), shape: output.shape }).ok, 'the reference does not tell the rotary pairings apart');
    } finally {
      mha.dispose();
    }
  });
}

test("loadStateDict(file, { layout: 'gguf', prefix }) takes a GgufFile whole: the rest of the model passed over, an unknown attn_ key refused", async () => {
  const { bytes, layers } = llamaModel({ ...SIZES, type: 'F32', layers: 1 });
  const file = loadGguf(bytes);
  const create = { embedDim: 64, numHeads: 4, numKvHeads: 2, bias: false, rotary: { dim: 16, base: 5000, interleaved: true } };
  const mha = await MultiHeadAttention.create(create);
  try {
    mha.loadStateDict(file, { layout: 'gguf', prefix: 'blk.0.' });
    const x = randomTensor([1, 4, 64], rng(6));
    const { output } = await mha.forward(x, x, x);
    const c = compare(output, { data: layerReference({ ...create, rotary: { ...create.rotary, interleaved: false } }, layers[0], x), shape: output.shape });
    assert.ok(c.ok, c.detail);
    const odd = new Map([...file, ['blk.0.attn_foo.weight', file.get('blk.0.attn_q.weight')]]);
    assert.throws(() => mha.loadStateDict(odd, { layout: 'gguf', prefix: 'blk.0.' }), { name: 'StateDictError', argument: 'blk.0.attn_foo.weight' });
    assert.throws(() => mha.loadStateDict(file, { layout: 'gguf', prefix: 'blk.1.' }), { name: 'StateDictError', message: /missing key 'blk\.1\.attn_q\.weight'/ });
    assert.deepEqual((await mha.forward(x, x, x)).output.data, output.data);
  } finally {
    mha.dispose();
  }
  // Q4_0 blocks of a GGUF need an int4 module.
  const q4 = loadGguf(llamaModel({ ...SIZES, type: 'Q4_0', layers: 1 }).bytes);
  const f32 = await MultiHeadAttention.create(create);
  try {
    assert.throws(() => f32.loadStateDict(q4, { layout: 'gguf', prefix: 'blk.0.' }), (e) => e instanceof DTypeError && /weightsDtype 'int4'/.test(e.message));
  } finally {
    f32.dispose();
  }
});

test('fromGguf refuses what it cannot honour, naming the key, tensor or option', async () => {
  const file = loadGguf(llamaModel({ ...SIZES, type: 'Q8_0', layers: 1 }).bytes);
  const refusals = [
    [edited(file, 'general.architecture', 'gemma2'), {}, 'general.architecture', /one of 'llama', 'qwen2', 'qwen3'/],
    [edited(file, 'llama.attention.sliding_window', 128), {}, 'llama.attention.sliding_window', /changes attention/],
    [edited(file, 'llama.rope.scaling.type', 'yarn'), {}, 'llama.rope.scaling.type', /'none' or 'linear'/],
    [edited(file, 'llama.attention.head_count', undefined), {}, 'llama.attention.head_count', /the key is missing/],
    [edited(file, 'llama.attention.head_count', 0), {}, 'llama.attention.head_count', /an integer >= 1/],
    [edited(file, 'x', 1, [['rope_freqs.weight', { data: new Float32Array(8), shape: [8] }]]), {}, 'rope_freqs.weight', /per-frequency/],
    [file, { layer: 1 }, 'layer', /\[0, 1\)/],
    [file, { layer: 0, heads: 2 }, 'heads', /./],
    [new Map(), { layer: 0 }, 'file', /GgufFile/],
    [loadGguf(llamaGguf().bytes), { layer: 0 }, 'weightsDtype', /blk\.0\.attn_q\.weight int4, blk\.0\.attn_k\.weight int8/],
  ];
  for (const [f, options, argument, message] of refusals) {
    await assert.rejects(MultiHeadAttention.fromGguf(f, { layer: 0, ...options }), (e) => {
      assert.ok(e instanceof OptionError, `${argument}: ${e.name}: ${e.message}`);
      assert.equal(e.argument, argument);
      assert.match(e.message, message);
      return true;
    });
  }
  // Linear RoPE scaling is computed: taken.
  const linear = await MultiHeadAttention.fromGguf(edited(edited(file, 'llama.rope.scaling.type', 'linear'), 'llama.rope.scaling.factor', 2), { layer: 0 });
  assert.deepEqual(linear.config.rotary.scaling, { type: 'linear', factor: 2 });
  linear.dispose();
  assert.ok(StateDictError);
});

test('fromGguf on qwen2 / qwen3 files: biases and qk-norm from the layer\'s tensors, rows as stored with NeoX pairs', async () => {
  const { bytes } = llamaModel({ ...SIZES, type: 'F32', layers: 1 });
  const llama = loadGguf(bytes);
  const next = rng(8);
  for (const arch of ['qwen2', 'qwen3']) {
    const extra = arch === 'qwen2'
      ? [['blk.0.attn_q.bias', randomTensor([64], next)], ['blk.0.attn_k.bias', randomTensor([32], next)], ['blk.0.attn_v.bias', randomTensor([32], next)]]
      : [['blk.0.attn_q_norm.weight', randomTensor([16], next)], ['blk.0.attn_k_norm.weight', randomTensor([16], next)]];
    const file = Object.defineProperty(new Map([...llama, ...extra]), 'metadata', {
      value: new Map([...llama.metadata].map(([key, value]) => [key === 'general.architecture' ? key : key.replace(/^llama\./, `${arch}.`), key === 'general.architecture' ? arch : value])),
    });
    const mha = await MultiHeadAttention.fromGguf(file, { layer: 0 });
    try {
      const { config } = mha;
      assert.equal(config.rotary.interleaved, false);
      const w = Object.fromEntries(['q', 'k', 'v', 'out'].map((p) => [p, file.get(`blk.0.attn_${p === 'out' ? 'output' : p}.weight`).data]));
      const x = randomTensor([1, 5, 64], next);
      const { output } = await mha.forward(x, x, x, { isCausal: true });
      const layer = { embedDim: 64, numHeads: 4, numKvHeads: 2, rotary: { dim: 16, base: 5000, interleaved: false } };
      let expected;
      if (arch === 'qwen2') {
        assert.deepEqual(config.bias, { q: true, k: true, v: true, out: false });
        expected = layerReference(layer, { ...w, qBias: extra[0][1].data, kBias: extra[1][1].data, vBias: extra[2][1].data }, x, { causal: true });
      } else {
        assert.deepEqual(config.qkNorm, { eps: Math.fround(1e-5) });
        expected = layerReference({ ...layer, qkNorm: config.qkNorm }, { ...w, qNorm: extra[0][1].data, kNorm: extra[1][1].data }, x, { causal: true });
      }
      const c = compare(output, { data: expected, shape: output.shape });
      assert.ok(c.ok, `${arch}: ${c.detail}`);
    } finally {
      mha.dispose();
    }
  }
});
