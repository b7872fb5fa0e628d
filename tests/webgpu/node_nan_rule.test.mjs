// The WebGPU backend's NaN rule (README, "Limits"; web/src/finite_inputs.js): a call whose visible
// inputs hold a NaN or an infinity (query, key, value, additive mask entries other than -Inf, the
// loaded weights, a NaN sink) runs on the CPU, where a row that sees a NaN is NaN, as on WASM; the
// same random contract cases the WASM differential test runs (tests/js/differential.test.js) must
// match the float64 reference there, NaN rows included. On 1aa1392 they ran on the GPU, which
// promised nothing for them. Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { checkResult, filled, mhaReference, randomDecodeCase, randomMhaCase, rng, runCase, sameBits, seededStateDict } from '../contract/contract.mjs';
import { runDecode } from '../contract/run_decode.mjs';
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

// A cached call on a cache stored on the GPU cannot move to the CPU (its keys and values are on
// the device): there the GPU computes the rule itself (kernels/nonfinite_rows.wgsl.js). The random
// decode cases of the 16- and 8-bit contract (tests/contract/run_decode.mjs), with NaN and ±Inf put
// into some rows of x (query = key = value: every later row sees them), for each cache dtype,
// against the float64 reference and against WASM on a WASM cache fed the same chunks.
const CACHED = 12;
const poisonValues = [NaN, Infinity, -Infinity];

// A decode case with `rows` positions of x holding a NaN or an infinity (one or all of a row's
// elements), its expected values recomputed; weight columns past a chunk's keys are 0 there.
function poisonedDecodeCase(seed, cacheDtype) {
  const c = randomDecodeCase(seed, { cacheDtype });
  const next = rng(seed + 1000);
  const pick = (n) => Math.floor((next() + 0.5) * n);
  const [B, T, E] = c.inputs.query.shape;
  const data = c.inputs.query.data;
  for (let k = 0; k < 1 + pick(2); k++) {
    const row = (pick(B) * T + pick(T)) * E;
    const x = poisonValues[pick(3)];
    if (next() < 0) data[row + pick(E)] = x;
    else data.fill(x, row, row + E);
  }
  const config = { embedDim: E, numHeads: c.create.numHeads, kdim: E, vdim: E, headDim: E / c.create.numHeads, valueHeadDim: E / c.create.numHeads, weightsDtype: 'float32' };
  const { output, weights } = mhaReference(config, c.stateDict, c.inputs.query, c.inputs.query, c.inputs.query, { ...c.options, isCausal: true }, cacheDtype);
  if (weights) {
    // forward() of a chunk gives weights over the keys up to its end: later columns read 0.
    let at = 0;
    for (const n of c.chunks) {
      for (let g = 0; g < weights.length / (T * T); g++) {
        for (let i = at; i < at + n; i++) weights.fill(0, (g * T + i) * T + at + n, (g * T + i + 1) * T);
      }
      at += n;
    }
  }
  c.expected = { output: { data: output, shape: c.expected.output.shape }, ...(weights ? { attnWeights: { data: weights, shape: c.expected.attnWeights.shape } } : {}) };
  return c;
}

for (const cacheDtype of ['float32', 'float16', 'int8']) {
  test(`${CACHED} random decode cases with NaN or ±Infinity in x, through a ${cacheDtype} cache on backend 'webgpu' (${adapterName}): the reference's and WASM's values`, async (t) => {
    const failures = [];
    const wasmDiffers = [];
    let nanRows = 0;
    for (let seed = 1; seed <= CACHED; seed++) {
      const c = poisonedDecodeCase(seed, cacheDtype);
      runs.length = 0;
      const [onGpu, onWasm] = [await runDecode(api, c, { create: { backend: 'webgpu', gpu } }), await runDecode(api, c)];
      if (runs.length === 0 || !runs.every((r) => r === 'webgpu')) failures.push(`seed ${seed}: ran on ${runs}`);
      const checks = [['reference', checkResult(c, onGpu)]];
      // WASM's own arithmetic on infinities can differ from the reference's (it may form a score
      // of -Inf·x and +Inf·y in another order: NaN where the reference has -Inf, a zero row): such
      // a case is held to the reference alone, and listed.
      if (checkResult(c, onWasm).ok) checks.push(['WASM', checkResult({ ...c, expected: onWasm }, onGpu)]);
      else wasmDiffers.push(seed);
      for (const [what, r] of checks) if (!r.ok) failures.push(`seed ${seed} against ${what}: ${r.detail}`);
      nanRows += c.expected.output.data.some(Number.isNaN) ? 1 : 0;
    }
    t.diagnostic(`WASM differs from the reference for seeds [${wasmDiffers}]`);
    assert.ok(nanRows >= CACHED / 2, `only ${nanRows} of ${CACHED} cases have a NaN row`);
    assert.ok(wasmDiffers.length <= CACHED / 4, `WASM differs from the reference for seeds ${wasmDiffers}`);
    assert.deepEqual(failures, [], 'replay one with poisonedDecodeCase(seed, cacheDtype)');
  });
}
