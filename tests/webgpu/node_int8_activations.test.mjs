// activations 'int8' on WebGPU (issue 39; the contract is the WASM core's, docs/attention-math/storage.md
// §11): each projection's input rows quantised on the GPU (kernels/q8_rows.wgsl.js) and multiplied
// by int8 or int4 weights in i32 (kernels/q8_linear.wgsl.js: dot4I8Packed, or an exact i32 loop
// where WGSL lacks it). Checked: the outputs are WASM's bit for bit where attention passes one
// key's values on exactly (so every projection's quantised rows and sums are compared), odd
// widths (K < 32, K not a multiple of 32, weight rows that start inside a word), all-zero rows
// (d = 0), both dot forms; random configurations against the float64 reference that quantises
// alike (the WASM tests' tolerance); NaN and Inf inputs on a GPU cache as WASM gives them;
// 'auto' and 'webgpu' take such a module to the GPU. The kernel-level cases with act i8 run in
// node_kernel_cases.test.mjs. Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { MultiHeadAttention } from '#webattention';
import { randomMhaCase, randomTensor, rng, runCase } from '../contract/contract.mjs';
import { passHooks } from '../internals.mjs';
import { assertSame, device, gpu, runs } from './node_setup.mjs';

const INTEGER_WEIGHTS = ['int8', 'int4'];

// [embedDim, numHeads, kdim, vdim]: K below one block, K past whole blocks, k and v weights that
// start inside a u32 word of codes (int8: 4 a word, int4: 8), several blocks a row.
const LAYOUTS = [[8, 2, 5, 7], [16, 2, 16, 24], [40, 5, 33, 70], [64, 4, 64, 96]];

/** The two modules (WASM, WebGPU on `gpuOption`) of `create` with the same random weights. */
async function pair(create, gpuOption = gpu, seed = 5) {
  const wasm = await MultiHeadAttention.create({ ...create, backend: 'wasm' });
  const onGpu = await MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu: gpuOption });
  const next = rng(seed);
  const sd = Object.fromEntries(wasm.stateDictShapes.map(({ name, shape }) => [name, randomTensor(shape, next)]));
  wasm.loadStateDict(sd);
  onGpu.loadStateDict(sd);
  return { wasm, onGpu, next, dispose: () => { wasm.dispose(); onGpu.dispose(); } };
}

/** One key per batch: attention hands each query row that key's value row, exactly, on both backends. */
async function oneKeyCall({ wasm, onGpu, next }, { zeroRows = false } = {}) {
  const { embedDim: E, kdim, vdim } = wasm.config;
  const q = randomTensor([2, 3, E], next), k = randomTensor([2, 1, kdim], next), v = randomTensor([2, 1, vdim], next);
  if (zeroRows) v.data.fill(0, 0, vdim);  // batch 0's value row all zeros: d = 0, every code 0
  const expected = (await wasm.forward(q, k, v)).output;
  runs.length = 0;
  const actual = (await onGpu.forward(q, k, v)).output;
  assert.deepEqual(runs, ['webgpu']);
  return { actual, expected };
}

/** The q8Linear pipelines a call dispatches (their labels: 'webattention q8Linear:<weights>:<dot>'). */
async function q8Kernels(call) {
  const kernels = new Set();
  passHooks.onDispatches = (dispatches) => dispatches.forEach(({ kernel }) => kernel.includes('q8') && kernels.add(kernel));
  try {
    return { result: await call(), kernels: [...kernels].sort() };
  } finally {
    passHooks.onDispatches = null;
  }
}

