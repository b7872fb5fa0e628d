// cache.truncate() and cache.fork() on WASM (issue 38), on the module and thread count the
// environment picks (WEBATTENTION_WASM, WEBATTENTION_THREADS: the pool leaves cache calls to the
// calling thread, so they run there too). The runs: tests/contract/cache_rollback.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { CacheError, DisposedError } from '#webattention';
import { sameBits } from '../contract/compare.mjs';
import { HOSTILE_LENGTHS, ROLLBACK_LAYOUTS, forkRun, forkThenDisposeRun, hostileRun, outsideTolerance, poisonedTruncateRun, truncateRun } from '../contract/cache_rollback.mjs';

const describeLayout = ({ cache }) => JSON.stringify(cache);

for (const layout of ROLLBACK_LAYOUTS) {
  test(`truncate() then new tokens = a cache that never saw the dropped ones, bit for bit (${describeLayout(layout)})`, async () => {
    const r = await truncateRun(api, layout);
    assert.deepEqual(r.lengths, [layout.kept, layout.kept + layout.more]);
    assert.ok(sameBits(r.truncated.data, r.fresh.data), 'outputs after truncate()');
    assert.ok(sameBits(r.read[0].key.data, r.read[1].key.data) && sameBits(r.read[0].value.data, r.read[1].value.data), 'read()');
    assert.equal(r.read[0].firstPosition, r.read[1].firstPosition);
    assert.equal(outsideTolerance(r.truncated, r.reference), null);
  });

  test(`fork() then other tokens on each = two caches fed separately, bit for bit (${describeLayout(layout)})`, async () => {
    const r = await forkRun(api, layout);
    assert.equal(r.dtype, layout.cache.dtype ?? 'float32');
    assert.ok(sameBits(r.source.data, r.fresh[0].data), 'the source');
    assert.ok(sameBits(r.fork.data, r.fresh[1].data), 'the fork');
    assert.equal(outsideTolerance(r.source, r.reference[0]), null);
    assert.equal(outsideTolerance(r.fork, r.reference[1]), null);
  });
}

test('misuse of truncate() and fork() is a typed error that leaves the cache as it was', async () => {
  const r = await hostileRun(api);
  for (const { length, error } of r.refusals) {
    assert.ok(error instanceof CacheError, `truncate(${String(length)}): ${error}`);
    assert.equal(error.argument, typeof length === 'object' && length !== null ? 'lengths' : 'length');
  }
  const message = (i) => r.refusals[i].error.message;
  assert.match(message(HOSTILE_LENGTHS.length - 2), /positions below 18 have left the ring of the window \(8\).*\[26, 90\], got 25/);
  assert.match(message(HOSTILE_LENGTHS.findIndex(Array.isArray)), /one length for each of the cache's 2 rows, got 1/);
  assert.match(message(HOSTILE_LENGTHS.findIndex(ArrayBuffer.isView)), /\[26, 90\] for row 1, got 91/);
  assert.match(message(2), /expected an integer length, got number 1\.5/);
  assert.equal(r.length, 90);
  assert.ok(r.unchanged, 'the next call after the refusals equals a twin cache\'s');
  assert.equal(r.lowest, null, 'truncate() to the lowest length it keeps');
  for (const error of r.disposed) assert.ok(error instanceof DisposedError, String(error));
  assert.ok(r.released instanceof DisposedError, 'a fork is released with its module');
});

test('a dropped position of Inf leaves no trace in the next call', async () => {
  const r = await poisonedTruncateRun(api);
  assert.ok(r.truncated.data.every(Number.isFinite));
  assert.ok(sameBits(r.truncated.data, r.fresh.data));
});

test('a fork made before its source\'s dispose() holds every position appended before it', async () => {
  const r = await forkThenDisposeRun(api);
  assert.ok(sameBits(r.fork.key.data, r.fresh.key.data) && sameBits(r.fork.value.data, r.fresh.value.data));
});
