// The module choice: SIMD128 where the engine has it, the scalar build when forced (the whole
// suite runs once per module: see scripts/test.sh).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { capabilities, MultiHeadAttention } from 'webattention';
import { pickVariant, simdSupported } from '../../web/src/variant.js';

test('capabilities() reports the module and the default thread count in use', async () => {
  const forced = process.env.WEBATTENTION_WASM;
  const caps = await capabilities();
  assert.equal(caps.backend, 'wasm');
  assert.equal(caps.wasmModule, forced || 'simd');
  assert.equal(caps.simd, caps.wasmModule === 'simd');
  // WEBATTENTION_THREADS=<n> sets the default; else 'auto': min(cores, 4).
  const env = process.env.WEBATTENTION_THREADS;
  assert.equal(caps.threads, env && env !== 'auto' ? Number(env) : Math.min(availableParallelism(), 4));
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2 });
  assert.equal(mha.threads, caps.threads);
  mha.dispose();
});

test('feature detection: Node 20 validates the SIMD probe; forcing works; nonsense is refused', () => {
  assert.equal(simdSupported(), true);
  assert.equal(pickVariant(undefined), 'simd');
  assert.equal(pickVariant('scalar'), 'scalar');
  assert.throws(() => pickVariant('avx512'), /expected 'simd' or 'scalar', got 'avx512'/);
});