for (const weightsDtype of INTEGER_WEIGHTS) {
  test(`${weightsDtype} weights × int8 activations: WASM's outputs bit for bit, every layout, dot4I8Packed`, async () => {
    for (const [embedDim, numHeads, kdim, vdim] of LAYOUTS) {
      const modules = await pair({ embedDim, numHeads, kdim, vdim, weightsDtype, activations: 'int8' });
      try {
        const { result, kernels } = await q8Kernels(() => oneKeyCall(modules));
        assert.deepEqual(kernels, ['webattention q8Linear:' + weightsDtype + ':dot4', 'webattention q8Rows:'], 'the kernels that ran');
        assertSame(result.actual, result.expected, `E ${embedDim} kdim ${kdim} vdim ${vdim}`);
        const zero = await oneKeyCall(modules, { zeroRows: true });
        assertSame(zero.actual, zero.expected, `E ${embedDim}, a zero value row`);
      } finally {
        modules.dispose();
      }
    }
  });

  test(`${weightsDtype} weights × int8 activations without dot4I8Packed (a GPUDevice as \`gpu\`, no GPU object): the i32 loop, the same bits`, async () => {
    const modules = await pair({ embedDim: 40, numHeads: 5, kdim: 33, vdim: 70, weightsDtype, activations: 'int8' }, device);
    try {
      const { result, kernels } = await q8Kernels(() => oneKeyCall(modules));
      assert.deepEqual(kernels, ['webattention q8Linear:' + weightsDtype + ':loop', 'webattention q8Rows:']);
      assertSame(result.actual, result.expected, 'the loop');
    } finally {
      modules.dispose();
    }
  });

  test(`20 random MHA configurations (finite inputs) on WebGPU: ${weightsDtype} weights, int8 activations, against the reference that quantises alike`, async () => {
    const failed = [];
    for (let seed = 1; seed <= 20; seed++) {
      const c = randomMhaCase(seed, { finite: true, weightsDtype, activations: 'int8' });
      runs.length = 0;
      const r = await runCase(api, c, { create: { backend: 'webgpu', gpu } });
      if (!r.ok) failed.push(`${c.name}: ${r.detail}`);
      else if (!runs.every((where) => where === 'webgpu')) failed.push(`${c.name}: ran on ${runs.join(', ')}`);
    }
    assert.deepEqual(failed, []);
  });
}

test('NaN and Inf inputs on a GPU cache: the rows WASM makes NaN are NaN, the others WASM\'s values', async () => {
  for (const bad of [NaN, Infinity, -Infinity]) {
    const modules = await pair({ embedDim: 40, numHeads: 4, weightsDtype: 'int4', activations: 'int8' });
    try {
      const outputs = [];
      for (const mha of [modules.wasm, modules.onGpu]) {
        const cache = mha.createCache({ batchSize: 1, maxLength: 8 });
        const rows = [];
        // Step 1: a non-finite query value (its row's blocks get d = NaN); step 3: one in the
        // key and value (every later row sees it).
        for (let step = 0; step < 5; step++) {
          const next = rng(40 + step);
          const q = randomTensor([1, 1, 40], next), x = randomTensor([1, 1, 40], next);
          if (step === 1) q.data[3] = bad;
          if (step === 3) x.data[39] = bad;
          rows.push(...(await mha.forward(q, x, x, { cache })).output.data);
        }
        outputs.push({ data: Float32Array.from(rows), shape: [5, 40] });
        cache.dispose();
      }
      const [expected, actual] = outputs;
      assert.ok(expected.data.slice(40, 80).every(Number.isNaN) && expected.data.slice(120).every(Number.isNaN), 'WASM: NaN rows');
      assert.ok(expected.data.slice(0, 40).every(Number.isFinite) && expected.data.slice(80, 120).every(Number.isFinite), 'WASM: finite rows');
      assertSame(actual, expected, String(bad));
    } finally {
      modules.dispose();
    }
  }
});

test("backend 'webgpu' and 'auto' (webgpuMinFlops 0) run a module with int8 activations on the GPU", async () => {
  for (const backend of ['webgpu', 'auto']) {
    const mha = await MultiHeadAttention.create({ embedDim: 16, numHeads: 2, weightsDtype: 'int8', activations: 'int8', backend, gpu, webgpuMinFlops: 0 });
    try {
      const next = rng(3);
      mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, randomTensor(shape, next)])));
      const x = randomTensor([1, 4, 16], next);
      runs.length = 0;
      await mha.forward(x, x, x);
      assert.deepEqual(runs, ['webgpu'], backend);
    } finally {
      mha.dispose();
    }
  }
});
