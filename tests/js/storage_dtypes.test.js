// 16- and 8-bit storage through the public API against the float64 reference that rounds and
// dequantises as the module stores (tests/contract/storage.mjs), at the contract's tolerance:
// random MHA configurations per weightsDtype (state dicts given as float32 and as 16-bit tensors),
// random decode sequences per weightsDtype × cache dtype, and 16-bit inputs and outputs; huge
// finite inputs (1e32 to 3e38) with int8 and int4 weights and an int8 cache, against the float32
// twin of the stored values (kernels/large_rows.h).
// scripts/test.sh runs tests/js on every single-threaded module and on the worker pool
// (WEBATTENTION_THREADS=2), so these run there too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { compare, randomDecodeCase, randomMhaCase, randomTensor, rng, runCase } from '../contract/contract.mjs';
import { roundToHalf, widenHalf } from '../../web/src/storage/half_floats.js';
import { halfStateDict as halfSd } from '../internals.mjs';
import { storedStateDict } from '../contract/storage.mjs';

const WEIGHTS = ['float32', 'float16', 'bfloat16', 'int8', 'int4'];
const CACHES = ['float32', 'float16', 'int8'];
const SEEDS = 40;

// 16-bit state dicts: float16 tagged with the safetensors spelling 'F16', bfloat16 as 'bfloat16'.
const halfStateDict = (stateDict, dtype) => halfSd(stateDict, dtype, dtype === 'float16' ? 'F16' : 'bfloat16');

for (const weightsDtype of WEIGHTS) {
  test(`${SEEDS} random MHA configurations with ${weightsDtype} weights match the reference of the stored weights`, async () => {
    const failures = [];
    for (let seed = 1; seed <= SEEDS; seed++) {
      const c = randomMhaCase(seed, { weightsDtype });
      // Every other seed: a 16-bit module given its own kind of 16-bit tensors (kept as given).
      if (weightsDtype.endsWith('float16') && seed % 2 === 0) c.stateDict = halfStateDict(c.stateDict, weightsDtype);
      const r = await runCase(api, c);
      if (!r.ok) failures.push(`${c.name}: ${r.detail}`);
    }
    assert.deepEqual(failures, []);
  });
}

for (const weightsDtype of WEIGHTS) {
  for (const cacheDtype of CACHES) {
    test(`random decode sequences: ${weightsDtype} weights, ${cacheDtype} cache, against the reference of the stored keys and values`, async () => {
      const failures = [];
      for (let seed = 1; seed <= 12; seed++) {
        const c = randomDecodeCase(seed, { weightsDtype, cacheDtype });
        const r = await runCase(api, c);
        if (!r.ok) failures.push(`${c.name}: ${r.detail}`);
      }
      assert.deepEqual(failures, []);
    });
  }
}

test('the stored values matter: an int8 module differs from the float32 one by more than the tolerance', async () => {
  const c = randomMhaCase(3, { weightsDtype: 'int8' });
  const f32 = randomMhaCase(3);
  assert.ok(!compare({ data: c.expected.output.data, shape: c.expected.output.shape }, f32.expected.output).ok,
    'the int8 reference equals the float32 one: the cases would not tell the storage apart');
});

test('16-bit inputs: widened exactly, float16 in gives float16 out (output and weights), bfloat16 likewise', async () => {
  const next = rng(11);
  const x = randomTensor([2, 5, 8], next);
  const mha = await api.MultiHeadAttention.create({ embedDim: 8, numHeads: 2 });
  try {
    mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, randomTensor(shape, next)])));
    for (const dtype of ['float16', 'bfloat16']) {
      const bits = roundToHalf(dtype, x.data);
      const widened = { data: widenHalf(dtype, bits), shape: x.shape };
      const want = await mha.forward(widened, widened, widened, { needWeights: true });
      const forms = [{ data: bits, shape: x.shape, dtype }, { data: bits, dims: x.shape, type: dtype }];
      if (dtype === 'float16') forms.push({ data: bits, shape: x.shape, dtype: 'F16' });
      for (const half of forms) {
        const got = await mha.forward(half, half, half, { needWeights: true });
        for (const key of ['output', 'attnWeights']) {
          assert.equal(got[key].dtype, dtype, key);
          assert.ok(got[key].data instanceof Uint16Array, key);
          assert.deepEqual(got[key].shape, want[key].shape, key);
          assert.deepEqual([...got[key].data], [...roundToHalf(dtype, want[key].data)], `${key}: the float32 result rounded`);
        }
      }
      const sdpa = await api.scaledDotProductAttention({ data: bits, shape: x.shape, dtype }, { data: bits, shape: x.shape, dtype }, { data: bits, shape: x.shape, dtype });
      assert.deepEqual([...sdpa.output.data], [...roundToHalf(dtype, (await api.scaledDotProductAttention(widened, widened, widened)).output.data)]);
      const self = await api.selfAttention({ data: bits, shape: x.shape, dtype: dtype === 'float16' ? 'F16' : 'BF16' });
      assert.equal(self.output.dtype, dtype);
    }
  } finally {
    mha.dispose();
  }
});

