// No L×S buffer unless weights are asked for: a long sequence must fit in a heap far smaller
// than its score matrix, and the heap must be able to grow when weights are asked for.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, scaledDotProductAttention, wasmHeapBytes } from '#webattention';

const L = 4096, E = 8;
const scoreMatrixBytes = L * L * 4;  // 64 MiB
const x = { data: Float32Array.from({ length: L * E }, (_, i) => Math.sin(i * 0.37)), shape: [1, L, E] };

test('MHA over 4096 tokens without weights never needs an L×S buffer', async () => {
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 2 });
  mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) =>
    [name, Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => Math.cos(i) * 0.3)])));
  for (const isCausal of [false, true]) {
    const { output } = await mha.forward(x, x, x, { isCausal });
    assert.ok(output.data.every(Number.isFinite));
  }
  const heap = await wasmHeapBytes();
  assert.ok(heap < scoreMatrixBytes / 2, `heap grew to ${heap} bytes`);
  mha.dispose();
});

test('weights of a long sequence are returned when asked for (the heap grows for them)', async () => {
  const q = { data: x.data, shape: [L, E] };
  const { attnWeights } = await scaledDotProductAttention(q, q, q, { needWeights: true, isCausal: true });
  assert.deepEqual(attnWeights.shape, [L, L]);
  for (const i of [0, 1, 4095]) {
    const row = attnWeights.data.subarray(i * L, (i + 1) * L);
    assert.ok(Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-4, `row ${i}`);
    assert.equal(row[i + 1] ?? 0, 0);  // causal
  }
  assert.ok(await wasmHeapBytes() >= scoreMatrixBytes);
});
