// The KV cache, grouped-query attention and rotary options used wrongly (issue contract): each
// misuse is a typed error naming the argument, leaves the cache as it was, and the next valid call
// works. Parity itself is in the fixtures (decode_parity.json, run by parity.test.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MultiHeadAttention, wasmMemoryInUse, KvCache,
  BackendError, CacheError, DisposedError, MemoryError, OptionError, ShapeError,
} from '#webattention';
import { filled, randomTensor, rng } from '../contract/contract.mjs';
import { MAX_CACHE_POSITIONS } from '../internals.mjs';

const E = 16;
const next = rng(7);
const tokens = (n, B = 1) => randomTensor([B, n, E], next);

async function module(options = {}) {
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 4, numKvHeads: 2, rotary: {}, threads: 1, ...options });
  const sd = {};
  for (const { name, shape } of mha.stateDictShapes) sd[name] = randomTensor(shape, next);
  mha.loadStateDict(sd);
  return mha;
}

const step = (mha, cache, x, options = {}) => mha.forward(x, x, x, { cache, ...options });

test('create: numKvHeads must divide numHeads; rotary.dim even and <= headDim; unknown rotary keys', async () => {
  const bad = [
    [{ numKvHeads: 3 }, 'numKvHeads', /divisor of numHeads \(4\), got 3/],
    [{ numKvHeads: 0 }, 'numKvHeads', /integer >= 1/],
    [{ rotary: { dim: 3 } }, 'rotary.dim', /even integer <= headDim \(4\), got 3/],
    [{ rotary: { dim: 6 } }, 'rotary.dim', /got 6/],
    [{ rotary: { base: -1 } }, 'rotary.base', /finite number > 1/],
    [{ rotary: { base: 1e-320 } }, 'rotary.base', /finite number > 1, got number 1e-320/],
    [{ rotary: { base: 1 } }, 'rotary.base', /finite number > 1/],
    [{ rotary: { scaling: { type: 'yarn', factor: 2 } } }, 'rotary.scaling.type', /'linear', 'llama3', got string "?yarn/],
    [{ rotary: { scaling: null } }, 'rotary.scaling.type', /got null/],
    [{ rotary: { scaling: { type: 'linear' } } }, 'rotary.scaling.factor', /finite number > 0/],
    [{ rotary: { scaling: { type: 'linear', factor: 2, originalMaxPositions: 8 } } }, 'rotary.scaling.originalMaxPositions', /only 'llama3'/],
    [{ rotary: { scaling: { type: 'llama3', factor: 8, lowFreqFactor: 4, highFreqFactor: 4 } } }, 'rotary.scaling.highFreqFactor', /> lowFreqFactor \(4\)/],
    [{ rotary: { scaling: { type: 'llama3', factor: 8, originalMaxPositions: 0.5 } } }, 'rotary.scaling.originalMaxPositions', /integer >= 1/],
    [{ rotary: { base: Infinity } }, 'rotary.base', /finite number > 1/],
    [{ rotary: { table: { cos: { data: new Float32Array(9), shape: [3, 3] }, sin: { data: new Float32Array(9), shape: [3, 3] } } } },
      'rotary.table.cos', /\[positions >= 1, a width in \[1, headDim \/ 2 = 2\]\], got \[3, 3\]/],
    [{ rotary: { table: { cos: { data: new Float32Array(6), shape: [3, 2] }, sin: { data: new Float32Array(4), shape: [2, 2] } } } },
      'rotary.table.sin', /cos's shape \[3, 2\], got \[2, 2\]/],
    [{ rotary: { base: 500, table: { cos: { data: new Float32Array(6), shape: [3, 2] }, sin: { data: new Float32Array(6), shape: [3, 2] } } } },
      'rotary.base', /not with rotary.table/],
    [{ rotary: { interleave: true } }, 'interleave', /unknown option 'interleave'/],
    [{ rotary: null }, 'rotary', /got null/],
  ];
  for (const [options, argument, message] of bad) {
    await assert.rejects(() => MultiHeadAttention.create({ embedDim: E, numHeads: 4, ...options }),
      (e) => e instanceof OptionError && e.argument === argument && message.test(e.message), JSON.stringify(options));
  }
});

test('GQA state dict: fewer K/V rows; the resolved config reports numKvHeads and rotary', async () => {
  const mha = await module();
  assert.deepEqual(mha.stateDictShapes.map((s) => [s.name, s.shape]), [
    ['q_proj_weight', [16, 16]], ['k_proj_weight', [8, 16]], ['v_proj_weight', [8, 16]],
    ['in_proj_bias', [32]], ['out_proj.weight', [16, 16]], ['out_proj.bias', [16]],
  ]);
  assert.equal(mha.config.numKvHeads, 2);
  assert.deepEqual(mha.config.rotary, { base: 10000, interleaved: false, dim: 4, scaling: null, table: null });
  assert.throws(() => mha.headBilinearForm(0), (e) => e instanceof OptionError && /rotary/.test(e.message));
  mha.dispose();
});

test('createCache options are checked', async () => {
  const mha = await module();
  for (const [options, argument] of [
    [{}, 'maxLength'], [{ maxLength: 0 }, 'maxLength'], [{ maxLength: 8, batchSize: 0 }, 'batchSize'],
    [{ window: 0 }, 'window'], [{ maxLength: 8, size: 3 }, 'size'], [{ maxLength: 2 ** 31 }, 'maxLength'],
  ]) {
    assert.throws(() => mha.createCache(options), (e) => e instanceof OptionError && e.argument === argument, JSON.stringify(options));
  }
  const cache = mha.createCache({ window: 4 });
  assert.ok(cache instanceof KvCache);
  assert.deepEqual([cache.length, cache.maxLength, cache.window, cache.batchSize], [0, 0, 4, 1]);
  mha.dispose();
});

test('a cache that does not fit the heap is a MemoryError, and the module carries on', async () => {
  const mha = await module();
  const before = await wasmMemoryInUse();
  assert.throws(() => mha.createCache({ maxLength: MAX_CACHE_POSITIONS, batchSize: 64 }), MemoryError);
  assert.equal(await wasmMemoryInUse(), before);
  const cache = mha.createCache({ maxLength: 4 });
  await step(mha, cache, tokens(2));
  assert.equal(cache.length, 2);
  mha.dispose();
});

test('appending past maxLength: CacheError, the cache unchanged, the next step works', async () => {
  const mha = await module();
  const cache = mha.createCache({ maxLength: 5 });
  await step(mha, cache, tokens(4));
  await assert.rejects(() => step(mha, cache, tokens(2)),
    (e) => e instanceof CacheError && e.argument === 'cache' && /appending 2 positions to length 4 would pass maxLength 5/.test(e.message));
  assert.equal(cache.length, 4);
  const { output } = await step(mha, cache, tokens(1));
  assert.deepEqual(output.shape, [1, 1, E]);
  assert.equal(cache.length, 5);
  cache.reset();
  assert.equal(cache.length, 0);
  await step(mha, cache, tokens(5));
  mha.dispose();
});

test('bad calls with a cache are typed errors that leave it as it was', async () => {
  const mha = await module();
  const cache = mha.createCache({ maxLength: 16, batchSize: 2 });
  await step(mha, cache, tokens(3, 2));
  const x = tokens(2, 2);
  const cases = [
    [() => step(mha, cache, tokens(2, 1)), ShapeError, 'query', /batch 2 \(the cache's batchSize\), got 1/],
    [() => mha.forward(x, tokens(3, 2), tokens(3, 2), { cache }), ShapeError, 'key', /L = 2 new positions, got S = 3/],
    [() => step(mha, cache, x, { attnMask: { data: new Uint8Array(2 * 5), shape: [2, 5] } }), ShapeError, 'attnMask', /\[2, 2\], \[2, 2, 2\] or \[\d+, 2, 2\] \(among the 2 new positions, with a cache\), got \[2, 5\]/],
    [() => step(mha, cache, x, { keyPaddingMask: { data: new Uint8Array(2 * 2), shape: [2, 2] } }), ShapeError, 'keyPaddingMask', /\[2, 5\]/],
    [() => step(mha, cache, x, { cache: {} }), OptionError, 'cache', /KvCache/],
  ];
  for (const [call, Class, argument, message] of cases) {
    await assert.rejects(call, (e) => e instanceof Class && e.argument === argument && message.test(e.message));
    assert.equal(cache.length, 3);
  }
  const { output, attnWeights } = await step(mha, cache, x, { needWeights: true, keyPaddingMask: { data: new Uint8Array(2 * 5), shape: [2, 5] } });
  assert.deepEqual([output.shape, attnWeights.shape], [[2, 2, E], [2, 2, 5]]);
  mha.dispose();
});

test('a cache belongs to its module: another module, its dispose() or the module\'s dispose() are typed errors', async () => {
  const a = await module();
  const b = await module();
  const cache = a.createCache({ maxLength: 8 });
  await assert.rejects(() => step(b, cache, tokens(1)), (e) => e instanceof CacheError && /another module/.test(e.message));
  assert.equal(cache.length, 0);
  await step(b, b.createCache({ maxLength: 8 }), tokens(1));  // b still works

  const own = a.createCache({ maxLength: 8 });
  own.dispose();
  own.dispose();  // twice is harmless
  await assert.rejects(() => step(a, own, tokens(1)), (e) => e instanceof DisposedError && e.argument === 'cache' && /the cache was disposed/.test(e.message));
  assert.throws(() => own.length, DisposedError);

  a.dispose();
  assert.throws(() => cache.reset(), (e) => e instanceof DisposedError && /its module was disposed/.test(e.message));
  await assert.rejects(() => step(a, cache, tokens(1)), DisposedError);
  b.dispose();
});

test('memory is taken at createCache and never per step; dispose gives it back', async () => {
  const mha = await module({ embedDim: E });
  const base = await wasmMemoryInUse();
  const cache = mha.createCache({ maxLength: 600 });
  await step(mha, cache, tokens(8));  // the first call sizes the module's scratch
  const afterFirst = await wasmMemoryInUse();
  assert.ok(afterFirst - base >= 600 * 2 * 8 * 4, 'the cache storage is allocated up front');
  for (let i = 0; i < 500; i++) await step(mha, cache, tokens(1));
  assert.equal(await wasmMemoryInUse(), afterFirst, 'no memory per step');
  cache.dispose();
  assert.ok(await wasmMemoryInUse() < afterFirst - 600 * 2 * 8 * 4 + 1);
  mha.dispose();
});

test('a sliding-window cache has no length limit', async () => {
  const mha = await module();
  const cache = mha.createCache({ window: 3 });
  for (let i = 0; i < 10; i++) await step(mha, cache, tokens(20));
  assert.equal(cache.length, 200);
  const { attnWeights } = await step(mha, cache, tokens(1), { needWeights: true });
  assert.deepEqual(attnWeights.shape, [1, 1, 201]);
  // Only the last 3 positions carry weight.
  const row = attnWeights.data;
  assert.equal(row.slice(0, 198).reduce((a, b) => a + b, 0), 0);
  assert.ok(Math.abs(row[198] + row[199] + row[200] - 1) < 1e-6);
  mha.dispose();
});

// GQA and rotary have WebGPU kernels (tests/webgpu/ runs them): backend 'webgpu' no longer refuses
// them for what they are; without a GPU its BackendError is about the missing adapter, as for any
// module.
test("backend 'webgpu' takes GQA and rotary modules: without an adapter its BackendError names the adapter", async () => {
  const noAdapter = { requestAdapter: async () => null };
  for (const options of [{ numKvHeads: 1 }, { rotary: {} }, { numKvHeads: 2, rotary: { interleaved: true } }]) {
    await assert.rejects(() => MultiHeadAttention.create({ embedDim: E, numHeads: 4, ...options, backend: 'webgpu', gpu: noAdapter }),
      (e) => e instanceof BackendError && /no WebGPU adapter/.test(e.message) && !/has no WebGPU kernels/.test(e.message));
  }
});

test('rotary.table: a call that rotates a position past its rows is a ShapeError, with and without a cache; the cache stays', async () => {
  const half = 2, P = 5;
  const table = { cos: { data: filled(P * half, 1), shape: [P, half] }, sin: { data: filled(P * half, 2), shape: [P, half] } };
  const mha = await module({ rotary: { table } });
  try {
    const x = (n) => ({ data: filled(n * 16, n), shape: [1, n, 16] });
    await assert.rejects(mha.forward(x(6), x(6), x(6)), (e) => e instanceof ShapeError && e.argument === 'rotary.table' && /0 … 5.*0 … 4/.test(e.message));
    const cache = mha.createCache({ maxLength: 8 });
    await step(mha, cache, x(4));
    await assert.rejects(step(mha, cache, x(2)), (e) => e instanceof ShapeError && /positions 4 … 5/.test(e.message));
    assert.equal(cache.length, 4);
    await step(mha, cache, x(1));
    assert.equal(cache.length, 5);
  } finally {
    mha.dispose();
  }
});
