// Inputs a hostile or careless caller passes: requests past what a WASM heap holds, sizes that
// wrap 32-bit arithmetic, arrays from another realm or lying about their type, arrays changed or
// detached after the call, odd option values. Each case failed before its fix; after each, the
// next valid call must still be right (the heap untouched).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import vm from 'node:vm';
import {
  MultiHeadAttention, scaledDotProductAttention, selfAttention, wasmMemoryInUse,
  DTypeError, MemoryError, OptionError, ShapeError,
} from '#webattention';
import { randomTensor, rng } from '../contract/contract.mjs';
import { pickVariant } from '../internals.mjs';

// One valid call first: the core's first call allocates what later calls reuse.
await selfAttention({ data: new Float32Array([1, 0, 0, 1]), shape: [2, 2] });

const zeros = (...shape) => ({ data: new Float32Array(shape.reduce((a, b) => a * b, 1)), shape });

/** A valid self-attention whose answer is known: the module still works (and nothing leaked). */
async function stillWorks() {
  const before = await wasmMemoryInUse();
  const x = { data: new Float32Array([1, 0, 0, 1]), shape: [2, 2] };
  const { output } = await selfAttention(x);
  const e = Math.exp(1 / Math.SQRT2);
  assert.ok(Math.abs(output.data[0] - e / (e + 1)) < 1e-6, `output ${output.data}`);
  assert.equal(await wasmMemoryInUse(), before);
}

test('a request of 4 GiB or more is a MemoryError naming its bytes, and the heap is untouched', async () => {
  await assert.rejects(
    () => scaledDotProductAttention(zeros(65536, 1), zeros(16384, 1), zeros(16384, 1), { needWeights: true }),
    (e) => e instanceof MemoryError && /needs 4295622656 bytes/.test(e.message) && e.actual === 4295622656);
  await assert.rejects(() => selfAttention(zeros(100000, 1), { returnWeights: true }), MemoryError);
  await stillWorks();
  for (const [options, B, L, forwardOptions] of [
    [{ embedDim: 64, numHeads: 64 }, 1, 4096, { needWeights: true, averageAttnWeights: false }],  // 2^32 bytes exactly
    [{ embedDim: 1, numHeads: 1 }, 64, 4096, { needWeights: true }],
  ]) {
    const mha = await MultiHeadAttention.create(options);
    try {
      mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, zeros(...shape)])));
      const x = zeros(B, L, options.embedDim);
      await assert.rejects(() => mha.forward(x, x, x, forwardOptions), MemoryError, JSON.stringify(options));
      const small = zeros(1, 2, options.embedDim);
      assert.deepEqual((await mha.forward(small, small, small)).output.shape, [1, 2, options.embedDim]);
    } finally {
      mha.dispose();
    }
  }
  await stillWorks();
});

test('a module whose weights cannot fit a WASM heap is an OptionError at create(), before the core sees 32-bit sizes', async () => {
  for (const options of [{ embedDim: 1e10, numHeads: 1 }, { embedDim: 1, numHeads: 65536, headDim: 65536, valueHeadDim: 1 }]) {
    await assert.rejects(() => MultiHeadAttention.create(options),
      (e) => e instanceof OptionError && /the weights need [\d.e+]+ bytes, more than a WASM heap holds/.test(e.message), JSON.stringify(options));
  }
  await stillWorks();
});

test('a boolean mask from another realm is a boolean mask', async () => {
  const q = { data: new Float32Array([1, 0]), shape: [1, 2] };
  const k = { data: new Float32Array([1, 0, 0, 1]), shape: [2, 2] };
  const v = { data: new Float32Array([1, 2, 5, 6]), shape: [2, 2] };
  const local = await scaledDotProductAttention(q, k, v, { attnMask: { data: new Uint8Array([0, 1]), shape: [1, 2] } });
  const foreign = await scaledDotProductAttention(q, k, v, { attnMask: { data: vm.runInNewContext('new Uint8Array([0, 1])'), shape: [1, 2] } });
  assert.deepEqual(Array.from(foreign.output.data), [1, 2]);
  assert.deepEqual(Array.from(foreign.output.data), Array.from(local.output.data));
});

