// Weights quantised already (GGUF Q8_0 blocks) on WebGPU: uploaded as stored into the int8 weight
// and scale buffers (web/src/webgpu/weight_storage.js), not requantised from their values. The
// blocks' largest code is below 127, so a requantisation would change every block's scale and
// codes; the GPU's output must match the float64 reference of the blocks' own values. With int8
// activations, the blocks give WASM's bits on the GPU. Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { compare, randomTensor, rng } from '../contract/contract.mjs';
import { layerReference, torchWeights } from '../contract/layer_reference.mjs';
import { halfValue } from '../fixtures/make_gguf.mjs';
import { f32BitsToF16 } from '../../web/src/storage/half_floats.js';
import { adapterName, assertSame, gpu, runs } from './node_setup.mjs';

/** Q8_0 blocks of [rows, cols] with codes in [-100, 100] and f16 scales: { tensor, values }. */
function q8Blocks(rows, cols, next) {
  const blocks = (rows * cols) / 32;
  const data = new Uint8Array(blocks * 34);
  const values = new Float32Array(rows * cols);
  for (let b = 0; b < blocks; b++) {
    const h = f32BitsToF16(new Uint32Array(new Float32Array([0.002 + Math.abs(next()) * 0.002]).buffer)[0]);
    data.set([h & 0xff, h >> 8], b * 34);
    for (let j = 0; j < 32; j++) {
      const q = Math.round(next() * 200);
      data[b * 34 + 2 + j] = q & 0xff;
      values[b * 32 + j] = q * halfValue(h);
    }
  }
  return { tensor: { dtype: 'q8_0', data, shape: [rows, cols] }, values };
}

test(`GGUF Q8_0 blocks go up to the GPU as stored (${adapterName})`, async () => {
  const create = { embedDim: 64, numHeads: 4 };
  const mha = await MultiHeadAttention.create({ ...create, weightsDtype: 'int8', backend: 'webgpu', gpu });
  try {
    const next = rng(3);
    const given = {}, values = {};
    for (const { name, shape } of mha.stateDictShapes) {
      if (shape.length === 2) {
        const w = q8Blocks(...shape, next);
        given[name] = w.tensor;
        values[name] = { data: w.values };
      } else {
        given[name] = values[name] = randomTensor(shape, next);
      }
    }
    mha.loadStateDict(given);
    const x = randomTensor([2, 6, 64], next);
    runs.length = 0;
    const { output } = await mha.forward(x, x, x);
    assert.equal(runs.join(), 'webgpu');
    const c = compare(output, { data: layerReference(create, torchWeights(values, create), x), shape: output.shape });
    assert.ok(c.ok, c.detail);
  } finally {
    mha.dispose();
  }
});

test(`Q8_0 blocks with int8 activations: WebGPU and WASM the same bits (${adapterName})`, async () => {
  // Blocks loaded as stored must take the module's int8 activations on every backend (WASM once
  // computed such modules from float32 inputs, which no single-backend test could see). One key:
  // attention hands on its value row exactly, so the projections' bits are compared (as in
  // node_int8_activations.test.mjs; a GPU that fuses products: the contract's tolerance).
  const create = { embedDim: 64, numHeads: 4, weightsDtype: 'int8', activations: 'int8' };
  const next = rng(5);
  const modules = await Promise.all([{ backend: 'wasm' }, { backend: 'webgpu', gpu }, { backend: 'wasm', activations: 'float32' }]
    .map((options) => MultiHeadAttention.create({ ...create, ...options })));
  try {
    const given = {};
    for (const { name, shape } of modules[0].stateDictShapes) given[name] = shape.length === 2 ? q8Blocks(...shape, next).tensor : randomTensor(shape, next);
    const q = randomTensor([2, 6, 64], next), kv = randomTensor([2, 1, 64], next);
    const outputs = [];
    for (const mha of modules) {
      mha.loadStateDict(given);
      outputs.push((await mha.forward(q, kv, kv)).output);
    }
    assertSame(outputs[1], outputs[0], 'WebGPU');
    assert.notDeepEqual(outputs[2].data, outputs[0].data, 'the case cannot tell int8 activations from float32 ones');
  } finally {
    for (const mha of modules) mha.dispose();
  }
});
