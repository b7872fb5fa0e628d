// The assertions of cache_verify.mjs's runs that every backend shares, for the Node suites
// (node:assert): the WASM modules and the pool (tests/js/cache_verify.test.js) and WebGPU
// (tests/webgpu/node_cache_verify.test.mjs). `on` goes to create() ({ backend, gpu }).
import assert from 'node:assert/strict';
import { sameBits } from './compare.mjs';
import { TREES, keptDrafts, outsideTolerance, sameRead, treeRun } from './cache_verify.mjs';

/**
 * The tree of drafts verified in one call (treeRun()): each branch's rows equal its own causal
 * run and float64; after keep() of the first branch (its keys rotated at their depths, which are
 * their new positions: moved as stored) the next token and read() equal a fresh run's, bit for bit.
 */
export async function assertTreeVerify(api, layout, on = {}) {
  const r = await treeRun(api, layout, on);
  const prefix = layout.prefix ?? 5;
  const tree = TREES[layout.tree ?? 'tree'];
  assert.deepEqual(r.lengths, [prefix, prefix + tree.parents.length, prefix + keptDrafts(tree).length]);
  for (const [n, b] of r.branches.entries()) {
    assert.equal(outsideTolerance(b.verified, b.fresh), null, `branch ${n} against its own run`);
    assert.equal(outsideTolerance(b.verified, b.reference), null, `branch ${n} against float64`);
  }
  assert.ok(sameBits(r.next.kept.data, r.next.fresh.data), 'the token after keep()');
  assert.ok(sameRead(r.read[0], r.read[1]), 'read() after keep()');
  assert.equal(outsideTolerance(r.next.kept, r.next.reference), null);
  return r;
}

/**
 * windowIdsRefusalRun()'s refusals, alike on every backend: a CacheError naming positionIds in
 * the core's words (ids below the row's length; a call longer than one pass of the ring), and the
 * cache as it was.
 */
export function assertWindowIdsRefused(api, r) {
  for (const error of r.errors) assert.ok(error instanceof api.CacheError && error.argument === 'positionIds', String(error));
  assert.match(r.errors[0].message, /window \(8\).*>= the row's length before the call \(10\), got 9 at \[0, 0\]/);
  assert.match(r.errors[1].message, /at most 65 rows \(one pass of the ring\), got 66/);
  assert.equal(r.length, 10);
  assert.ok(r.unchanged, 'the next call after the refusals equals a twin cache\'s');
}
