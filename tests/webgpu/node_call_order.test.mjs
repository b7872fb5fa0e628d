// The order of calls is the order of effects on WebGPU (tests/contract/call_order.mjs, as
// tests/js/call_order.test.js runs it on WASM and the pool): a loadStateDict() made after an
// unawaited forward() never changes the weights that forward computes with, on a module whose
// GPU is in use (backend 'webgpu': calls queue behind earlier GPU calls) and on an 'auto' module
// whose first large call is still looking for its GPU (a software adapter, taken with
// webgpuMinFlops: 0). On 1aa1392 the 'auto' call used the later state dict. Set-up: node_setup.mjs.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { assertLoadAfterCallKeepsOrder } from '../contract/call_order.mjs';
import { sameBits } from '../contract/compare.mjs';
import { gpu, pinDefaultsWhereSelecting, runs } from './node_setup.mjs';

after(pinDefaultsWhereSelecting().undo);

for (const [what, options] of [
  ["backend 'webgpu', its GPU in use", { backend: 'webgpu', gpu }],
  ["backend 'auto', its GPU being looked for", { backend: 'auto', gpu, webgpuMinFlops: 0 }],
]) {
  test(`${what}: a load after an unawaited forward() leaves that forward's weights; calls after it use the new ones`, async () => {
    runs.length = 0;
    await assertLoadAfterCallKeepsOrder(MultiHeadAttention, options, async () => {}, sameBits);
    assert.ok(runs.length > 0 && runs.every((where) => where === 'webgpu'), `every call on the GPU: ${runs}`);
  });
}
