// Shapes that lie (issue "Hostile callers", findings 1–3 and the shape messages of 11): a hole
// that every() and reduce() skip, a Proxy that answers the checks one size and the copy another,
// a sparse array of 2^31 entries, strings and non-finite numbers. Each is refused with a ShapeError
// naming the argument and the index, or computed from one reading of the shape (and, with them,
// data and caches that only pose as what they claim, findings 10 and 11); afterwards the
// module's next valid call is right and the WASM memory in use is unchanged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DTypeError, DisposedError, KvCache, MultiHeadAttention, OptionError, ShapeError, loadSafetensors, scaledDotProductAttention,
  wasmMemoryInUse,
} from '#webattention';

const E = 8;
const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 2 });
mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }, i) => {
  const n = shape.reduce((a, b) => a * b, 1);
  return [name, { data: Float32Array.from({ length: n }, (_, j) => Math.sin(7 * i + j) / 4), shape }];
})));
const input = (L) => ({ data: Float32Array.from({ length: L * E }, (_, j) => Math.cos(j)), shape: [1, L, E] });
const reference = (await mha.forward(input(4), input(4), input(4))).output;

/** Runs `call`, which must throw a ShapeError naming `argument` and matching `message`; then a valid call is still right. */
async function refused(call, argument, message) {
  const before = await wasmMemoryInUse();
  await assert.rejects(call, (e) => e instanceof ShapeError && e.argument === argument && message.test(e.message),
    `expected a ShapeError for ${argument} matching ${message}`);
  assert.equal(await wasmMemoryInUse(), before, 'WASM memory in use changed');
  const { output } = await mha.forward(input(4), input(4), input(4));
  assert.deepEqual(output.data, reference.data);
}

test('a shape with an empty slot is a ShapeError naming the argument and the index (it used to overrun the heap)', async () => {
  // eslint-disable-next-line no-sparse-arrays
  await refused(() => mha.forward({ ...input(4), shape: [1, , E] }, input(4), input(4)), 'query', /query\.shape: .*empty slot at index 1/);
  const q = { data: new Float32Array(32), shape: [, 4, E] };  // eslint-disable-line no-sparse-arrays
  await refused(() => scaledDotProductAttention(q, q, q), 'q', /q\.shape: .*empty slot at index 0/);
});

test('a shape is read once: a Proxy answering 4 then 100000 gives the answer of the 4 it first said', async () => {
  let reads = 0;
  const liar = new Proxy([1, 4, E], {
    get(target, key) {
      if (key === '1') return reads++ === 0 ? 4 : 100000;
      return Reflect.get(target, key);
    },
  });
  const x = input(4);
  const { output } = await mha.forward({ data: x.data, shape: liar }, input(4), input(4));
  assert.deepEqual(output.shape, [1, 4, E]);
  assert.deepEqual(output.data, reference.data);
  assert.equal(reads, 1, 'the shape entry was read more than once');
});

test('a huge sparse shape is refused at once, before any entry is read', async () => {
  const huge = [];
  huge.length = 2 ** 31 + 1;
  const t0 = performance.now();
  await refused(() => mha.forward({ ...input(4), shape: huge }, input(4), input(4)), 'query', /2147483649 dimensions \(at most 8\)/);
  assert.ok(performance.now() - t0 < 100, `took ${performance.now() - t0} ms`);
});

test('strings, fractions, infinities and 2^53 in a shape are named as what they are', async () => {
  const bad = [[['1', '4', '8'], /string "1" at index 0/], [[1, 4.5, E], /number 4\.5 at index 1/],
    [[1, 1e400, E], /number Infinity at index 1/], [[1, 2 ** 53, E], /number 9007199254740992 at index 1/],
    [[1, 0, E], /number 0 at index 1/]];
  for (const [shape, message] of bad) {
    await refused(() => mha.forward({ ...input(4), shape }, input(4), input(4)), 'query', message);
  }
});

test('a Proxy around typed-array data is refused by what it is, not by the name it claims', async () => {
  const x = input(4);
  const before = await wasmMemoryInUse();
  await assert.rejects(() => mha.forward({ data: new Proxy(x.data, {}), shape: x.shape }, input(4), input(4)),
    (e) => e instanceof DTypeError && e.argument === 'query' && /got an object posing as Float32Array \(a Proxy/.test(e.message));
  assert.throws(() => loadSafetensors(new Proxy(new Uint8Array(16), {})),
    (e) => /posing as Uint8Array/.test(e.message));
  assert.equal(await wasmMemoryInUse(), before);
});

test('a cache that is not one made by createCache() is an OptionError; a disposed one names the forward() option', async () => {
  const fake = Object.create(KvCache.prototype);
  await assert.rejects(() => mha.forward(input(1), input(1), input(1), { cache: fake }),
    (e) => e instanceof OptionError && e.argument === 'cache' && /expected a KvCache from mha\.createCache\(\)/.test(e.message));
  const other = await MultiHeadAttention.create({ embedDim: E, numHeads: 2 });
  const cache = other.createCache({ maxLength: 4 });
  cache.dispose();
  await assert.rejects(() => mha.forward(input(1), input(1), input(1), { cache }),
    (e) => e instanceof DisposedError && e.argument === 'cache' && /^forward: cache: the cache was disposed/.test(e.message));
  other.dispose();
});

test('options are read once: a getter runs once, and one that throws passes its own error on', async () => {
  let reads = 0;
  const options = { get needWeights() { reads++; return reads === 1; } };
  const { attnWeights } = await mha.forward(input(4), input(4), input(4), options);
  assert.equal(reads, 1);
  assert.ok(attnWeights, 'the first answer (true) was used');
  const own = new Error('the caller\'s getter');
  await assert.rejects(() => mha.forward(input(4), input(4), input(4), { get isCausal() { throw own; } }), (e) => e === own);
});
