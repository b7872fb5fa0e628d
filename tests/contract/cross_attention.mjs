// Cross-attention through mha.encode() (docs/attention-math/decoding.md §9), the same runs on every backend:
// decoder steps against an encoded cache equal the float64 reference of the full cross-attention
// (keys and values stored as the cache's dtype rounds them), and the full forward with that key and
// value. tests/js/cross_attention.test.js runs them on WASM, tests/webgpu/node_cross_attention.test.mjs
// on a 'webgpu' module, where the cache is stored and attended on the GPU.
import assert from 'node:assert/strict';
import { compare } from './compare.mjs';
import { randomTensor, rng } from './random.mjs';
import { mhaReference } from './reference.mjs';

export const B = 2;
export const S = 19;
/** The cache dtypes checked against the float64 reference. */
export const REFERENCE_DTYPES = ['float32', 'float16', 'int8'];
/** Modules checked against their own full forward: grouped-query heads, qk-norm. */
export const FULL_FORWARD_MODULES = [{ embedDim: 24, numHeads: 4, numKvHeads: 2 }, { embedDim: 16, numHeads: 2, qkNorm: {} }];

/** A module of create(options) (a backend's create()) loaded with random weights: { mha, sd }. */
export async function loadedModule(create, options, next) {
  const mha = await create(options);
  const sd = {};
  for (const { name, shape } of mha.stateDictShapes) sd[name] = randomTensor(shape, next);
  mha.loadStateDict(sd);
  return { mha, sd };
}

// Batch 1's last positions are padding; batch 0 sees them all.
const padding = () => ({ data: Uint8Array.from({ length: B * S }, (_, k) => (k >= S + 14 ? 1 : 0)), shape: [B, S] });

/**
 * Steps of 1, 3 and 2 rows against `encoded`, each against `expected(query, options)` (resolves to
 * { output, weights } data); onStep() after each (a backend's check of where it ran).
 */
export async function checkSteps(mha, encoded, expected, next, onStep = () => {}) {
  const { embedDim, numHeads: H } = mha.config;
  for (const L of [1, 3, 2]) {
    const query = randomTensor([B, L, embedDim], next);
    const o = { keyPaddingMask: padding(), needWeights: true, averageAttnWeights: L !== 3 };
    const got = await mha.forward(query, null, null, { cache: encoded, ...o });
    onStep();
    const want = await expected(query, o);
    const outputs = compare(got.output, { data: want.output, shape: [B, L, embedDim] });
    assert.ok(outputs.ok, `L ${L}, output: ${outputs.detail}`);
    const weights = compare(got.attnWeights, { data: want.weights, shape: o.averageAttnWeights ? [B, L, S] : [B, H, L, S] });
    assert.ok(weights.ok, `L ${L}, weights: ${weights.detail}`);
  }
  assert.equal(encoded.length, S, 'nothing appended');
}

/** Encode with key and value widths of their own into a `dtype` cache; steps against the float64 reference. */
export async function referenceRun(create, dtype, { seed = 23, onStep } = {}) {
  const next = rng(seed);
  const { mha, sd } = await loadedModule(create, { embedDim: 16, numHeads: 4, kdim: 10, vdim: 7 }, next);
  try {
    const key = randomTensor([B, S, 10], next);
    const value = randomTensor([B, S, 7], next);
    const encoded = await mha.encode(key, value, { dtype });
    assert.equal(encoded.encoded, true);
    assert.deepEqual([encoded.length, encoded.batchSize, encoded.dtype], [S, B, dtype]);
    await checkSteps(mha, encoded, (query, o) => mhaReference(mha.config, sd, query, key, value, o, dtype), next, onStep);
  } finally {
    mha.dispose();
  }
}

/** One tensor as key and value, encoded; steps against the module's own full forward with it. */
export async function fullForwardRun(create, options, { seed = 29, onStep } = {}) {
  const next = rng(seed);
  const { mha } = await loadedModule(create, options, next);
  try {
    const kv = randomTensor([B, S, options.embedDim], next);
    const encoded = await mha.encode(kv, kv);
    await checkSteps(mha, encoded, async (query, o) => {
      const full = await mha.forward(query, kv, kv, o);
      return { output: full.output.data, weights: full.attnWeights.data };
    }, next, onStep);
  } finally {
    mha.dispose();
  }
}
