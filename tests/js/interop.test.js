// Tensors as other libraries make them ({ data, dims, type }: onnxruntime-web, transformers.js),
// the one name of the weights flag (needWeights; selfAttention's old returnWeights still works,
// with one deprecation warning), configure()'s checks, and what the package entry exports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { DTypeError, MultiHeadAttention, OptionError, ShapeError, configure, scaledDotProductAttention, selfAttention } from '#webattention';
import { randomTensor, rng } from '../contract/contract.mjs';
import * as errors from '../../web/src/base/errors.js';

/** console.warn's messages while `body` runs. */
async function warnings(body) {
  const seen = [];
  const saved = console.warn;
  console.warn = (message) => seen.push(String(message));
  try {
    await body();
  } finally {
    console.warn = saved;
  }
  return seen;
}

// First in this file: the module must not be loaded yet.
test('configure() checks its options and refuses changes once the module is loaded', async () => {
  assert.throws(() => configure({ wasmPath: '/x/' }), (e) => e instanceof OptionError && /unknown option 'wasmPath'; expected one of wasmPaths/.test(e.message));
  assert.throws(() => configure({ wasmPaths: 42 }), (e) => e instanceof OptionError && e.argument === 'wasmPaths');
  assert.throws(() => configure({ wasmPaths: { 'webattention_core.wsam': '/a.wasm' } }),
    (e) => e instanceof OptionError && /unknown file 'webattention_core\.wsam'; expected one of .*webattention_core\.wasm/.test(e.message));
  assert.throws(() => configure('/x/'), OptionError);
  configure({ wasmPaths: { 'webattention_core.wasm': '/a.wasm', 'pool_worker_simd.js': '/w.js' } });
  configure({ wasmPaths: null });
  await api.ready();
  configure({ wasmPaths: null });  // unchanged: fine
  assert.throws(() => configure({ wasmPaths: '/elsewhere/' }), (e) => e instanceof OptionError && /before the first create\(\) or call/.test(e.message));
});

test('{ data, dims, type } tensors give the same results as { data, shape } ones, masks included', async () => {
  const next = rng(7);
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, threads: 1 });
  try {
    mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => {
      const t = randomTensor(shape, next);
      return [name, { data: t.data, dims: t.shape, type: 'float32' }];  // the state dict too
    })));
    const x = randomTensor([2, 3, 8], next);
    const mask = { data: new Uint8Array([0, 0, 1, 0, 1, 1]), shape: [2, 3] };
    const dims = (t, type) => ({ data: t.data, dims: Object.freeze([...t.shape]), type });
    const expected = await mha.forward(x, x, x, { keyPaddingMask: mask, needWeights: true });
    const got = await mha.forward(dims(x, 'float32'), dims(x), dims(x), { keyPaddingMask: dims(mask, 'bool'), needWeights: true });
    assert.deepEqual(got, expected);
    const sdpa = await scaledDotProductAttention(dims(x), dims(x), dims(x), { attnMask: dims({ data: new Float32Array(9), shape: [3, 3] }, 'float32') });
    assert.deepEqual(sdpa, await scaledDotProductAttention(x, x, x, { attnMask: { data: new Float32Array(9), shape: [3, 3] } }));
  } finally {
    mha.dispose();
  }
});

test('a { data, dims } tensor whose type is not its data\'s is a DTypeError naming .type; bad dims a ShapeError naming .dims', async () => {
  const x = { data: new Float32Array(6), dims: [3, 2] };
  await assert.rejects(() => selfAttention({ ...x, type: 'int64' }), (e) => e instanceof DTypeError
    && e.argument === 'x' && /x\.type: expected 'float32' \(with Float32Array data\), got string "int64"/.test(e.message));
  await assert.rejects(() => scaledDotProductAttention(x, x, x, { attnMask: { data: new Uint8Array(9), dims: [3, 3], type: 'float32' } }),
    (e) => e instanceof DTypeError && /attnMask\.type: expected 'bool' or 'uint8' or 'float32'/.test(e.message));
  await assert.rejects(() => selfAttention({ data: x.data, dims: [3, 0] }), (e) => e instanceof ShapeError && /x\.dims: expected an array of integers >= 1/.test(e.message));
  await assert.rejects(() => selfAttention({ data: x.data }), (e) => e instanceof DTypeError && /or \{ data, dims \}/.test(e.message));
});

test('selfAttention takes needWeights; returnWeights still works with one deprecation warning; not both', async () => {
  const x = randomTensor([4, 3], rng(3));
  const seen = await warnings(async () => {
    const now = await selfAttention(x, { needWeights: true });
    assert.deepEqual(now.attnWeights.shape, [4, 4]);
    assert.equal((await selfAttention(x)).attnWeights, null);
    assert.deepEqual(await selfAttention(x, { returnWeights: true }), now);
    await selfAttention(x, { returnWeights: true });
  });
  assert.equal(seen.filter((m) => /returnWeights \}\) is deprecated; say needWeights/.test(m)).length, 1, seen.join('\n'));
  await assert.rejects(() => selfAttention(x, { needWeights: true, returnWeights: true }), OptionError);
});

test('the package entry exports the API and every error class (public_errors.js), not errors.js\'s helpers', () => {
  for (const name of ['configure', 'LoadError', 'WebAttentionError', 'ShapeError', 'DTypeError', 'BackendError']) assert.equal(typeof api[name], 'function', name);
  // A class added to errors.js must be added to public_errors.js too.
  for (const [name, value] of Object.entries(errors)) {
    if (value === errors.WebAttentionError || value?.prototype instanceof errors.WebAttentionError) assert.equal(api[name], value, name);
  }
  for (const name of ['formatShape', 'throwCoreError', 'describe', 'errorToData', 'errorFromData']) assert.equal(api[name], undefined, name);
});
