// cache.truncate() and cache.fork() of a cache on the GPU (issue 38): a truncate clears the
// dropped slots and a fork copies the buffers on the device, each in the cache's call queue (the
// runs make them while the calls before them are still queued). Same runs and assertions as
// tests/js/cache_rollback.test.js on WASM (tests/contract/cache_rollback.mjs), fewer layouts:
// SwiftShader is slow. Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { CacheError, DisposedError } from '#webattention';
import { sameBits } from '../contract/compare.mjs';
import { ROLLBACK_LAYOUTS, forkRun, forkThenDisposeRun, hostileRun, outsideTolerance, poisonedTruncateRun, truncateRun } from '../contract/cache_rollback.mjs';
import { gpu, runs } from './node_setup.mjs';

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
  for (const { length, error } of r.refusals) assert.ok(error instanceof CacheError && error.argument === 'length', `truncate(${String(length)}): ${error}`);
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
