// The order of calls is the order of effects (issue 34): a loadStateDict() made after an
// unawaited forward() never changes the weights that forward computes with, whatever the module
// was waiting for when the forward was made: its workers (threads: 2, before and after they are
// up) or its GPU (backend 'auto' looking for one). On 1aa1392 a forward made before the workers
// were up, or while the GPU was looked for, computed with the later state dict.
// tests/webgpu/node_call_order.test.mjs runs the same sequence with a real (software) GPU.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { sameBits } from '../contract/compare.mjs';
import { assertLoadAfterCallKeepsOrder } from '../contract/call_order.mjs';

// A GPU that answers "no adapter" a moment later: an 'auto' module's first large call waits for it.
const slowNoGpu = { requestAdapter: () => new Promise((resolve) => setTimeout(() => resolve(null), 30)) };

const READINESS = [
  ['threads: 2, workers starting', { threads: 2 }, async () => {}],
  ['threads: 2, workers up', { threads: 2 }, async (mha, x) => { await mha.forward(x, x, x); }],
  ["backend 'auto', its GPU being looked for", { backend: 'auto', gpu: slowNoGpu, webgpuMinFlops: 0 }, async () => {}],
  ['threads: 1', { threads: 1 }, async () => {}],
];

for (const [what, options, prepare] of READINESS) {
  test(`${what}: a load after an unawaited forward() leaves that forward's weights; calls after it use the new ones`, async () => {
    await assertLoadAfterCallKeepsOrder(MultiHeadAttention, options, prepare, sameBits);
  });
}
