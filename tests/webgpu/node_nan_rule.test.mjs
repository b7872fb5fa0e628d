// The WebGPU backend's NaN rule (README, "Limits"; web/src/finite_inputs.js): a call whose visible
// inputs hold a NaN or an infinity (query, key, value, additive mask entries other than -Inf, the
// loaded weights, a NaN sink) runs on the CPU, where a row that sees a NaN is NaN, as on WASM; the
// same random contract cases the WASM differential test runs (tests/js/differential.test.js) must
// match the float64 reference there, NaN rows included. On 1aa1392 they ran on the GPU, which
// promised nothing for them. Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { filled, randomMhaCase, runCase, sameBits, seededStateDict } from '../contract/contract.mjs';
import { adapterName, gpu, runs } from './node_setup.mjs';

const COUNT = 12;  // SwiftShader runs WGSL on the CPU: a few dozen small calls a second

// A value a row can see that is NaN or infinite (-Inf in an additive mask masks: not one).
const seesNonFinite = (c) => [c.inputs.query, c.inputs.key, c.inputs.value].some((t) => t.data.some((x) => !Number.isFinite(x)))
  || [c.options.keyPaddingMask, c.options.attnMask].some((m) => m?.data instanceof Float32Array
    && m.data.some((x) => x !== -Infinity && !Number.isFinite(x)));

test(`${COUNT} random MHA configurations with NaN or ±Infinity inputs on backend 'webgpu' (${adapterName}) follow the WASM rule`, async () => {
  const failures = [];
  let checked = 0, moved = 0;
  for (let seed = 1; checked < COUNT && seed < 2000; seed++) {
    const c = randomMhaCase(seed);
    if (!seesNonFinite(c)) continue;
    checked += 1;
    runs.length = 0;
    const r = await runCase(api, c, { create: { backend: 'webgpu', gpu } }).catch((e) => ({ ok: false, detail: `threw ${e?.message}` }));
    // A row that sees a NaN is NaN in the reference: such a call must have left the GPU. One whose
    // non-finite keys every row masks may stay there (masked means absent, on every backend).
    const nanRows = !c.expected.output.data.every(Number.isFinite);
    if (!r.ok) failures.push(`seed ${seed}: ${r.detail}`);
    else if (nanRows && runs.join() !== 'wasm') failures.push(`seed ${seed}: ran on ${runs.join() || 'nothing'}, not the CPU`);
    if (runs.join() === 'wasm') moved += 1;
  }
  assert.equal(checked, COUNT);
  assert.ok(moved >= COUNT / 2, `only ${moved} of ${COUNT} calls ran on the CPU`);
  assert.deepEqual(failures, [], 'replay one with randomMhaCase(seed)');
});

test("a NaN or infinite weight, or a NaN sink: backend 'webgpu' computes as WASM does, bit for bit; finite weights go back to the GPU", async () => {
  const create = { embedDim: 8, numHeads: 2, sinks: true };
  const [onGpu, onWasm] = [await api.MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu }), await api.MultiHeadAttention.create(create)];
  try {
    const x = { data: filled(2 * 3 * 8, 8), shape: [2, 3, 8] };
    for (const [name, at, value] of [['out_proj.weight', 5, NaN], ['in_proj_weight', 70, Infinity], ['sinks', 1, NaN], ['in_proj_bias', 3, -Infinity]]) {
      const sd = seededStateDict(onGpu.stateDictShapes, 4);
      sd[name].data[at] = value;
      onGpu.loadStateDict(sd);
      onWasm.loadStateDict(sd);
      runs.length = 0;
      const [gpuOut, wasmOut] = [await onGpu.forward(x, x, x, { needWeights: true }), await onWasm.forward(x, x, x, { needWeights: true })];
      assert.ok(sameBits(gpuOut.output.data, wasmOut.output.data) && sameBits(gpuOut.attnWeights.data, wasmOut.attnWeights.data), `${name}[${at}] = ${value}`);
      assert.deepEqual(runs, ['wasm'], `${name}[${at}] = ${value}`);
    }
    onGpu.loadStateDict(seededStateDict(onGpu.stateDictShapes, 4));
    runs.length = 0;
    await onGpu.forward(x, x, x);
    assert.deepEqual(runs, ['webgpu']);
  } finally {
    onGpu.dispose();
    onWasm.dispose();
  }
});
