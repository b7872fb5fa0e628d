// BufferPool (web/src/webgpu/buffer_pool.js) on a stand-in device: a role's buffer is made once and
// reused, replaced by a bigger one when a call needs more; every TRIM_CALLS calls a buffer far
// larger than what those calls asked of it (or unused by them) is freed and made again at its new
// size; lent buffers come back or, when the role has a buffer again, are destroyed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BufferPool, TRIM_CALLS, TRIM_RATIO } from '../../web/src/webgpu/buffer_pool.js';

const STORAGE = 0x80;
function fakeDevice() {
  const made = [];
  return {
    made,
    limits: { maxBufferSize: 2 ** 31, maxStorageBufferBindingSize: 2 ** 31 },
    createBuffer({ size, usage }) {
      const buffer = { size, usage, destroyed: false, destroy() { this.destroyed = true; } };
      made.push(buffer);
      return buffer;
    },
  };
}
const MB = 1 << 20;

test('a role\'s buffer is reused, replaced by a bigger one, and freed at the first look after TRIM_CALLS calls that needed far less of it', () => {
  const device = fakeDevice();
  const pool = new BufferPool(device, () => false);
  const big = pool.take('q', (64 * MB) / 4, STORAGE);
  pool.afterCall();  // call 1 of the first window of TRIM_CALLS: that window needed 64 MB
  assert.equal(pool.take('q', MB / 4, STORAGE), big, 'a smaller call reuses the big buffer');
  let calls = 1;
  while (!big.destroyed && calls < 4 * TRIM_CALLS) {
    pool.take('q', MB / 4, STORAGE);
    pool.afterCall();
    calls++;
  }
  assert.equal(calls, 2 * TRIM_CALLS, 'freed at the end of the first window without the big call');
  const small = pool.take('q', MB / 4, STORAGE);
  assert.ok(small.size >= MB && small.size < TRIM_RATIO * MB, `made again at its need (${small.size} bytes)`);
  assert.equal(pool.bytes, small.size);
});

test('a buffer within TRIM_RATIO of its need stays; one no call used is freed; small buffers stay', () => {
  const device = fakeDevice();
  const pool = new BufferPool(device, () => false);
  const kept = pool.take('kv', (8 * MB) / 4, STORAGE);
  const unused = pool.take('weights', (8 * MB) / 4, STORAGE);
  const tiny = pool.take('uniforms', 64, STORAGE);
  pool.afterCall();
  for (let i = 1; i < 2 * TRIM_CALLS; i++) {
    pool.take('kv', (3 * MB) / 4, STORAGE);
    pool.afterCall();
  }
  assert.deepEqual([kept.destroyed, unused.destroyed, tiny.destroyed], [false, true, false]);
});

test('lend() takes a buffer out of the pool (never trimmed); giveBack() returns it, or destroys it when the role has one again or the executor is gone', () => {
  const device = fakeDevice();
  let closed = false;
  const pool = new BufferPool(device, () => closed);
  const lent = pool.lend('snapshot', 32 * MB, STORAGE);
  for (let i = 0; i < 2 * TRIM_CALLS; i++) pool.afterCall();
  assert.equal(lent.destroyed, false);
  pool.giveBack('snapshot', lent);
  assert.equal(pool.take('snapshot', (32 * MB) / 4, STORAGE), lent, 'back in the pool');
  const again = pool.lend('snapshot', 32 * MB, STORAGE);
  const other = pool.take('snapshot', 16, STORAGE);  // the role has a buffer again meanwhile
  pool.giveBack('snapshot', again);
  assert.equal(again.destroyed, true);
  assert.equal(other.destroyed, false);
  const last = pool.lend('snapshot', MB, STORAGE);
  closed = true;
  pool.giveBack('snapshot', last);
  assert.equal(last.destroyed, true, 'the executor is gone');
  pool.release();
  assert.equal(pool.bytes, 0);
});
