// int4 weights on WebGPU (issue 39; the contract is issue 37's, docs/attention-math/storage.md §11): the
// GPU stores the values the WASM core stores. Float weights are quantised by the core's q4_0 rule
// in JS (storage/q4_0.js), pre-quantised q4_0 and MatMulNBits tensors go up as stored; either way
// the writes loadStateDict() makes (weight_storage.js's parameterWrites(): codes eight per u32,
// float32 scales, 4-bit zero points eight per u32), decoded as the linear kernels read them, are
// the core's stored values bit for bit (its executor's readStateDict()). Then the GPU's forward
// against WASM's on the same weights: GQA + RoPE, cached decode, odd layouts, 'auto'; hostile
// blocks refused with the module's weights kept; GPU bytes per weight. The kernel-level cases
// with int4 weights run in node_kernel_cases.test.mjs. Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, StateDictError } from '#webattention';
import {
  WasmExecutor, coreConfig, parameterBufferBytes, parameterLayout, parameterWrites, resolveMhaConfig, resolveModuleStateDict, roundToHalf, scaleOffsets,
} from '../internals.mjs';
import { randomTensor, rng } from '../contract/contract.mjs';
import { filled } from '../contract/random.mjs';
import { halfValue, quantizeQ4_0 } from '../fixtures/make_gguf.mjs';
import { f32BitsToF16 } from '../../web/src/storage/half_floats.js';
import { loadNodeCore } from '../../web/src/node_core.js';
import { pickVariant } from '../../web/src/wasm/variant.js';
import { assertClose, gpu, gpuMatchesWasm, randomStateDict, runs } from './node_setup.mjs';

const { core } = await loadNodeCore(pickVariant());
const int4 = (create) => ({ ...create, weightsDtype: 'int4' });

// Layouts whose k and v weights start inside a byte or a word of codes and of zero points, rows
// with a short last block (kdim 9, vdim 7, E 40), the stacked in-projection of GQA.
const LAYOUTS = [
  { embedDim: 5, numHeads: 1, kdim: 3, vdim: 7 },
  { embedDim: 6, numHeads: 2, kdim: 9, vdim: 5 },
  { embedDim: 40, numHeads: 5, numKvHeads: 1, kdim: 33, vdim: 70 },
  { embedDim: 64, numHeads: 4, numKvHeads: 2 },
];

/**
 * The entries loadStateDict() hands on for `given`, their shapes, and the weights as the WASM core
 * then holds them (float32), through its own executor.
 */
function coreStored(config, given) {
  const executor = new WasmExecutor(core, config, coreConfig(config));
  try {
    const specs = executor.parameterSpecs();
    const entries = resolveModuleStateDict(specs, given, undefined, 'int4');
    executor.loadStateDict(entries);
    const stored = Object.fromEntries(executor.readStateDict().map(({ name, data }) => [name, data]));
    return { entries, stored, shapes: Object.fromEntries(specs.map(({ name, shape }) => [name, shape])) };
  } finally {
    executor.dispose();
  }
}

/** The parameter buffers as loadStateDict() writes them, each weight matrix entry decoded as the kernels read it. */
function gpuStored(config, entries, shapes) {
  const buffers = Object.fromEntries(Object.entries(parameterBufferBytes(config)).map(([name, n]) => [name, new Uint8Array(n)]));
  for (const { buffer, offset, data } of parameterWrites(config, entries)) {
    assert.ok(offset % 4 === 0 && data.byteLength % 4 === 0, `${buffer}: a write of ${data.byteLength} bytes at ${offset}`);
    buffers[buffer].set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), offset);
  }
  const nibble = (bytes, i) => (bytes[i >> 1] >> ((i & 1) * 4)) & 15;
  const first = { in_proj_weight: 'q', q_proj_weight: 'q', k_proj_weight: 'k', v_proj_weight: 'v', 'out_proj.weight': null };
  const out = {};
  for (const { name } of entries) {
    if (!(name in first)) continue;
    const [buffer, at] = parameterLayout(config).entries[name];
    const s0 = first[name] ? scaleOffsets(config)[first[name]] : 0;
    const [rows, cols] = shapes[name], perRow = Math.ceil(cols / 32);
    const scales = new Float32Array(buffers[`s${buffer}`].buffer);
    const data = new Float32Array(rows * cols);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const b = s0 + r * perRow + Math.floor(c / 32);
        data[r * cols + c] = Math.fround((nibble(buffers[buffer], at + r * cols + c) - nibble(buffers[`z${buffer}`], b)) * scales[b]);
      }
    }
    out[name] = data;
  }
  return out;
}

function assertSameStored(create, given) {
  const config = resolveMhaConfig(int4(create));
  const { entries, stored, shapes } = coreStored(config, given);
  const ours = gpuStored(config, entries, shapes);
  assert.ok(Object.keys(ours).length >= 2, 'no weight matrix decoded');
  for (const [name, data] of Object.entries(ours)) {
    const i = data.findIndex((v, j) => !Object.is(v, stored[name][j]));
    assert.equal(i, -1, `${JSON.stringify(create)} ${name}[${i}]: the GPU stores ${data[i]}, the core ${stored[name][i]}`);
  }
}

