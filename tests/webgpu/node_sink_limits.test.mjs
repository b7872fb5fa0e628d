// Attention sinks at their limits on the WebGPU backend (its sinks kernel rescales each row after
// attention, attention_sinks.wgsl.js): the contract of tests/contract/sink_limits.mjs, as the WASM
// modules and the pool run it (tests/js/sink_limits.test.js), but for a NaN sink, which follows no
// rule on the GPU (docs/webgpu.md). Set-up: node_setup.mjs.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { assertInfiniteSinkRefused, noMassSinkPairs, NO_MASS_SINKS } from '../contract/sink_limits.mjs';
import { gpu, pinDefaultsWhereSelecting, runs } from './node_setup.mjs';

// Calls compared bit for bit run the same kernels (pinned where the GPU selects by measurement).
after(pinDefaultsWhereSelecting().undo);

const onGpu = { backend: 'webgpu', gpu };

test('a +Inf sink (float32, float16 0x7c00, prefixed) is a StateDictError naming it on WebGPU; the module keeps its weights', async () => {
  runs.length = 0;
  await assertInfiniteSinkRefused(api, onGpu);
  assert.ok(runs.length === 4 && runs.every((where) => where === 'webgpu'), `every call on the GPU: ${runs}`);
});

test('a -Inf sink (or the lowest float32) is no sink on WebGPU: the outputs and weights of the module without sinks, a fully masked row included', async () => {
  runs.length = 0;
  for (const sink of NO_MASS_SINKS) {
    for (const { what, actual, expected } of await noMassSinkPairs(api, sink, onGpu)) {
      assert.ok(actual.every((x, i) => Math.abs(x - expected[i]) <= 1e-6 + 1e-5 * Math.abs(expected[i])), `${sink} ${what}: ${actual} vs ${expected}`);
    }
  }
  assert.ok(runs.length === 4 && runs.every((where) => where === 'webgpu'), `every call on the GPU: ${runs}`);
});
