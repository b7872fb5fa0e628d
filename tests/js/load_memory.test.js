// Loading f32 weights writes them straight into the core's storage (wasm_executor.js,
// MultiHeadAttention::begin_load_in_place): the WASM heap, which never shrinks, grows by about
// the weights, not by the weights plus a staging copy of the largest entry (in_proj_weight, 3/4
// of them here). A file of its own: the heap is the process's, and it must start fresh.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, wasmHeapBytes } from '#webattention';

test('loading f32 weights grows the WASM heap by about their size, not by a second copy', async () => {
  const E = 2048;  // 64 MiB of weights, 48 of them in in_proj_weight
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 8, threads: 1 });
  const before = await wasmHeapBytes();
  const weightBytes = 4 * E * E * 4;
  mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) =>
    [name, new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.01)])));
  const grown = await wasmHeapBytes() - before;
  // With a staging copy it grew 1.35× the weights; written in place, 0.94× (the heap had room).
  assert.ok(grown < 1.1 * weightBytes, `the heap grew ${grown} bytes for ${weightBytes} bytes of weights`);
  const x = { data: new Float32Array(2 * E).fill(0.5), shape: [1, 2, E] };
  const { output } = await mha.forward(x, x, x);
  // Weights and biases all 0.01, inputs 0.5: every value row is 0.01 + E · 0.01 · 0.5, so is
  // the attention's output, and each output is the out-projection of it.
  const expected = 0.01 + E * 0.01 * (0.01 + E * 0.01 * 0.5);
  for (const v of output.data) assert.ok(Math.abs(v - expected) <= 1e-4 * expected, `${v} vs ${expected}`);
  mha.dispose();
});
