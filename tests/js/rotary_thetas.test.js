// RoPE's frequencies are one rule in two languages (issue 36): the core's rotary_frequencies()
// (cpp/src/rotary.cpp, the WASM rotation) and web/src/webgpu/rotary_frequencies.js (the WebGPU
// cos/sin table). This reads the core's θ_j through the binding (mhaRotaryThetas) for bases,
// dims and both scalings, and checks the JS rule gives the same doubles (to an ulp or two: each
// language's pow() may round its last bit its own way).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreMha, coreConfig, resolveMhaConfig } from '../internals.mjs';
import { loadNodeCore } from '../../web/src/node_core.js';
import { pickVariant } from '../../web/src/wasm/variant.js';
import { rotaryFrequencies } from '../../web/src/webgpu/rotary_frequencies.js';

const ROTARIES = [
  {}, { base: 500000 }, { base: 10, dim: 8 }, { dim: 2 },
  { scaling: { type: 'linear', factor: 4 } },
  { base: 500000, scaling: { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositions: 8192 } },
  { base: 10000, scaling: { type: 'llama3', factor: 32, lowFreqFactor: 2, highFreqFactor: 3, originalMaxPositions: 64 } },
];

test('the core\'s RoPE frequencies equal the JS rule\'s, for every base, dim and scaling', async () => {
  const { core } = await loadNodeCore(pickVariant());
  for (const rotary of ROTARIES) {
    const config = resolveMhaConfig({ embedDim: 64, numHeads: 2, rotary });
    const mha = new CoreMha(core);
    try {
      assert.equal(mha.configure(coreConfig(config)), '');
      const js = rotaryFrequencies(config.rotary);
      const native = mha.rotaryThetas(js.length);
      assert.equal(native.length, config.rotary.dim / 2, JSON.stringify(rotary));
      js.forEach((theta, j) => assert.ok(Math.abs(native[j] - theta) <= 4e-16 * theta, `${JSON.stringify(rotary)} θ_${j}: core ${native[j]}, JS ${theta}`));
    } finally {
      mha.delete();
    }
  }
});
