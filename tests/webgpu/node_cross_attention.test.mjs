// Cross-attention on a 'webgpu' module (mha.encode(), docs/attention-math.md §9): the encoded cache
// is stored on the calling thread's WASM (README), so its steps run there, and equal the GPU's
// full forward with the same key and value. Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { compare, randomTensor, rng, seededStateDict } from '../contract/contract.mjs';
import { adapterName, gpu, runs } from './node_setup.mjs';

test(`encode() on backend 'webgpu' (${adapterName}): steps on WASM, equal to the GPU's full forward`, async () => {
  const mha = await api.MultiHeadAttention.create({ embedDim: 32, numHeads: 4, backend: 'webgpu', gpu });
  try {
    mha.loadStateDict(seededStateDict(mha.stateDictShapes, 3));
    const next = rng(5);
    const kv = randomTensor([2, 40, 32], next);
    const query = randomTensor([2, 3, 32], next);
    const encoded = await mha.encode(kv, kv);
    runs.length = 0;
    const step = await mha.forward(query, null, null, { cache: encoded, needWeights: true });
    assert.deepEqual(runs, ['wasm']);
    runs.length = 0;
    const full = await mha.forward(query, kv, kv, { needWeights: true });
    assert.deepEqual(runs, ['webgpu']);
    for (const [got, want] of [[step.output, full.output], [step.attnWeights, full.attnWeights]]) {
      const r = compare(got, want);
      assert.ok(r.ok, r.detail);
    }
  } finally {
    mha.dispose();
  }
});
