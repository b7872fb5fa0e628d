// forward()'s and scaledDotProductAttention()'s `out`: the caller's array receives the output
// (the same bits as a fresh one), on the calling thread, the worker pool, with a cache, an
// encode()d cache and 16-bit inputs; it may be an input's own array; a wrong one is a typed error
// naming `out`, and one detached or shrunk while the call waited is a ShapeError, after which the
// module (and a cache the call would have appended to) is as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, scaledDotProductAttention, DTypeError, OptionError, ShapeError, wasmMemoryInUse } from '#webattention';
import { filled, seededStateDict } from '../contract/random.mjs';
import { sameBits } from '../contract/compare.mjs';

const E = 16;
const detach = (array) => structuredClone(array.buffer, { transfer: [array.buffer] });
const tensor = (data, shape) => ({ data, shape });
const rows = (B, L, seed) => tensor(filled(B * L * E, seed), [B, L, E]);

async function moduleWith(options) {
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 4, numKvHeads: 2, rotary: {}, ...options });
  mha.loadStateDict(seededStateDict(mha.stateDictShapes, 11));
  return mha;
}

/** forward(...args) with a fresh output, then into `out`: the same bits, and output.data is `out`. */
async function assertWritesOut(mha, args, out, what) {
  const fresh = await mha.forward(...args.slice(0, 3), { ...args[3] });
  const given = await mha.forward(...args.slice(0, 3), { ...args[3], out });
  assert.equal(given.output.data, out, what);
  assert.deepEqual(given.output.shape, fresh.output.shape, what);
  assert.ok(sameBits(out, fresh.output.data), what);
  return given;
}

test('forward({ out }) on the calling thread, the pool and a cache: the same bits as a fresh output, in the caller\'s array', async () => {
  for (const threads of [1, 2]) {
    const mha = await moduleWith({ threads });
    try {
      const x = rows(2, 3, 1);
      const result = await assertWritesOut(mha, [x, x, x, { isCausal: true, needWeights: true }], new Float32Array(2 * 3 * E), `threads ${threads}`);
      assert.equal(result.attnWeights.data.length, 2 * 3 * 3);
      const cache = mha.createCache({ batchSize: 2, maxLength: 8 });
      const twin = mha.createCache({ batchSize: 2, maxLength: 8 });
      const out = new Float32Array(2 * E);
      for (let step = 0; step < 3; step++) {
        const s = rows(2, 1, 20 + step);
        const fresh = await mha.forward(s, s, s, { cache: twin });
        assert.equal((await mha.forward(s, s, s, { cache, out })).output.data, out);
        assert.ok(sameBits(out, fresh.output.data), `threads ${threads}, step ${step}`);
      }
    } finally {
      mha.dispose();
    }
  }
});

test('out may be the query\'s own array (self-attention in place), with an encode()d cache, and for 16-bit inputs a Uint16Array', async () => {
  const mha = await moduleWith({ threads: 1, rotary: undefined });
  try {
    const x = rows(1, 4, 3);
    const expected = (await mha.forward(x, x, x)).output.data;
    const inPlace = tensor(x.data.slice(), x.shape);
    assert.equal((await mha.forward(inPlace, inPlace, inPlace, { out: inPlace.data })).output.data, inPlace.data);
    assert.ok(sameBits(inPlace.data, expected));
    const encoded = await mha.encode(rows(1, 5, 4), rows(1, 5, 5));
    await assertWritesOut(mha, [rows(1, 2, 6), null, null, { cache: encoded }], new Float32Array(2 * E), 'encoded');
    for (const dtype of ['float16', 'bfloat16']) {
      const h = { data: Uint16Array.from({ length: 3 * E }, (_, i) => 0x3c00 + (i % 7) * 64), shape: [1, 3, E], dtype };
      const given = await assertWritesOut(mha, [h, h, h, {}], new Uint16Array(3 * E), dtype);
      assert.equal(given.output.dtype, dtype);
    }
  } finally {
    mha.dispose();
  }
});

test('scaledDotProductAttention({ out })', async () => {
  const q = tensor(filled(2 * 3 * 8, 7), [2, 3, 8]);
  const fresh = await scaledDotProductAttention(q, q, q, { isCausal: true });
  const out = new Float32Array(2 * 3 * 8);
  assert.equal((await scaledDotProductAttention(q, q, q, { isCausal: true, out })).output.data, out);
  assert.ok(sameBits(out, fresh.output.data));
});