test('weightsDtype and the cache dtype are reported; a 16-bit module keeps 16-bit weights bit for bit', async () => {
  const mha = await api.MultiHeadAttention.create({ embedDim: 4, numHeads: 1, weightsDtype: 'bfloat16' });
  try {
    assert.equal(mha.config.weightsDtype, 'bfloat16');
    const cache = mha.createCache({ maxLength: 4, dtype: 'float16' });
    assert.equal(cache.dtype, 'float16');
    assert.equal(mha.createCache({ maxLength: 4 }).dtype, 'float32');
    // W = I as bfloat16 bits, no bias: the output projection of V is exact, so values that are
    // bfloat16 already come out unchanged; an f32 value between two bfloat16 ones does not.
    const eye = (n) => Uint16Array.from({ length: n * n }, (_, i) => (i % (n + 1) === 0 ? 0x3f80 : 0));
    const eye3 = new Uint16Array(48);
    eye3.set(eye(4), 0); eye3.set(eye(4), 16); eye3.set(eye(4), 32);
    mha.loadStateDict({
      in_proj_weight: { data: eye3, shape: [12, 4], dtype: 'BF16' },
      in_proj_bias: new Float32Array(12),
      'out_proj.weight': { data: eye(4), shape: [4, 4], dtype: 'bfloat16' },
      'out_proj.bias': new Float32Array(4),
    });
    const x = { data: Float32Array.of(1.5, -2, 0.25, 3), shape: [1, 4] };
    assert.deepEqual([...(await mha.forward(x, x, x)).output.data], [1.5, -2, 0.25, 3]);
  } finally {
    mha.dispose();
  }
});

test('16-bit weights given to a float32 or int8 module are widened exactly first: the same module as their float32 values', async () => {
  const next = rng(21);
  const x = randomTensor([3, 40], next);
  for (const weightsDtype of ['float32', 'int8', 'bfloat16']) {
    for (const dtype of ['float16', 'bfloat16']) {
      if (weightsDtype === 'bfloat16' && dtype === 'float16') continue;  // the other 16-bit kind: a DTypeError (storage_hostile)
      const a = await api.MultiHeadAttention.create({ embedDim: 40, numHeads: 4, weightsDtype });
      const b = await api.MultiHeadAttention.create({ embedDim: 40, numHeads: 4, weightsDtype });
      try {
        const halves = Object.fromEntries(a.stateDictShapes.map(({ name, shape }) =>
          [name, { data: roundToHalf(dtype, randomTensor(shape, next).data), shape, dtype }]));
        a.loadStateDict(halves);
        b.loadStateDict(Object.fromEntries(Object.entries(halves).map(([name, t]) => [name, { data: widenHalf(dtype, t.data), shape: t.shape }])));
        assert.deepEqual((await a.forward(x, x, x)).output, (await b.forward(x, x, x)).output, `${dtype} into ${weightsDtype}`);
      } finally {
        a.dispose();
        b.dispose();
      }
    }
  }
});

test('prefill over 16-bit weights is bit for bit the float32 module given the same values (projections widened exactly, f32 loop)', async () => {
  const next = rng(23);
  // 9 rows: two 4-row blocks and a short one; E = 44: a last panel of 4 columns.
  const x = randomTensor([9, 44], next);
  for (const dtype of ['float16', 'bfloat16']) {
    const half = await api.MultiHeadAttention.create({ embedDim: 44, numHeads: 4, weightsDtype: dtype });
    const f32 = await api.MultiHeadAttention.create({ embedDim: 44, numHeads: 4 });
    try {
      const weights = Object.fromEntries(half.stateDictShapes.map(({ name, shape }) => {
        const data = randomTensor(shape, next).data;
        return [name, { data: shape.length === 2 ? widenHalf(dtype, roundToHalf(dtype, data)) : data, shape }];
      }));
      half.loadStateDict(weights);
      f32.loadStateDict(weights);
      assert.deepEqual((await half.forward(x, x, x)).output, (await f32.forward(x, x, x)).output, dtype);
    } finally {
      half.dispose();
      f32.dispose();
    }
  }
});

