// The assertions of cache_verify.mjs's runs that every backend shares, for the Node suites
// (node:assert): the WASM modules and the pool (tests/js/cache_verify.test.js) and WebGPU
// (tests/webgpu/node_cache_verify.test.mjs). `on` goes to create() ({ backend, gpu }).
import assert from 'node:assert/strict';
import { sameBits } from './compare.mjs';
import { outsideTolerance, sameRead, treeRun } from './cache_verify.mjs';

/**
 * The tree of drafts verified in one call (treeRun()): each branch's rows equal its own causal
 * run and float64; after keep() of the first branch (its keys rotated at their depths, which are
 * their new positions: moved as stored) the next token and read() equal a fresh run's, bit for bit.
 */
export async function assertTreeVerify(api, layout, on = {}) {
  const r = await treeRun(api, layout, on);
  const prefix = layout.prefix ?? 5;
  assert.deepEqual(r.lengths, [prefix, prefix + 6, prefix + 4]);
  for (const [n, b] of r.branches.entries()) {
    assert.equal(outsideTolerance(b.verified, b.fresh), null, `branch ${n} against its own run`);
    assert.equal(outsideTolerance(b.verified, b.reference), null, `branch ${n} against float64`);
  }
  assert.ok(sameBits(r.next.kept.data, r.next.fresh.data), 'the token after keep()');
  assert.ok(sameRead(r.read[0], r.read[1]), 'read() after keep()');
  assert.equal(outsideTolerance(r.next.kept, r.next.reference), null);
}
