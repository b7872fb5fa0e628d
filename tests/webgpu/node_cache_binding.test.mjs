// Where a KV cache lives and what its misuse gives, on WebGPU in Node: the storage is made once
// on the device at createCache() and decode steps make no buffer; a cache is bound at creation
// to where the module runs then ('auto' before its GPU is acquired: WASM); typed errors for a
// cache of another module, a disposed cache or module, and a lost device. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BackendError, CacheError, DisposedError, MultiHeadAttention } from '#webattention';
import { filled } from '../contract/contract.mjs';
import { freshDevice, gpu, randomStateDict, runs } from './node_setup.mjs';

const create = { embedDim: 16, numHeads: 4, numKvHeads: 2, rotary: {} };
const tokens = (L, seed) => ({ data: filled(L * 16, seed), shape: [1, L, 16] });
const step = (mha, cache, L, seed, options = {}) => {
  const x = tokens(L, seed);
  return mha.forward(x, x, x, { cache, ...options });
};

async function loaded(options) {
  const mha = await MultiHeadAttention.create({ ...create, ...options });
  mha.loadStateDict(randomStateDict(mha.stateDictShapes, 5));
  return mha;
}

describe('KV cache on WebGPU: storage, binding, misuse', () => {
  test('the storage is two buffers made at createCache(); decode steps make none', async () => {
    const device = await freshDevice();
    let made = 0;
    const createBuffer = device.createBuffer.bind(device);
    device.createBuffer = (descriptor) => { made++; return createBuffer(descriptor); };
    const mha = await loaded({ backend: 'webgpu', gpu: device });
    try {
      const before = made;
      const cache = mha.createCache({ maxLength: 64 });
      assert.equal(made - before, 2, 'keys and values');
      await step(mha, cache, 8, 1);
      await step(mha, cache, 1, 2);  // the decode path's buffers, once
      const warm = made;
      for (let s = 0; s < 6; s++) await step(mha, cache, 1, 3 + s);
      assert.equal(made, warm, 'no buffer per step');
      assert.equal(cache.length, 15);
    } finally {
      mha.dispose();
      device.destroy();
    }
  });

  test("'auto': a cache made before the GPU is acquired stays on WASM; one made after runs on the GPU; same results", async () => {
    const mha = await loaded({ backend: 'auto', gpu, webgpuMinFlops: 0 });
    const reference = await loaded({ backend: 'wasm' });
    try {
      const early = mha.createCache({ maxLength: 8 });
      runs.length = 0;
      const a = await step(mha, early, 3, 1);
      assert.deepEqual(runs, ['wasm']);
      await mha.forward(tokens(2, 9), tokens(2, 9), tokens(2, 9));  // acquires the GPU
      assert.equal(mha.backend, 'webgpu');
      const late = mha.createCache({ maxLength: 8 });
      runs.length = 0;
      const b = await step(mha, late, 3, 1);
      await step(mha, early, 1, 2);
      assert.deepEqual(runs, ['webgpu', 'wasm']);
      const expected = await step(reference, reference.createCache({ maxLength: 8 }), 3, 1);
      for (const r of [a, b]) {
        assert.ok(r.output.data.every((x, i) => Math.abs(x - expected.output.data[i]) < 1e-4), 'matches backend wasm');
      }
    } finally {
      mha.dispose();
      reference.dispose();
    }
  });

  test('a GPU cache with another module: CacheError; after its or its module\'s dispose: DisposedError', async () => {
    const one = await loaded({ backend: 'webgpu', gpu });
    const other = await loaded({ backend: 'webgpu', gpu });
    try {
      const cache = one.createCache({ maxLength: 8 });
      await assert.rejects(step(other, cache, 1, 1), CacheError);
      assert.equal(cache.length, 0);
      cache.dispose();
      await assert.rejects(step(one, cache, 1, 1), DisposedError);
      const second = one.createCache({ maxLength: 8 });
      one.dispose();
      assert.throws(() => second.length, DisposedError);
    } finally {
      one.dispose();
      other.dispose();
    }
  });

  test('a lost device: the cache call and read() reject with BackendError; a new cache is on WASM and works', async () => {
    const device = await freshDevice();
    const mha = await loaded({ backend: 'webgpu', gpu: device });
    try {
      const cache = mha.createCache({ maxLength: 8 });
      await step(mha, cache, 2, 1);
      const during = cache.read();  // read racing the loss
      device.destroy();
      await assert.rejects(step(mha, cache, 1, 2), BackendError);
      for (const read of [during, cache.read()]) {
        await assert.rejects(read, (e) => e instanceof BackendError && e.argument === 'cache' && /cache\.read: .*lost/.test(e.message));
      }
      await mha.forward(tokens(2, 9), tokens(2, 9), tokens(2, 9));  // the failure policy: WASM now
      assert.equal(mha.backend, 'wasm');
      const fresh = mha.createCache({ maxLength: 8 });
      runs.length = 0;
      await step(mha, fresh, 2, 1);
      assert.deepEqual(runs, ['wasm']);
    } finally {
      mha.dispose();
    }
  });
});
