// Cross-attention through mha.encode() (docs/attention-math/decoding.md §9) on WASM: the runs of
// tests/contract/cross_attention.mjs (decoder steps against an encoded cache equal the float64
// reference and the full forward), and every misuse is a typed error naming its argument that
// leaves the cache and the module working.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MultiHeadAttention, wasmMemoryInUse, CacheError, DisposedError, OptionError, ShapeError, StateDictError,
} from '#webattention';
import { randomTensor, rng } from '../contract/contract.mjs';
import { B, FULL_FORWARD_MODULES, REFERENCE_DTYPES, S, fullForwardRun, loadedModule, referenceRun } from '../contract/cross_attention.mjs';

const next = rng(23);
const create = (options) => MultiHeadAttention.create({ threads: 1, ...options });
const loaded = (options) => loadedModule(create, options, next);

for (const dtype of REFERENCE_DTYPES) {
  test(`encode + steps = the float64 cross-attention, widths of their own, ${dtype} cache`, () => referenceRun(create, dtype));
}

// Grouped-query heads and qk-norm, and one tensor for key and value: the full forward with that
// key and value (itself checked against the references by the other suites).
for (const options of FULL_FORWARD_MODULES) {
  test(`encode + steps = the full forward: ${JSON.stringify(options)}, one tensor as key and value`, () => fullForwardRun(create, options));
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
      [() => mha.forward(x, null, null, { cache: encoded, output: 'gpu-buffer' }), OptionError, 'output'],  // a WASM module
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
