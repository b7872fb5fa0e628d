// What a WebGPU cache refuses before a call is queued (web/src/webgpu/cache_checks.js), without a
// GPU: a device limits object and a cached call's plan faked to the fields the checks read. A call
// whose kernels read the row table (rows at lengths of their own, or positionIds that move the
// window) needs ROW_TABLE_STORAGE_BUFFERS storage buffers per shader stage, the NaN rule's kernel
// binding it as its ninth, which plain calls never bind; positionIds that move a window where the
// ring cannot hold the keys they reach are refused as the core refuses them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CacheError } from '../../web/src/base/errors.js';
import { ROW_TABLE_STORAGE_BUFFERS, checkCachedCall } from '../../web/src/webgpu/cache_checks.js';
import { nonFiniteRowsShader } from '../../web/src/webgpu/kernels/nonfinite_rows.wgsl.js';
import { decodeReduceNanShader } from '../../web/src/webgpu/kernels/decode_reduce_nan.wgsl.js';

const limits = (buffers) => ({ maxStorageBuffersPerShaderStage: buffers });
const fits = () => true;
const CONFIG = { embedDim: 16, kdim: 16, vdim: 16, numHeads: 4 };

/** A cached call's plan: batch B of L rows on cache rows `rows` (null: every row) at `lengths`. */
function plan({ L = 1, lengths = [5, 5], rows = null, window = 0, positionIds = null }) {
  const B = rows ? rows.length : lengths.length;
  const lengthBefore = Math.max(...(rows ? Array.from(rows, (r) => lengths[r]) : lengths));
  return {
    B, L, S: L, T: lengthBefore + L, positionIds, onDevice: false, output: 'array',
    cache: { rows, lengthsBefore: lengths, lengthBefore, lengthAfter: lengthBefore + L, storage: { window, maxRowsPerPass: window ? 65 : 64 } },
  };
}
const refusal = (p, buffers) => {
  try {
    checkCachedCall(p, CONFIG, fits, limits(buffers));
    return null;
  } catch (e) {
    return e;
  }
};

test('the NaN rule\'s kernel binds the row table only in its variant for such calls: 8 storage buffers, 9 with it; in the decode reduce 7 and 8', () => {
  const storage = (rows) => nonFiniteRowsShader({ dk: 4, dv: 4, dtype: 'float32', heads: 2, rows }).match(/var<storage/g).length;
  assert.equal(storage(false), 8);
  assert.equal(storage(true), ROW_TABLE_STORAGE_BUFFERS);
  // The decode reduce with the rule in it (no sinks, no weights): 7, and the table the 8th.
  const reduce = (rows) => decodeReduceNanShader({ dk: 4, dv: 4, dtype: 'float32', rows }).match(/var<storage/g).length;
  assert.deepEqual([reduce(false), reduce(true)], [7, 8]);
});

test('a device under 9 storage buffers per stage refuses rows at lengths of their own: a CacheError naming rows', () => {
  const calls = { 'a call on some rows': plan({ rows: Int32Array.of(1) }), 'rows of unequal lengths': plan({ lengths: [3, 5] }) };
  for (const [what, p] of Object.entries(calls)) {
    const error = refusal(p, ROW_TABLE_STORAGE_BUFFERS - 1);
    assert.ok(error instanceof CacheError && error.argument === 'rows', `${what}: ${error}`);
    assert.match(error.message, /need 9 storage buffers per shader stage; this device has 8: a WASM cache/);
    assert.equal(error.expected, '>= 9 storage buffers per shader stage');
    assert.equal(error.actual, 8);
    assert.equal(refusal(p, ROW_TABLE_STORAGE_BUFFERS), null, `${what} on a device with 9`);
  }
  assert.equal(refusal(plan({}), 4), null, 'every row at one length binds no table: any device');
});

test('positionIds that move a window need the row table too: a CacheError naming positionIds under 9 buffers; the slots\' own need none', () => {
  const ids = (data) => Int32Array.from(data);
  const tree = plan({ L: 3, window: 8, positionIds: ids([5, 6, 6, 5, 6, 6]) });
  const error = refusal(tree, 8);
  assert.ok(error instanceof CacheError && error.argument === 'positionIds', String(error));
  assert.match(error.message, /positionIds that move a WebGPU cache's window .* need 9 storage buffers per shader stage; this device has 8/);
  assert.equal(refusal(tree, 9), null);
  assert.equal(refusal(plan({ L: 3, window: 8, positionIds: ids([5, 6, 7, 5, 6, 7]) }), 8), null, 'the rows\' own positions');
  assert.equal(refusal(plan({ L: 3, positionIds: ids([5, 6, 6, 5, 6, 6]) }), 8), null, 'no window: nothing to move');
});

test('positionIds that move a window past what its ring holds: the core\'s CacheError, before the device\'s limit', () => {
  const below = refusal(plan({ L: 2, lengths: [10, 7], window: 8, positionIds: Int32Array.of(10, 11, 7, 6) }), 8);
  assert.ok(below instanceof CacheError && below.argument === 'positionIds', String(below));
  assert.equal(below.message, "positionIds: with the cache's window (8) expected positions >= the row's length before the call (7), got 6 at [1, 1]");
  const long = refusal(plan({ L: 66, window: 8, positionIds: Int32Array.from({ length: 132 }, (_, n) => 6 + (n % 66)) }), 16);
  assert.ok(long instanceof CacheError && long.argument === 'positionIds', String(long));
  assert.equal(long.message, "positionIds: with the cache's window (8) positions other than the rows' own need a call of at most 65 rows (one pass of the ring), got 66");
});
