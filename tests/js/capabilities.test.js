// The module choice: relaxed SIMD where the engine has it (Node 20: only with
// --experimental-wasm-relaxed-simd), else SIMD128, the scalar build when forced (the whole suite
// runs once per module: see scripts/test.sh).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { capabilities, MultiHeadAttention } from '#webattention';
import { pickVariant, relaxedSimdSupported, simdSupported } from '../internals.mjs';

const relaxedFlag = process.execArgv.includes('--experimental-wasm-relaxed-simd');

test('capabilities() reports the module and the default thread count in use', async () => {
  const forced = process.env.WEBATTENTION_WASM;
  const caps = await capabilities();
  assert.equal(caps.backend, 'wasm');
  assert.equal(caps.wasmModule, forced || (relaxedSimdSupported() ? 'relaxed' : 'simd'));
  assert.equal(caps.simd, caps.wasmModule !== 'scalar');
  assert.equal(caps.relaxedSimdSpeedup, null, 'Node picks by features alone: nothing measured');
  assert.equal(caps.relaxedDotSpeedup, null);
  // WEBATTENTION_THREADS=<n> sets the default; else 'auto': min(cores, 4).
  const env = process.env.WEBATTENTION_THREADS;
  assert.equal(caps.threads, env && env !== 'auto' ? Number(env) : Math.min(availableParallelism(), 4));
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2 });
  assert.equal(mha.threads, caps.threads);
  mha.dispose();
});

test('feature detection: Node 20 validates the SIMD probe, and the relaxed-SIMD probe only with its flag; forcing works; nonsense is refused', () => {
  assert.equal(simdSupported(), true);
  const nodeMajor = Number(process.versions.node.split('.')[0]);
  if (relaxedFlag) assert.equal(relaxedSimdSupported(), true);
  else if (nodeMajor === 20) assert.equal(relaxedSimdSupported(), false);
  assert.equal(pickVariant(undefined), relaxedSimdSupported() ? 'relaxed' : 'simd');
  assert.equal(pickVariant('scalar'), 'scalar');
  assert.equal(pickVariant('simd'), 'simd');
  assert.throws(() => pickVariant('avx512'), /expected 'simd' or 'relaxed' or 'scalar', got 'avx512'/);
});
