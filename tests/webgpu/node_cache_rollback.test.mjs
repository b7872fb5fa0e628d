// cache.truncate() and cache.fork() of a cache on the GPU (issue 38): a truncate clears the
// dropped slots and a fork copies the buffers on the device, each in the cache's call queue (the
// runs make them while the calls before them are still queued). Same runs and assertions as
// tests/js/cache_rollback.test.js on WASM (tests/contract/cache_rollback.mjs), fewer layouts:
// SwiftShader is slow. Set-up: node_setup.mjs.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { BackendError, CacheError, DisposedError } from '#webattention';
import { sameBits } from '../contract/compare.mjs';
import { ROLLBACK_LAYOUTS, forkRun, forkThenDisposeRun, hostileRun, outsideTolerance, poisonedTruncateRun, truncateRun } from '../contract/cache_rollback.mjs';
import { filled } from '../contract/random.mjs';
import { cacheHooks } from '../internals.mjs';
import { freshDevice, gpu, runs } from './node_setup.mjs';

const ON_GPU = { backend: 'webgpu', gpu };
const onlyGpu = (before) => runs.slice(before).every((where) => where === 'webgpu');

for (const layout of [ROLLBACK_LAYOUTS[0], ROLLBACK_LAYOUTS[2], ROLLBACK_LAYOUTS[3]]) {
  const name = JSON.stringify(layout.cache);
  test(`WebGPU: truncate() then new tokens = a cache that never saw the dropped ones, bit for bit (${name})`, async () => {
    const before = runs.length;
    const r = await truncateRun(api, layout, ON_GPU);
    assert.ok(onlyGpu(before), 'every call on the GPU');
    assert.deepEqual(r.lengths, [layout.kept, layout.kept + layout.more]);
    assert.ok(sameBits(r.truncated.data, r.fresh.data), 'outputs after truncate()');
    assert.ok(sameBits(r.read[0].key.data, r.read[1].key.data) && sameBits(r.read[0].value.data, r.read[1].value.data), 'read()');
    assert.equal(outsideTolerance(r.truncated, r.reference), null);
  });
}

for (const layout of [ROLLBACK_LAYOUTS[1], ROLLBACK_LAYOUTS[3]]) {
  test(`WebGPU: fork() then other tokens on each = two caches fed separately, bit for bit (${JSON.stringify(layout.cache)})`, async () => {
    const before = runs.length;
    const r = await forkRun(api, layout, ON_GPU);
    assert.ok(onlyGpu(before), 'every call on the GPU');
    assert.equal(r.dtype, layout.cache.dtype ?? 'float32');
    assert.ok(sameBits(r.source.data, r.fresh[0].data), 'the source');
    assert.ok(sameBits(r.fork.data, r.fresh[1].data), 'the fork');
    assert.equal(outsideTolerance(r.fork, r.reference[1]), null);
  });
}

test('WebGPU: misuse of truncate() and fork() is a typed error that leaves the cache as it was', async () => {
  const r = await hostileRun(api, ON_GPU);
  for (const { length, error } of r.refusals) {
    const argument = typeof length === 'object' && length !== null ? 'lengths' : 'length';
    assert.ok(error instanceof CacheError && error.argument === argument, `truncate(${String(length)}): ${error}`);
  }
  assert.equal(r.length, 90);
  assert.ok(r.unchanged);
  assert.equal(r.lowest, null);
  for (const error of r.disposed) assert.ok(error instanceof DisposedError, String(error));
  assert.ok(r.released instanceof DisposedError);
});

test('WebGPU: a dropped position of Inf leaves no trace in the next call', async () => {
  const r = await poisonedTruncateRun(api, ON_GPU);
  assert.ok(r.truncated.data.every(Number.isFinite));
  assert.ok(sameBits(r.truncated.data, r.fresh.data));
});

test('WebGPU: a fork made before its source\'s dispose() holds every position appended before it', async () => {
  const r = await forkThenDisposeRun(api, ON_GPU);
  assert.ok(sameBits(r.fork.key.data, r.fresh.key.data) && sameBits(r.fork.value.data, r.fresh.value.data));
});

// A call queued before a truncate() fails and appends nothing: the truncate cuts what is there if
// it can (the calls after it then run at its length), else the calls planned after it reject, as
// behind any failed call. Each outcome against a cache fed the same successful calls.
for (const [cut, outcome] of [[8, 'runs at 8'], [12, 'rejects: 12 was never reached']]) {
  test(`WebGPU: truncate(${cut}) queued behind a call that fails: the next call ${outcome}`, async () => {
    const mha = await api.MultiHeadAttention.create({ embedDim: 16, numHeads: 4, ...ON_GPU });
    after(() => mha.dispose());
    mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }, i) => [name, { data: filled(shape.reduce((a, b) => a * b, 1), 60 + i), shape }])));
    const x = (n, seed) => ({ data: filled(n * 16, seed), shape: [1, n, 16] });
    const step = (cache, t) => mha.forward(t, t, t, { cache });
    const [cache, fresh] = [0, 1].map(() => mha.createCache({ maxLength: 32 }));
    await Promise.all([step(cache, x(10, 1)), step(fresh, x(10, 1))]);
    let failures = 1;
    cacheHooks.beforePass = () => {
      if (failures-- > 0) throw new Error('injected failure');
    };
    try {
      const failing = step(cache, x(4, 2));
      cache.truncate(cut);
      const next = step(cache, x(2, 3));
      await assert.rejects(failing, /injected failure/);
      if (cut === 12) {
        await assert.rejects(next, (e) => e instanceof CacheError);
        assert.equal(cache.length, 10);
        return;
      }
      assert.equal(cache.length, cut + 2, 'the failed call planned before the truncate() is not taken off its length');
      fresh.truncate(cut);
      assert.ok(sameBits((await next).output.data, (await step(fresh, x(2, 3))).output.data));
      assert.equal(cache.length, cut + 2);
    } finally {
      cacheHooks.beforePass = null;
    }
  });
}

test('WebGPU: fork() once the cache\'s device is lost is a BackendError; the cache keeps its length', async () => {
  const own = await freshDevice();
  const mha = await api.MultiHeadAttention.create({ embedDim: 16, numHeads: 4, backend: 'webgpu', gpu: own });
  after(() => mha.dispose());
  const cache = mha.createCache({ maxLength: 8 });
  own.destroy();
  await own.lost;
  assert.throws(() => cache.fork(), (e) => e instanceof BackendError && e.argument === 'cache');
  assert.equal(cache.length, 0);
});
