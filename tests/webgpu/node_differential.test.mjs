// The randomized differential test (tests/js/differential.test.js) on backend 'webgpu': seeded
// random MHA configurations without NaN or ±Infinity (WGSL lets a GPU assume there are none), each
// run on the GPU and checked against the float64 reference. Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { randomMhaCase, runCase } from '../contract/contract.mjs';
import { adapterName, gpu, runs } from './node_setup.mjs';

const COUNT = 60;  // SwiftShader runs WGSL on the CPU: a few dozen small calls a second

test(`${COUNT} random finite MHA configurations on WebGPU (${adapterName}) match the float64 reference`, async () => {
  const failures = [];
  for (let seed = 1; seed <= COUNT; seed++) {
    const c = randomMhaCase(seed, { finite: true });
    runs.length = 0;
    try {
      const r = await runCase(api, c, { create: { backend: 'webgpu', gpu } });
      if (!r.ok) failures.push(`seed ${seed}: ${r.detail}`);
      else if (runs.join() !== 'webgpu') failures.push(`seed ${seed}: ran on ${runs.join() || 'nothing'}, not the GPU`);
    } catch (e) {
      failures.push(`seed ${seed}: threw ${e?.name}: ${e?.message}`);
    }
  }
  assert.deepEqual(failures, [], 'replay one with randomMhaCase(seed, { finite: true })');
});