test('a wrong out is a typed error naming out, and the module computes the next call', async () => {
  const mha = await moduleWith({ threads: 1 });
  try {
    const x = rows(1, 3, 8);
    const expected = (await mha.forward(x, x, x)).output.data;
    const half = { data: new Uint16Array(3 * E), shape: [1, 3, E], dtype: 'float16' };
    const gone = new Float32Array(3 * E);
    detach(gone);
    for (const [i, [out, Error, inputs]] of [[new Float32Array(3 * E + 1), ShapeError], [new Float32Array(3 * E - 1), ShapeError],
      [new Float64Array(3 * E), DTypeError], [[...expected], DTypeError], [new Uint16Array(3 * E), DTypeError],
      [new Float32Array(3 * E), DTypeError, half], [gone, ShapeError], ['out', DTypeError]].entries()) {
      const q = inputs ?? x;
      await assert.rejects(mha.forward(q, q, q, { out }), (e) => e instanceof Error && e.argument === 'out', `case ${i}`);
    }
    await assert.rejects(mha.forward(x, x, x, { out: new Float32Array(3 * E), output: 'gpu-buffer' }), (e) => e instanceof OptionError && e.argument === 'out');
    await assert.rejects(scaledDotProductAttention(x, x, x, { out: new Float32Array(3) }), (e) => e instanceof ShapeError && e.argument === 'out');
    assert.ok(sameBits((await mha.forward(x, x, x)).output.data, expected));
  } finally {
    mha.dispose();
  }
});

test('out detached while the call waits (for the core, for the pool): a ShapeError naming out, nothing leaked', async () => {
  const before = await wasmMemoryInUse();
  const q = tensor(filled(3 * 8, 9), [3, 8]);
  const sdpaOut = new Float32Array(3 * 8);
  const sdpa = scaledDotProductAttention(q, q, q, { out: sdpaOut });  // waits for the core
  detach(sdpaOut);
  await assert.rejects(sdpa, (e) => e instanceof ShapeError && e.argument === 'out' && e.actual === 'detached');
  const mha = await moduleWith({ threads: 2 });
  try {
    const x = rows(2, 3, 10);
    const expected = (await mha.forward(x, x, x)).output.data;  // on the pool: its result comes back later
    const out = new Float32Array(2 * 3 * E);
    const call = mha.forward(x, x, x, { out });
    detach(out);
    await assert.rejects(call, (e) => e instanceof ShapeError && e.argument === 'out');
    assert.ok(sameBits((await mha.forward(x, x, x)).output.data, expected));
  } finally {
    mha.dispose();
  }
  assert.equal(await wasmMemoryInUse(), before);
});

// A GPU that answers "no adapter" a moment later: an 'auto' module's first call waits for it.
const slowNoGpu = { requestAdapter: () => new Promise((resolve) => setTimeout(() => resolve(null), 30)) };

test('a cache call that waits (behind a load behind a call looking for the GPU) with out detached meanwhile appends nothing', async () => {
  const mha = await moduleWith({ threads: 1, backend: 'auto', gpu: slowNoGpu, webgpuMinFlops: 0 });
  try {
    const x = rows(2, 3, 13);
    const first = mha.forward(x, x, x);  // waits for the GPU's answer
    mha.loadStateDict(seededStateDict(mha.stateDictShapes, 11));  // waits for that call
    const cache = mha.createCache({ batchSize: 2, maxLength: 8 });
    const step = rows(2, 1, 12);
    const out = new Float32Array(2 * E);
    const waiting = mha.forward(step, step, step, { cache, out });  // waits for the load
    detach(out);
    await first;
    await assert.rejects(waiting, (e) => e instanceof ShapeError && e.argument === 'out' && e.actual === 'detached');
    assert.equal(cache.length, 0);
    const written = new Float32Array(2 * E);
    assert.equal((await mha.forward(step, step, step, { cache, out: written })).output.data, written);
    assert.equal(cache.length, 1);
  } finally {
    mha.dispose();
  }
});
