// Attention sinks at their limits on the WASM modules and the worker pool: the contract of
// tests/contract/sink_limits.mjs (tests/webgpu/node_sink_limits.test.mjs runs it on WebGPU).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { assertInfiniteSinkRefused, noMassSinkPairs, NO_MASS_SINKS, nanSinkRows } from '../contract/sink_limits.mjs';

test('a +Inf sink (float32, float16 0x7c00, prefixed) is a StateDictError naming it; the module keeps its weights', () =>
  assertInfiniteSinkRefused(api));

test('a -Inf sink (or the lowest float32) is no sink: the outputs and weights of the module without sinks, a fully masked row included', async () => {
  for (const sink of NO_MASS_SINKS) {
    for (const { what, actual, expected } of await noMassSinkPairs(api, sink)) {
      assert.ok(actual.every((x, i) => Math.abs(x - expected[i]) <= 1e-6 + 1e-5 * Math.abs(expected[i])), `${sink} ${what}`);
    }
  }
});

test('a NaN sink makes its head\'s rows NaN, as any NaN input does; the other head stays finite', async () => {
  const { head0, head1, output } = await nanSinkRows(api);
  assert.ok(head0.every(Number.isFinite), `head 0: ${head0}`);
  assert.ok(head1.every(Number.isNaN), `head 1: ${head1}`);
  assert.ok(output.every(Number.isNaN), `output: ${output}`);
});
