// coveringSubset() (covering.mjs): what the WebGPU suite's SwiftShader runs keep of a list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coveringSubset, pairs } from './covering.mjs';

const keysOf = ([variant, dtype]) => [`variant:${variant}`, `dtype:${dtype}`];

test('every value of every key is kept, in fewer items than the whole list', () => {
  const items = pairs(['a', 'b', 'c', 'd', 'e'], ['f32', 'f16', 'i8']);
  const kept = coveringSubset(items, keysOf);
  assert.deepEqual(new Set(kept.flatMap(keysOf)), new Set(items.flatMap(keysOf)));
  assert.equal(kept.length, 5, 'one item per variant: each carries a dtype not yet covered until all are');
  assert.deepEqual(kept.map(([, dtype]) => dtype), ['f32', 'f16', 'i8', 'f32', 'f32']);
});

test("the list's order is kept, and a pair named as a key is kept whole", () => {
  const items = pairs(['a', 'b'], ['f32', 'i8']);
  const kept = coveringSubset(items, ([v, d]) => [...keysOf([v, d]), ...(v === 'b' && d === 'i8' ? ['b+i8'] : [])]);
  assert.deepEqual(kept, [['a', 'f32'], ['b', 'i8']]);
  assert.deepEqual(coveringSubset([], keysOf), []);
  assert.deepEqual(coveringSubset([['x', 'y']], () => []), [], 'an item with no keys covers nothing');
});