const shapesOf = async (create) => {
  const m = await MultiHeadAttention.create({ ...int4(create), backend: 'wasm' });
  const shapes = m.stateDictShapes;
  m.dispose();
  return shapes;
};

test('float weights quantised for the GPU are the core\'s stored values bit for bit (float32 and float16 sources, every layout)', async () => {
  for (const create of LAYOUTS) {
    const shapes = await shapesOf(create);
    const sd = randomStateDict(shapes, 3);
    // A block of zeros (scale −0) and one whose extreme is negative, so both signs of m are seen.
    const w = Object.values(sd).find((t) => t.shape.length === 2);
    w.data.fill(0, 0, Math.min(32, w.shape[1]));
    if (w.shape[1] > 32) w.data[w.shape[1] + 1] = -3;
    assertSameStored(create, sd);
    const half = Object.fromEntries(Object.entries(sd).map(([k, t]) => [k, t.shape.length === 2 ? { data: roundToHalf('float16', t.data), dtype: 'float16', shape: t.shape } : t]));
    assertSameStored(create, half);
  }
});

/** A MatMulNBits tensor [N, K]: random codes, f16 or f32 scales, zero points unless `zeros` is false. */
function matMulNBits([N, K], blockSize, next, { zeros = true, half = false } = {}) {
  const blocks = Math.ceil(K / blockSize);
  const data = Uint8Array.from({ length: N * blocks * blockSize / 2 }, () => Math.floor((next() + 0.5) * 256) & 255);
  const bits = Uint16Array.from({ length: N * blocks }, () => f32BitsToF16(new Uint32Array(new Float32Array([next() * 0.1]).buffer)[0]));
  const tensor = { dtype: 'int4', data, scales: half ? { data: bits, dtype: 'float16' } : Float32Array.from(bits, halfValue), blockSize, shape: [N, K] };
  if (zeros) tensor.zeroPoints = Uint8Array.from({ length: N * Math.ceil(blocks / 2) }, () => Math.floor((next() + 0.5) * 256) & 255);
  return tensor;
}

const q4_0 = ([rows, cols], next) => ({ dtype: 'q4_0', data: quantizeQ4_0(Float64Array.from({ length: rows * cols }, () => next() * 0.4)).data, shape: [rows, cols] });

/** A state dict whose weight matrices are `weight(shape, next)`, other entries random floats. */
async function quantisedDict(create, weight, seed) {
  const next = rng(seed);
  return Object.fromEntries((await shapesOf(create)).map(({ name, shape }) => [name, shape.length === 2 ? weight(shape, next) : randomTensor(shape, next)]));
}

const PRE_QUANTISED = [
  ['GGUF Q4_0', { embedDim: 64, numHeads: 4, numKvHeads: 2 }, q4_0],
  ['MatMulNBits, blocks of 64 with zero points, f16 scales', { embedDim: 64, numHeads: 4, kdim: 96, vdim: 32 }, (s, n) => matMulNBits(s, 64, n, { half: true })],
  ['MatMulNBits, blocks of 32 without zero points, K not a multiple of the block', { embedDim: 40, numHeads: 5, kdim: 33, vdim: 70 }, (s, n) => matMulNBits(s, 32, n, { zeros: false })],
  ['MatMulNBits, blocks of 128 with zero points', { embedDim: 64, numHeads: 4, numKvHeads: 1 }, (s, n) => matMulNBits(s, 128, n)],
];

for (const [what, create, weight] of PRE_QUANTISED) {
  test(`${what}: goes up as stored (the core's values bit for bit) and the GPU computes what WASM computes`, async () => {
    const sd = await quantisedDict(create, weight, 5);
    assertSameStored(create, sd);
    const [wasm, gpuMha] = [await MultiHeadAttention.create({ ...int4(create), backend: 'wasm' }), await MultiHeadAttention.create({ ...int4(create), backend: 'webgpu', gpu })];
    try {
      wasm.loadStateDict(sd);
      gpuMha.loadStateDict(sd);
      const c = wasm.config;
      const q = { data: filled(2 * 6 * c.embedDim, 1), shape: [2, 6, c.embedDim] };
      const k = { data: filled(2 * 7 * c.kdim, 2), shape: [2, 7, c.kdim] };
      const v = { data: filled(2 * 7 * c.vdim, 3), shape: [2, 7, c.vdim] };
      runs.length = 0;
      const actual = await gpuMha.forward(q, k, v);
      assert.deepEqual(runs, ['webgpu']);
      assertClose(actual.output, (await wasm.forward(q, k, v)).output, 'output');
    } finally {
      wasm.dispose();
      gpuMha.dispose();
    }
  });
}