test('a Float32Array from another realm is float data', async () => {
  const x = { data: vm.runInNewContext('new Float32Array([1, 0, 0, 1])'), shape: [2, 2] };
  const { output } = await selfAttention(x);
  const e = Math.exp(1 / Math.SQRT2);
  assert.ok(Math.abs(output.data[0] - e / (e + 1)) < 1e-6);
});

test('a typed array is taken for what it is, not for its constructor name or an overridden length', async () => {
  class Named extends Uint8Array {}
  Object.defineProperty(Named, 'name', { value: 'Float32Array' });
  await assert.rejects(() => selfAttention({ data: new Named(8), shape: [4, 2] }),
    (e) => e instanceof DTypeError && /expected Float32Array or Uint16Array \(16-bit floats, with a dtype\), got Uint8Array\(8\)/.test(e.message));
  class Long extends Float32Array {
    get length() { return 1 << 20; }
  }
  await assert.rejects(() => selfAttention({ data: new Long(8), shape: [1024, 1024] }),
    (e) => e instanceof ShapeError && /data has 8/.test(e.message));
  await stillWorks();
});

test('a detached input is a ShapeError that says so', async () => {
  const x = new Float32Array(8);
  structuredClone(x.buffer, { transfer: [x.buffer] });
  await assert.rejects(() => selfAttention({ data: x, shape: [4, 2] }),
    (e) => e instanceof ShapeError && /detached/.test(e.message));
  await stillWorks();
});

/** A module with seeded weights, and the results of forward() on each input under threads: 1. */
async function seeded(threads) {
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, threads });
  const next = rng(11);
  mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, randomTensor(shape, next)])));
  return mha;
}

test('inputs are read when forward() is called, also while a threads: 2 module waits for its workers', async () => {
  const reference = await seeded(1);
  const pooled = await seeded(2);
  try {
    const x = { data: new Float32Array(2 * 3 * 8), shape: [2, 3, 8] };
    const expected = [];
    const calls = [];
    for (const i of [0, 1, 2]) {
      x.data.forEach((_, j) => { x.data[j] = Math.sin(i + j); });
      expected.push((await reference.forward(x, x, x)).output.data);
      x.data.forEach((_, j) => { x.data[j] = Math.sin(i + j); });
      calls.push(pooled.forward(x, x, x));
    }
    const got = await Promise.all(calls);
    got.forEach(({ output }, i) => {
      const diff = Math.max(...output.data.map((v, j) => Math.abs(v - expected[i][j])));
      assert.ok(diff < 1e-5, `call ${i}: max |diff| ${diff}`);
    });
  } finally {
    reference.dispose();
    pooled.dispose();
  }
});

test('an input detached right after forward() was called does not change or break the call', async () => {
  const mha = await seeded(2);
  try {
    const x = { data: Float32Array.from({ length: 2 * 3 * 8 }, (_, j) => Math.cos(j)), shape: [2, 3, 8] };
    const expected = (await mha.forward({ ...x, data: x.data.slice() }, { ...x, data: x.data.slice() }, { ...x, data: x.data.slice() })).output.data;
    const call = mha.forward(x, x, x);
    structuredClone(x.data.buffer, { transfer: [x.data.buffer] });
    const { output } = await call;
    assert.deepEqual(Array.from(output.data), Array.from(expected));
  } finally {
    mha.dispose();
  }
});

test('option values print as what they are: NaN, Infinity, a BigInt', async () => {
  for (const [value, shown] of [[NaN, 'number NaN'], [Infinity, 'number Infinity'], [8n, 'bigint 8n']]) {
    await assert.rejects(() => MultiHeadAttention.create({ embedDim: value, numHeads: 1 }),
      (e) => e instanceof OptionError && e.message.includes(`got ${shown}`), String(value));
  }
});

