// coveringSubset() (covering.mjs): what the WebGPU suite's SwiftShader runs keep of a list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coveringSubset, pairs } from './covering.mjs';


test('every value of every key is kept, in fewer items than the whole list', () => {
  const items = pairs(['a', 'b', 'c', 'd', 'e'], ['f32', 'f16', 'i8']);
  const kept = coveringSubset(items);
  for (const at of [0, 1]) assert.deepEqual(new Set(kept.map((item) => item[at])), new Set(items.map((item) => item[at])));
  assert.equal(kept.length, 5, 'one item per variant: each carries a dtype not yet covered until all are');
  assert.deepEqual(kept.map(([, dtype]) => dtype), ['f32', 'f16', 'i8', 'f32', 'f32']);
});

test("the list's order is kept, a pair named as a value is kept whole, and the same name on two dimensions is two values", () => {
  const items = pairs(['a', 'b'], ['f32', 'i8']);
  const kept = coveringSubset(items, ([v, d]) => [v, d, v === 'b' && d === 'i8' ? 'b+i8' : null]);
  assert.deepEqual(kept, [['a', 'f32'], ['b', 'i8']]);
  assert.deepEqual(coveringSubset(pairs(['f16', 'i8'], ['f32', 'f16'])), [['f16', 'f32'], ['i8', 'f16']]);
  assert.deepEqual(coveringSubset([]), []);
  assert.deepEqual(coveringSubset([['x', 'y']], () => []), [], 'an item with no values covers nothing');
});