test('odd layouts and cross-attention with int4 weights: the GPU computes what WASM computes', async () => {
  for (const create of LAYOUTS) await gpuMatchesWasm({ create: int4(create), B: 2, L: 3, S: 5, seed: 11 });
});

test('GQA + RoPE with int4 weights: causal self-attention over flash tiles, and decode on a cache', async () => {
  await gpuMatchesWasm({ create: int4({ embedDim: 32, numHeads: 8, numKvHeads: 2, rotary: {} }), B: 2, L: 70, S: 70, self: true, path: 'flash', options: { isCausal: true } });
  const create = int4({ embedDim: 64, numHeads: 8, numKvHeads: 2, rotary: { dim: 6, interleaved: true } });
  const [wasm, gpuMha] = [await MultiHeadAttention.create({ ...create, backend: 'wasm' }), await MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu })];
  try {
    const sd = randomStateDict(wasm.stateDictShapes, 13);
    wasm.loadStateDict(sd);
    gpuMha.loadStateDict(sd);
    const [wc, gc] = [wasm.createCache({ maxLength: 32 }), gpuMha.createCache({ maxLength: 32 })];
    runs.length = 0;
    for (const [i, n] of [[0, 9], [1, 1], [2, 1], [3, 4], [4, 1]]) {
      const x = { data: filled(n * 64, 20 + i), shape: [1, n, 64] };
      const [expected, actual] = [await wasm.forward(x, x, x, { cache: wc }), await gpuMha.forward(x, x, x, { cache: gc })];
      assertClose(actual.output, expected.output, `chunk ${i} of ${n} rows`);
    }
    assert.ok(runs.every((r) => r === 'webgpu'), runs.join(', '));
  } finally {
    wasm.dispose();
    gpuMha.dispose();
  }
});

test("'auto' routes int4 modules to the GPU above its threshold, with weights loaded before its device existed", async () => {
  const create = int4({ embedDim: 32, numHeads: 4 });
  const [mha, wasm] = [await MultiHeadAttention.create({ ...create, backend: 'auto', gpu, webgpuMinFlops: 0 }), await MultiHeadAttention.create({ ...create, backend: 'wasm' })];
  try {
    const sd = randomStateDict(wasm.stateDictShapes, 17);
    mha.loadStateDict(sd);
    wasm.loadStateDict(sd);
    const x = { data: filled(2 * 9 * 32, 4), shape: [2, 9, 32] };
    runs.length = 0;
    assertClose((await mha.forward(x, x, x)).output, (await wasm.forward(x, x, x)).output, 'output');
    assert.deepEqual(runs, ['webgpu']);
    assert.equal(mha.backend, 'webgpu');
  } finally {
    mha.dispose();
    wasm.dispose();
  }
});

test('non-finite scales in q4_0 and MatMulNBits blocks are refused at load on WebGPU; the module keeps its weights', async () => {
  const create = { embedDim: 64, numHeads: 4 };
  const mha = await MultiHeadAttention.create({ ...int4(create), backend: 'webgpu', gpu });
  try {
    mha.loadStateDict(randomStateDict(mha.stateDictShapes, 19));
    const x = { data: filled(2 * 5 * 64, 6), shape: [2, 5, 64] };
    const before = (await mha.forward(x, x, x)).output;
    const nanQ4 = await quantisedDict(create, q4_0, 7);
    nanQ4['out_proj.weight'].data.set([0x00, 0x7e], 18 * 3);  // f16 NaN as block 3's d (row 1, block 1)
    const infNBits = await quantisedDict(create, (s, n) => matMulNBits(s, 32, n), 8);
    infNBits.in_proj_weight.scales[5] = Infinity;
    for (const [sd, name] of [[nanQ4, 'out_proj.weight'], [infNBits, 'in_proj_weight']]) {
      assert.throws(() => mha.loadStateDict(sd), (e) => e instanceof StateDictError && e.argument === name && /scales must be finite/.test(e.message));
    }
    assertClose((await mha.forward(x, x, x)).output, before, 'output after the refused loads');
  } finally {
    mha.dispose();
  }
});

test('GPU bytes per int4 weight: half a byte and a float32 scale and 4-bit zero point per 32 (model-sized layer)', () => {
  const config = resolveMhaConfig(int4({ embedDim: 2048, numHeads: 32, numKvHeads: 8 }));
  const bytes = parameterBufferBytes(config);
  const weights = 2048 * 2048 * 2 + 2 * 512 * 2048;  // W_q and W_out, W_k and W_v of 8 K/V heads of 64
  const perWeight = ['win', 'wout', 'swin', 'swout', 'zwin', 'zwout'].reduce((n, b) => n + bytes[b], 0) / weights;
  console.log(`int4 GPU bytes per weight (E 2048, GQA 32/8): ${perWeight}`);
  assert.equal(perWeight, 0.5 + (4 + 0.5) / 32);
  assert.equal((bytes.win + bytes.wout) / weights, 0.5);
});