test('an unknown WEBATTENTION_WASM is an OptionError', () => {
  assert.throws(() => pickVariant('bogus'), (e) => e instanceof OptionError && e.argument === 'WEBATTENTION_WASM');
});

test("forward() before loadStateDict() names the JS method, not PyTorch's", async () => {
  const mha = await MultiHeadAttention.create({ embedDim: 4, numHeads: 1 });
  try {
    await assert.rejects(() => mha.forward(zeros(1, 2, 4), zeros(1, 2, 4), zeros(1, 2, 4)), /call loadStateDict\(\) first/);
  } finally {
    mha.dispose();
  }
});

test('a NaN in a query gives a NaN row (output and weights), as in PyTorch; fully masked rows still give zeros', async () => {
  const mha = await MultiHeadAttention.create({ embedDim: 2, numHeads: 1 });
  try {
    const identity = [1, 0, 0, 1];
    mha.loadStateDict({
      in_proj_weight: { data: new Float32Array([...identity, ...identity, ...identity]), shape: [6, 2] },
      in_proj_bias: { data: new Float32Array(6), shape: [6] },
      'out_proj.weight': { data: new Float32Array(identity), shape: [2, 2] },
      'out_proj.bias': { data: new Float32Array([0.5, -0.5]), shape: [2] },
    });
    const query = { data: new Float32Array([NaN, 1, 1, 0]), shape: [1, 2, 2] };
    const key = { data: new Float32Array([1, 0, 0, 1]), shape: [1, 2, 2] };
    const { output, attnWeights } = await mha.forward(query, key, key, { needWeights: true });
    assert.ok(output.data.slice(0, 2).every(Number.isNaN), `row 0: ${output.data.slice(0, 2)}`);
    assert.ok(attnWeights.data.slice(0, 2).every(Number.isNaN), `weights row 0: ${attnWeights.data.slice(0, 2)}`);
    assert.ok(output.data.slice(2).every(Number.isFinite), 'row 1 is untouched');
    // A NaN key where the row also has finite scores: NaN as well.
    const nanKey = { data: new Float32Array([1, 0, NaN, 1]), shape: [1, 2, 2] };
    const mixed = await mha.forward(key, nanKey, nanKey);
    assert.ok(mixed.output.data.every(Number.isNaN), `${mixed.output.data}`);
    // Every key masked: the documented zero (output = out_proj.bias), not NaN.
    const masked = await mha.forward(key, key, key, { keyPaddingMask: { data: new Uint8Array([1, 1]), shape: [1, 2] }, needWeights: true });
    assert.deepEqual(Array.from(masked.output.data), [0.5, -0.5, 0.5, -0.5]);
    assert.deepEqual(Array.from(masked.attnWeights.data), [0, 0, 0, 0]);
  } finally {
    mha.dispose();
  }
});

test("a call whose internal scratch cannot be addressed is a MemoryError from the core, sizes named, and the module still works", async () => {
  // Wide heads on tiny inputs: the projections' scratch is (L + S)·h·d_k = 2^32 floats, though
  // (plus the values' and heads' (L + S)·h·d_v) though every input and output is small (it wrapped 32-bit size_t arithmetic in the core before).
  const mha = await MultiHeadAttention.create({ embedDim: 1, numHeads: 64, headDim: 32768, valueHeadDim: 1 });
  try {
    mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, zeros(...shape)])));
    await assert.rejects(() => mha.forward(zeros(1, 1024, 1), zeros(1, 1024, 1), zeros(1, 1024, 1)),
      (e) => e instanceof MemoryError && /scratch needs 4295098368 floats/.test(e.message));
    const { output } = await mha.forward(zeros(1, 2, 1), zeros(1, 2, 1), zeros(1, 2, 1));
    assert.deepEqual(Array.from(output.data), [0, 0]);
  } finally {
    mha.dispose();
  }
  await stillWorks();
});
