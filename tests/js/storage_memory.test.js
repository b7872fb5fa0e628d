// 16-, 8- and 4-bit storage in WASM memory: after create + loadStateDict, and after createCache, the
// memory in use (wasmMemoryInUse) falls 2× for 16-bit storage, at least 3.5× for int8 and 6× for
// int4 weights (4 + 1 + 1/8 bits per weight: docs/attention-math/storage.md §11), against
// float32 (the README's bytes per cached position: 2·numKvHeads·headDim·(4 | 2 | 1) B, int8 plus
// 2·numKvHeads·4 B of scales).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, wasmMemoryInUse } from '#webattention';

const CREATE = { embedDim: 512, numHeads: 8, numKvHeads: 4, threads: 1 };
const CACHE = { batchSize: 1, maxLength: 4096 };

/** Bytes the module takes once made and loaded, and its cache takes once made. */
async function footprint(weightsDtype, cacheDtype) {
  const before = await wasmMemoryInUse();
  const mha = await MultiHeadAttention.create({ ...CREATE, weightsDtype });
  try {
    mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) =>
      [name, Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => Math.sin(i) * 0.1)])));
    const loaded = await wasmMemoryInUse();
    const cache = mha.createCache({ ...CACHE, dtype: cacheDtype });
    const cached = await wasmMemoryInUse();
    cache.dispose();
    return { weights: loaded - before, cache: cached - loaded };
  } finally {
    mha.dispose();
  }
}

test('weights and cache: 16-bit storage takes half the memory of float32, int8 at most 1 / 3.5 of it, int4 weights 1 / 6', async () => {
  const f32 = await footprint('float32', 'float32');
  const f16 = await footprint('float16', 'float16');
  const bf16 = await footprint('bfloat16', 'float16');
  const i8 = await footprint('int8', 'int8');
  const i4 = await footprint('int4', 'int8');
  // The weights: the matrices halve; the biases (float32 in every module, 0.3 % here) do not.
  for (const [name, narrow] of [['float16', f16], ['bfloat16', bf16]]) {
    assert.ok(f32.weights / narrow.weights >= 1.98, `${name} weights: ${f32.weights} → ${narrow.weights} bytes`);
  }
  assert.ok(f32.weights / i8.weights >= 3.5, `int8 weights: ${f32.weights} → ${i8.weights} bytes`);
  assert.ok(f32.weights / i4.weights >= 6, `int4 weights: ${f32.weights} → ${i4.weights} bytes`);
  assert.ok(f32.cache / f16.cache >= 1.98, `float16 cache: ${f32.cache} → ${f16.cache} bytes`);
  assert.ok(f32.cache / i8.cache >= 3.5, `int8 cache: ${f32.cache} → ${i8.cache} bytes`);
  // Bytes per cached position, as the README gives them (headDim 64, 4 K/V heads).
  const perPosition = (bytes) => bytes / CACHE.maxLength;
  assert.ok(Math.abs(perPosition(f32.cache) - 2 * 4 * 64 * 4) / (2 * 4 * 64 * 4) < 0.05, `${perPosition(f32.cache)} B per position`);
  assert.ok(Math.abs(perPosition(i8.cache) - 2 * 4 * (64 + 4)) / (2 * 4 * 68) < 0.05, `${perPosition(i8.cache)} B per position`);
});
