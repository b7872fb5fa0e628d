// The KV cache on the GPU in Node: every PyTorch decode fixture (chunked prefill and decode
// steps, GQA, both RoPE layouts, windows and a ring that wraps, padding, batches, weights) on
// backend 'webgpu', each step checked to have run on the GPU. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { runCase } from '../contract/contract.mjs';
import { loadFixtures } from '../js/fixtures.js';
import { gpu, runs } from './node_setup.mjs';

const decodeCases = loadFixtures().filter((c) => c.kind === 'decode');

describe('KV cache on WebGPU: PyTorch decode fixtures', () => {
  test('the decode fixtures are there', () => assert.ok(decodeCases.length >= 16, `${decodeCases.length} cases`));

  for (const c of decodeCases) {
    test(`webgpu decode parity with PyTorch: ${c.name}`, async () => {
      runs.length = 0;
      const r = await runCase(api, c, { create: { backend: 'webgpu', gpu } });
      assert.ok(r.ok, r.detail);
      assert.equal(r.backend, 'webgpu');
      // run_decode.mjs feeds the sequence twice (the second time after reset()).
      assert.deepEqual(runs, [...c.chunks, ...c.chunks].map(() => 'webgpu'), 'every step ran on the GPU');
    });
  }
});
