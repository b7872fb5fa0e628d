// Bind groups are reused (webgpu/bind_groups.js): a call like the one before it makes none, a
// decode step through a cache on GPU tensors makes none either (its small input and results are
// copied through the module's pooled buffers: encoding_context.js SMALL_TENSOR_BYTES), tensors over
// that size are bound as they are and only their groups are made again (a caller's buffer is
// never held by a kept group), the results stay bit for bit those of the first call, and at most
// BIND_GROUPS_KEPT groups are kept per owner, the least recently used dropped first.
// Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { BIND_GROUPS_KEPT, bindGroupFor } from '../../web/src/webgpu/bind_groups.js';
import { SMALL_TENSOR_BYTES } from '../internals.mjs';
import { filled } from '../contract/contract.mjs';
import { freshDevice, pinDefaultsWhereSelecting, randomStateDict } from './node_setup.mjs';
import { gpuTensor } from './gpu_tensor_inputs.mjs';

after(pinDefaultsWhereSelecting().undo);

const E = 32;

// A fresh device whose createBindGroup() calls are counted (count()), and a module on it.
async function countedModule() {
  const gpu = await freshDevice();
  let made = 0;
  const createBindGroup = gpu.createBindGroup;
  gpu.createBindGroup = function (descriptor) {
    made++;
    return createBindGroup.call(this, descriptor);
  };
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 4, numKvHeads: 2, backend: 'webgpu', gpu });
  mha.loadStateDict(randomStateDict(mha.stateDictShapes, 11));
  const count = async (fn) => {
    const before = made;
    const result = await fn();
    return { made: made - before, result };
  };
  return { gpu, mha, count };
}

describe('bind groups are reused', () => {
  test('a host call like the one before it makes no bind group, and gives the same bits', async () => {
    const { gpu, mha, count } = await countedModule();
    const x = { data: filled(3 * E, 12), shape: [1, 3, E] };
    const first = await count(() => mha.forward(x, x, x, { isCausal: true, needWeights: true }));
    const second = await count(() => mha.forward(x, x, x, { isCausal: true, needWeights: true }));
    assert.ok(first.made > 0, 'the first call makes its groups');
    assert.equal(second.made, 0, 'the second makes none');
    assert.deepEqual(second.result.output.data, first.result.output.data);
    assert.deepEqual(second.result.attnWeights.data, first.result.attnWeights.data);
    mha.dispose();
    gpu.destroy();
  });

  test("a decode step on a GPU input with 'gpu-buffer' results makes no group after the first; steps agree with a fresh cache's", async () => {
    const { gpu, mha, count } = await countedModule();
    const x = gpuTensor(filled(E, 13), [1, 1, E], { on: gpu });
    const cache = mha.createCache({ maxLength: 8 });
    const step = () => mha.forward(x, x, x, { cache, output: 'gpu-buffer' });
    const first = await count(step);
    const second = await count(step);
    assert.ok(first.made > 0, 'the first step makes its groups');
    assert.equal(second.made, 0, 'the second step makes none: its input and result are copied through pooled buffers');
    const reference = mha.createCache({ maxLength: 8 });
    for (const _ of [0, 1]) (await mha.forward(x, x, x, { cache: reference, output: 'gpu-buffer' })).output.dispose();
    const [got, want] = [await mha.forward(x, x, x, { cache }), await mha.forward(x, x, x, { cache: reference })];
    assert.deepEqual(got.output.data, want.output.data);
    for (const r of [first.result, second.result]) r.output.dispose();
    x.gpuBuffer.destroy();
    mha.dispose();
    gpu.destroy();
  });

  test(`tensors over ${SMALL_TENSOR_BYTES} bytes are bound as they are: only their groups are made again; the host call's bits`, async () => {
    const { gpu, mha, count } = await countedModule();
    const B = Math.ceil(SMALL_TENSOR_BYTES / (E * 4)) + 1;  // [B, 1, E]: input and output just over the size
    const values = filled(B * E, 14);
    const x = gpuTensor(values, [B, 1, E], { on: gpu });
    const call = () => mha.forward(x, x, x, { output: 'gpu-buffer' });
    const first = await count(call);
    const second = await count(call);
    assert.ok(first.made > 2, 'the first call makes its groups');
    assert.equal(second.made, 2, "the second makes the two that bind the caller's buffers: the input's and the output's");
    const host = await mha.forward({ data: values, shape: [B, 1, E] }, { data: values, shape: [B, 1, E] }, { data: values, shape: [B, 1, E] });
    assert.deepEqual(await second.result.output.read(), host.output.data);
    for (const r of [first.result, second.result]) r.output.dispose();
    x.gpuBuffer.destroy();
    mha.dispose();
    gpu.destroy();
  });

  test(`at most ${BIND_GROUPS_KEPT} groups per owner, the least recently used dropped first; none binding a caller's buffer`, () => {
    let made = 0;
    const device = { createBindGroup: () => ({ serial: made++ }) };
    const [pipeline, owner, other] = [{}, {}, {}];
    const none = new Set();
    const buffers = Array.from({ length: BIND_GROUPS_KEPT + 1 }, () => ({}));
    const group = (buffer, callers = none, at = owner) => bindGroupFor(device, at, callers, pipeline, null, [{ binding: 0, resource: { buffer } }]);
    const oldest = group(buffers[0]);
    const kept = group(buffers[1]);
    for (const b of buffers.slice(2)) group(b);  // one over the bound: buffers[0]'s group goes
    assert.equal(made, BIND_GROUPS_KEPT + 1);
    assert.equal(group(buffers[1]), kept, 'used again before the bound was passed: kept');
    assert.notEqual(group(buffers[0]), oldest, 'the least recently used: made again');
    const sized = bindGroupFor(device, owner, none, pipeline, null, [{ binding: 0, resource: { buffer: buffers[1], size: 64 } }]);
    assert.notEqual(sized, kept, 'another binding size is another group');
    assert.notEqual(group(buffers[1], none, other), kept, 'another owner keeps its own');
    const callers = new Set([buffers[1]]);
    assert.notEqual(group(buffers[1], callers), group(buffers[1], callers), "a group binding a caller's buffer is made each time");
  });
});