// Huge finite inputs: the int8 and int4 kernels multiply x by integer codes and scale each
// block's sum afterwards, so their sums overflowed (NaN rows from |x| ≈ 5e31 in the SIMD modules,
// ≈ 5e37 for int4) where the float32 module over the stored weights stays finite. A prefill of 3
// rows (4-row blocks) and a decode step after it (one row: the pair readers), against that twin.
// In the query and the keys: softmax brings the outputs back to the values' size. (A huge value
// row's output is out_proj's sum of huge terms that cancel, whose roundings the outputs' relative
// tolerance cannot bound: tests/cpp/large_inputs_test.cpp checks the projections themselves.)
const HUGE = [1e32, -1e36, 3e38];
for (const weightsDtype of ['int8', 'int4']) {
  test(`${weightsDtype} weights: a huge finite input value gives the float32 module's output over the stored weights`, async () => {
    const next = rng(43);
    const create = { embedDim: 40, numHeads: 2 };
    const narrow = await api.MultiHeadAttention.create({ ...create, weightsDtype });
    const twin = await api.MultiHeadAttention.create(create);
    try {
      const stateDict = Object.fromEntries(narrow.stateDictShapes.map(({ name, shape }) => [name, randomTensor(shape, next)]));
      narrow.loadStateDict(stateDict);
      twin.loadStateDict(Object.fromEntries(Object.entries(storedStateDict(stateDict, weightsDtype))
        .map(([name, t]) => [name, { data: Float32Array.from(t.data), shape: t.shape }])));
      const failures = [];
      for (const which of ['query', 'key']) {
        for (const huge of HUGE) {
          const rows = { query: randomTensor([1, 4, 40], next), key: randomTensor([1, 4, 40], next), value: randomTensor([1, 4, 40], next) };
          rows[which].data[1 * 40 + 7] = huge;   // the prefill's row 1
          rows[which].data[3 * 40 + 33] = huge;  // the decode step's row
          const outputs = [];
          for (const mha of [narrow, twin]) {
            const cache = mha.createCache({ maxLength: 4 });
            const part = (t, from, to) => ({ data: t.data.slice(from * 40, to * 40), shape: [1, to - from, 40] });
            const prefill = await mha.forward(part(rows.query, 0, 3), part(rows.key, 0, 3), part(rows.value, 0, 3), { cache });
            const step = await mha.forward(part(rows.query, 3, 4), part(rows.key, 3, 4), part(rows.value, 3, 4), { cache });
            outputs.push({ data: Float32Array.of(...prefill.output.data, ...step.output.data), shape: [4, 40] });
            cache.dispose();
          }
          assert.ok(outputs[1].data.every(Number.isFinite), `${huge} in ${which}: the float32 twin is finite`);
          const r = compare(outputs[0], outputs[1]);
          if (!r.ok) failures.push(`${huge} in ${which}: ${r.detail}`);
        }
      }
      assert.deepEqual(failures, []);
    } finally {
      narrow.dispose();
      twin.dispose();
    }
  });
}

// Rows of 40 whose every aligned group of 10 (a head's key or value row) is int8 codes times
// 2^-10 with a ±127 in it: an int8 cache stores them exactly, so a float32 cache holding the same
// values is its twin. Features 3 and 23 differ from row to row (a huge query element there picks
// one key clearly).
function int8ExactRows(rows, next) {
  const data = new Float32Array(rows * 40);
  for (let r = 0; r < rows; r++) {
    for (let f = 0; f < 40; f++) data[r * 40 + f] = Math.round(next() * 252) / 1024;
    for (let g = 0; g < 4; g++) data[r * 40 + g * 10 + 7] = (r % 2 ? 127 : -127) / 1024;
    data[r * 40 + 3] = (10 * r - 60) / 1024;
    data[r * 40 + 23] = (30 - 9 * r) / 1024;
  }
  return { data, shape: [1, rows, 40] };
}

// Projections that copy their input: each head's query, key and value are the input's features.
function identityStateDict(mha) {
  return Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    if (shape.length === 2) for (let r = 0; r < shape[0]; r++) data[r * shape[1] + (r % shape[1])] = 1;
    return [name, { data, shape }];
  }));
}

test('an int8 cache with a huge finite query value gives what a float32 cache of the same values gives', async () => {
  const next = rng(44);
  const failures = [];
  for (const numKvHeads of [4, 2]) {  // one query row per K/V head, and GQA groups of 2
    const mha = await api.MultiHeadAttention.create({ embedDim: 40, numHeads: 4, numKvHeads });
    try {
      mha.loadStateDict(identityStateDict(mha));
      const keys = int8ExactRows(5, next);
      for (const huge of HUGE) {
        for (const length of [1, 3]) {  // a decode step, a chunk
          const query = randomTensor([1, length, 40], next, 0.1);
          query.data[3] = huge;
          query.data[(length - 1) * 40 + 23] = -huge;
          const kv = int8ExactRows(length, next);
          const outputs = [];
          for (const dtype of ['int8', 'float32']) {
            const cache = mha.createCache({ maxLength: 8, dtype });
            await mha.forward(keys, keys, keys, { cache });
            outputs.push((await mha.forward(query, kv, kv, { cache })).output);
            cache.dispose();
          }
          assert.ok(outputs[1].data.every(Number.isFinite), `${huge}: the float32 cache's output is finite`);
          const r = compare(outputs[0], outputs[1]);
          if (!r.ok) failures.push(`${numKvHeads} K/V heads, ${huge}, ${length} rows: ${r.detail}`);
        }
      }
    } finally {
      mha.dispose();
    }
  }
  assert.deepEqual(failures, []);
});
