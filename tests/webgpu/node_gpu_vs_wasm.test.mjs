// WebGPU vs WASM in Node on shapes the fixtures do not reach (tiles, causal, wide head dims, fully
// masked rows), pipeline caching and loadStateDict(). Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, StateDictError } from '#webattention';
import { filled } from '../contract/contract.mjs';
import { DECODE_MAX_L, pipelineCount } from '../internals.mjs';
import { boolMask, checkAgainstFixture, device, fixtures, gpu, gpuMatchesWasm, pinDefaultsWhereSelecting, randomStateDict } from './node_setup.mjs';

describe('WebGPU vs WASM on shapes the fixtures do not reach', () => {
  test('several query and key tiles (L 70, S 130, d_k 32), weights per head', () => gpuMatchesWasm({
    create: { embedDim: 64, numHeads: 2 }, B: 2, L: 70, S: 130,
    options: { needWeights: true, averageAttnWeights: false },
  }));

  test('causal self-attention across tiles (L = S = 150), fused Q/K/V projection, averaged weights', () => gpuMatchesWasm({
    create: { embedDim: 32, numHeads: 4 }, B: 1, L: 150, S: 150, self: true,
    options: { isCausal: true, needWeights: true },
  }));

  test('wide free head dims (d_k 48, d_v 80: 32-key tiles), key === value (fused K/V projection)', () => gpuMatchesWasm({
    create: { embedDim: 24, numHeads: 3, kdim: 20, vdim: 20, headDim: 48, valueHeadDim: 80 }, B: 2, L: 9, S: 77, kvSame: true,
    options: { keyPaddingMask: { data: boolMask(2 * 77, 5), shape: [2, 77] } },
  }));

  test('rows whose keys are all masked give zeros (output = out_proj.bias, weights 0), like WASM', async () => {
    const B = 2, L = 5, S = 6, H = 2;
    const kpm = new Uint8Array(B * S);
    kpm.fill(1, S, 2 * S);                             // batch 1: every key padded
    const am = boolMask(B * H * L * S, 1000);
    am.fill(1, (0 * L + 2) * S, (0 * L + 3) * S);      // batch 0, head 0, row 2: every key masked
    const { actual } = await gpuMatchesWasm({
      create: { embedDim: 8, numHeads: H }, B, L, S,
      options: { keyPaddingMask: { data: kpm, shape: [B, S] }, attnMask: { data: am, shape: [B * H, L, S] }, needWeights: true, averageAttnWeights: false },
    });
    assert.ok(actual.attnWeights.data.slice(B * H * L * S / 2).every((w) => w === 0), 'batch 1 weights are zero');
    assert.ok(actual.output.data.every(Number.isFinite));
  });

  test('additive -inf and large finite masks, causal with L > S', () => {
    const L = 12, S = 7;
    const am = filled(L * S, 3, 2);
    for (let i = 0; i < am.length; i += 4) am[i] = -Infinity;
    const kpm = new Float32Array(S);
    kpm[1] = -1e9;
    return gpuMatchesWasm({
      create: { embedDim: 16, numHeads: 4 }, B: 1, L, S,
      options: { attnMask: { data: am, shape: [L, S] }, keyPaddingMask: { data: kpm, shape: [1, S] }, isCausal: true, needWeights: true },
    });
  });

  test('pipelines are made at create() and reused: a call creates none but the weights kernel', async () => {
    const create = { embedDim: 16, numHeads: 2, backend: 'webgpu', gpu: device };
    // A GPU that selects kernels by measurement also compiles every candidate of a family in the
    // background from create(): there each family is pinned to its default, which create() then
    // compiles alone (one linear variant, not two) and nothing in the background.
    const { pinned, undo } = pinDefaultsWhereSelecting();
    const before = pipelineCount(device);
    const mha = await MultiHeadAttention.create(create);
    try {
      const count = pipelineCount(device);
      assert.equal(count - before, pinned ? 4 : 5, 'the linear defaults (two; one pinned), flash(8, 8), decode partial and reduce, at create()');
      mha.loadStateDict(randomStateDict(mha.stateDictShapes, 3));
      const x = (L) => ({ data: filled(L * 16, L), shape: [1, L, 16] });
      await mha.forward(x(DECODE_MAX_L + 1), x(7), x(7));
      for (const L of [DECODE_MAX_L + 2, 17, 64, 65, 100]) await mha.forward(x(L), x(L + 2), x(L + 2), { isCausal: L > 50 });
      assert.equal(pipelineCount(device), count, 'no new pipeline for other lengths and masks');
      await mha.forward(x(8), x(8), x(8), { needWeights: true });
      assert.equal(pipelineCount(device), count + 1, 'the weights kernel, once');
      await mha.forward(x(1), x(300), x(300));
      for (const L of [1, 2, DECODE_MAX_L]) await mha.forward(x(L), x(L + 600), x(L + 600), { isCausal: L > 1, needWeights: true });
      assert.equal(pipelineCount(device), count + 1, 'decode: no new pipeline');
    } finally {
      mha.dispose();
      undo();
    }
  });

  test('forward() before loadStateDict() rejects with StateDictError, as on WASM', async () => {
    const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, backend: 'webgpu', gpu });
    try {
      const x = { data: filled(3 * 8, 1), shape: [1, 3, 8] };
      await assert.rejects(mha.forward(x, x, x), StateDictError);
    } finally {
      mha.dispose();
    }
  });

  test('loadStateDict() again replaces the weights on the GPU', async () => {
    const [a, b] = fixtures.filter((c) => c.name === 'weights_avg' || c.name === 'kpm_bool_attn_float');
    const mha = await MultiHeadAttention.create({ ...a.create, backend: 'webgpu', gpu });
    try {
      for (const c of [a, b, a]) {
        mha.loadStateDict(c.stateDict);
        checkAgainstFixture(c, await mha.forward(c.inputs.query, c.inputs.key, c.inputs.value, c.options));
      }
    } finally {
      mha.dispose();
    }
  });
});
