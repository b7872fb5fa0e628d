// Cross-attention through mha.encode() (docs/attention-math.md §9): decoder steps against an
// encoded cache equal the float64 reference of the full cross-attention (keys and values stored
// as the cache's dtype rounds them), and the full forward with that key and value; every misuse
// is a typed error naming its argument that leaves the cache and the module working.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MultiHeadAttention, wasmMemoryInUse, CacheError, DisposedError, OptionError, ShapeError, StateDictError,
} from '#webattention';
import { compare, mhaReference, randomTensor, rng } from '../contract/contract.mjs';

const next = rng(23);
const B = 2, S = 19;

async function loaded(options) {
  const mha = await MultiHeadAttention.create({ threads: 1, ...options });
  const sd = {};
  for (const { name, shape } of mha.stateDictShapes) sd[name] = randomTensor(shape, next);
  mha.loadStateDict(sd);
  return { mha, sd };
}

// Batch 1's last positions are padding; batch 0 sees them all.
const padding = () => ({ data: Uint8Array.from({ length: B * S }, (_, k) => (k >= S + 14 ? 1 : 0)), shape: [B, S] });

// Steps against `encoded` (made from key and value) and what each must equal: `expected(query,
// options)` resolves to { output, weights } data.
async function checkSteps(mha, encoded, expected) {
  const { embedDim, numHeads: H } = mha.config;
  for (const L of [1, 3, 2]) {
    const query = randomTensor([B, L, embedDim], next);
    const o = { keyPaddingMask: padding(), needWeights: true, averageAttnWeights: L !== 3 };
    const got = await mha.forward(query, null, null, { cache: encoded, ...o });
    const want = await expected(query, o);
    const outputs = compare(got.output, { data: want.output, shape: [B, L, embedDim] });
    assert.ok(outputs.ok, `L ${L}, output: ${outputs.detail}`);
    const weights = compare(got.attnWeights, { data: want.weights, shape: o.averageAttnWeights ? [B, L, S] : [B, H, L, S] });
    assert.ok(weights.ok, `L ${L}, weights: ${weights.detail}`);
  }
  assert.equal(encoded.length, S, 'nothing appended');
}

// The float64 reference, keys and values rounded as each cache dtype stores them.
for (const dtype of ['float32', 'float16', 'int8']) {
  test(`encode + steps = the float64 cross-attention, widths of their own, ${dtype} cache`, async () => {
    const { mha, sd } = await loaded({ embedDim: 16, numHeads: 4, kdim: 10, vdim: 7 });
    try {
      const key = randomTensor([B, S, 10], next);
      const value = randomTensor([B, S, 7], next);
      const encoded = await mha.encode(key, value, { dtype });
      assert.equal(encoded.encoded, true);
      assert.deepEqual([encoded.length, encoded.batchSize, encoded.dtype], [S, B, dtype]);
      await checkSteps(mha, encoded, (query, o) => mhaReference(mha.config, sd, query, key, value, o, dtype));
    } finally {
      mha.dispose();
    }
  });
}

// Grouped-query heads and qk-norm, and one tensor for key and value: the full forward with that
// key and value (itself checked against the references by the other suites).
for (const options of [{ embedDim: 24, numHeads: 4, numKvHeads: 2 }, { embedDim: 16, numHeads: 2, qkNorm: {} }]) {
  test(`encode + steps = the full forward: ${JSON.stringify(options)}, one tensor as key and value`, async () => {
    const { mha } = await loaded(options);
    try {
      const kv = randomTensor([B, S, options.embedDim], next);
      const encoded = await mha.encode(kv, kv);
      await checkSteps(mha, encoded, async (query, o) => {
        const full = await mha.forward(query, kv, kv, o);
        return { output: full.output.data, weights: full.attnWeights.data };
      });
    } finally {
      mha.dispose();
    }
  });
}

test('encode and encoded caches used wrongly: typed errors, the cache and the module still working', async () => {
  const { mha } = await loaded({ embedDim: 16, numHeads: 4 });
  const { mha: other } = await loaded({ embedDim: 16, numHeads: 4 });
  try {
    const kv = randomTensor([B, S, 16], next);
    const x = randomTensor([B, 1, 16], next);
    const encoded = await mha.encode(kv, kv);
    const before = await wasmMemoryInUse();
    const refusals = [
      [() => mha.encode(randomTensor([B, S, 15], next), kv), ShapeError, 'key'],
      [() => mha.encode(kv, randomTensor([B, S + 1, 16], next)), ShapeError, 'value'],
      [() => mha.encode(kv, kv, { dtype: 'bfloat16' }), OptionError, 'dtype'],
      [() => mha.encode(kv, kv, { window: 4 }), OptionError, 'window'],
      [() => mha.forward(x, x, x, { cache: encoded }), CacheError, 'key'],
      [() => mha.forward(x, null, null, { cache: encoded, isCausal: true }), OptionError, 'isCausal'],
      [() => mha.forward(x, null, null, { cache: encoded, attnMask: { data: new Uint8Array(S), shape: [1, S] } }), OptionError, 'attnMask'],
      [() => mha.forward(x, null, null, { cache: encoded, positionIds: { data: new Int32Array(2), shape: [2, 1] } }), OptionError, 'positionIds'],
      [() => mha.forward(x, null, null, { cache: encoded, keyPaddingMask: { data: new Uint8Array(B * (S - 1)), shape: [B, S - 1] } }), ShapeError, 'keyPaddingMask'],
      [() => mha.forward(randomTensor([1, 1, 16], next), null, null, { cache: encoded }), ShapeError, 'query'],
      [() => other.forward(x, null, null, { cache: encoded }), CacheError, 'cache'],
      [() => mha.forward(x, null, null), null, null],  // null key without a cache: the forward's own check
    ];
    for (const [call, type, argument] of refusals) {
      const e = await Promise.resolve().then(call).then(() => null, (error) => error);
      assert.ok(e, `${call}: expected an error`);
      if (type) {
        assert.ok(e instanceof type, `${call}: ${e?.name} ${e?.message}`);
        assert.equal(e.argument, argument, `${call}: ${e.message}`);
      }
    }
    assert.throws(() => encoded.truncate(3), (e) => e instanceof CacheError && /read-only/.test(e.message));
    assert.throws(() => encoded.reset(), (e) => e instanceof CacheError && /read-only/.test(e.message));
    assert.equal(await wasmMemoryInUse(), before, 'failed calls leave the heap as it was');
    const fork = encoded.fork();
    assert.equal(fork.encoded, true);
    const [a, b] = [await mha.forward(x, null, null, { cache: encoded }), await mha.forward(x, null, null, { cache: fork })];
    assert.deepEqual(a.output.data, b.output.data);
    const { key, value } = await encoded.read();
    assert.deepEqual([key.shape, value.shape], [[B, 4, S, 4], [B, 4, S, 4]]);
    fork.dispose();
    await assert.rejects(() => mha.forward(x, null, null, { cache: fork }), DisposedError);

    const rotary = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, rotary: {} });
    await assert.rejects(() => rotary.encode(kv, kv), (e) => e instanceof OptionError && e.argument === 'rotary');
    rotary.dispose();
    const empty = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4 });
    await assert.rejects(() => empty.encode(kv, kv), StateDictError);
    empty.dispose();
  } finally {
    mha.dispose();
    other.dispose();
  }
});
