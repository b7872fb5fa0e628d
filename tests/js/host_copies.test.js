// HostCopies (web/src/base/host_copies.js): the reused arrays a module copies a plain call's large
// inputs into. A copy equals its input; an array is lent to one call at a time and lent again only
// once that call gave it back; small inputs are fresh slices; an array kept is reused for a call
// of up to its size (not one of less than half), and at most three are kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HostCopies, IDLE_CALLS, POOLED_BYTES } from '../../web/src/base/host_copies.js';
import { ownedPlan } from '../../web/src/base/call_plan.js';

const big = (n, seed) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.01 + seed));
const FLOATS = POOLED_BYTES / 4;

test('a copy equals its input and is not it; a call holds its arrays until it gives them back', () => {
  const copies = new HostCopies();
  const a = copies.lease();
  const x = big(FLOATS, 1);
  const cx = a.copy(x);
  assert.notEqual(cx.buffer, x.buffer);
  assert.deepEqual(cx, x);
  // A second call while the first holds its array: another array.
  const b = copies.lease();
  const cy = b.copy(big(FLOATS, 2));
  assert.notEqual(cy.buffer, cx.buffer);
  assert.deepEqual(cx, x, 'the first call\'s copy is untouched');
  b.release();
  a.release();
  // Given back: the next call reuses one, with its own values in it.
  const c = copies.lease();
  const z = big(FLOATS, 3);
  const cz = c.copy(z);
  assert.ok([cx.buffer, cy.buffer].includes(cz.buffer), 'a kept array is reused');
  assert.deepEqual(cz, z);
  c.release();
});

test('sizes: a smaller call takes a view of a kept array of up to twice its size; small inputs are fresh slices', () => {
  const copies = new HostCopies();
  const a = copies.lease();
  const kept = a.copy(big(2 * FLOATS, 1));
  a.release();
  const b = copies.lease();
  const x = big(FLOATS + 5, 2);
  const cx = b.copy(x);
  assert.equal(cx.buffer, kept.buffer);
  assert.equal(cx.length, x.length);
  assert.deepEqual(cx, x);
  b.release();
  // Under half of the kept array's size: a new array, the large one stays free.
  const c = copies.lease();
  const small = big(FLOATS - 4, 3);
  assert.notEqual(c.copy(small).buffer, kept.buffer);
  c.release();
  // Under POOLED_BYTES: slice() each time, never kept.
  const tiny = new Float32Array([1, 2, 3]);
  const d = copies.lease();
  const t1 = d.copy(tiny);
  d.release();
  const t2 = copies.lease().copy(tiny);
  assert.notEqual(t1.buffer, t2.buffer);
  assert.deepEqual(t1, tiny);
  // An Int32Array never takes a Float32Array's array.
  const e = copies.lease();
  const ints = new Int32Array(FLOATS).fill(7);
  const ci = e.copy(ints);
  assert.ok(ci instanceof Int32Array);
  assert.deepEqual(ci, ints);
});

test('at most three arrays are kept; clear() drops them', () => {
  const copies = new HostCopies();
  const a = copies.lease();
  const made = [1, 2, 3, 4].map((s) => a.copy(big(FLOATS, s)).buffer);
  a.release();
  const b = copies.lease();
  const again = [5, 6, 7, 8].map((s) => b.copy(big(FLOATS, s)).buffer);
  assert.equal(again.filter((buf) => made.includes(buf)).length, 3);
  assert.ok(!again.slice(0, 3).includes(made[0]), 'the first given back is the one dropped');
  b.release();
  copies.clear();
  assert.ok(!made.concat(again).includes(copies.lease().copy(big(FLOATS, 9)).buffer));
});

test('ownedPlan() with a lease: one copy of a tensor passed as query, key and value', () => {
  const copies = new HostCopies();
  const lease = copies.lease();
  const x = big(FLOATS, 1);
  const plan = { borrowed: true, query: x, key: x, value: x, keyPaddingMask: { kind: 0, data: null }, attnMask: { kind: 0, data: null }, positionIds: null };
  const owned = ownedPlan(plan, lease.copy);
  assert.equal(owned.borrowed, false);
  assert.equal(owned.query, owned.key);
  assert.equal(owned.key, owned.value);
  assert.notEqual(owned.query.buffer, x.buffer);
  assert.deepEqual(owned.query, x);
  lease.release();
});

test(`a kept array no call took for ${IDLE_CALLS} calls is dropped, whatever those calls copied`, () => {
  const copies = new HostCopies();
  const a = copies.lease();
  const kept = a.copy(big(4 * FLOATS, 1)).buffer;
  a.release();
  // Calls that copy nothing large (small inputs, or none): the large array idles.
  for (let i = 0; i < IDLE_CALLS; i++) copies.lease().release();
  const b = copies.lease();
  assert.notEqual(b.copy(big(3 * FLOATS, 2)).buffer, kept, `dropped after ${IDLE_CALLS} calls`);
  b.release();
  // One call fewer: still kept, and taken.
  const c = copies.lease();
  const again = c.copy(big(4 * FLOATS, 3)).buffer;
  c.release();
  for (let i = 0; i < IDLE_CALLS - 1; i++) copies.lease().release();
  assert.equal(copies.lease().copy(big(4 * FLOATS, 4)).buffer, again, `kept for ${IDLE_CALLS - 1} calls`);
});
