// backend 'auto''s GPU threshold measured per device (dispatch/auto_threshold.js): the rule alone
// first (samples move it, the window, done after AUTO_THRESHOLD_SAMPLES), then on SwiftShader
// (acquisitionHooks.software lets 'auto' take it without a webgpuMinFlops): a call near the
// threshold runs on WASM and on the GPU, timed, with a correct result; the threshold moves the way
// the samples say (SwiftShader is far slower than WASM: up), gpuProfile() reports it, a call far
// from it runs once, calls made together are timed only where none waited behind another, and a
// measured device samples nothing more. Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { AUTO_THRESHOLD_SAMPLES, AUTO_THRESHOLD_WINDOW, DEFAULT_WEBGPU_MIN_FLOPS, forwardFlops } from '../../web/src/base/cost_model.js';
import { deviceThreshold, recordSample, wantsSample } from '../../web/src/dispatch/auto_threshold.js';
import { acquisitionHooks } from '../../web/src/webgpu/gpu_acquisition.js';
import { filled, mhaReference } from '../contract/contract.mjs';
import { adapterName, assertClose, freshDevice, randomStateDict, runs } from './node_setup.mjs';

after(() => { acquisitionHooks.software = false; });

describe('the measured threshold\'s rule (a stand-in device, no GPU)', () => {
  test('starts at the default; the CPU faster moves it above the sample, the GPU faster below, both between', () => {
    const D = DEFAULT_WEBGPU_MIN_FLOPS;
    const up = deviceThreshold({});
    assert.deepEqual([up.flops, up.measured, up.samples], [D, false, []]);
    assert.equal(wantsSample(up, D / AUTO_THRESHOLD_WINDOW), true);
    assert.equal(wantsSample(up, D * AUTO_THRESHOLD_WINDOW * 1.01), false);
    assert.equal(wantsSample(up, D / AUTO_THRESHOLD_WINDOW / 1.01), false);
    recordSample(up, D, 1, 2);
    assert.equal(up.flops, 2 * D, 'the CPU was faster at D: the crossover is above it');
    const down = deviceThreshold({});
    recordSample(down, D, 2, 1);
    assert.equal(down.flops, D / 2);
    recordSample(down, D / 8, 1, 2);
    assert.equal(down.flops, Math.sqrt(D / 8 * D), 'between the CPU\'s fastest and the GPU\'s');
  });

  test(`done after ${AUTO_THRESHOLD_SAMPLES} samples: no more sampling, no more moving`, () => {
    const state = deviceThreshold({});
    for (let i = 0; i < AUTO_THRESHOLD_SAMPLES; i++) recordSample(state, state.flops, 1, 2);
    assert.equal(state.measured, true);
    const { flops } = state;
    assert.equal(wantsSample(state, flops), false);
    recordSample(state, flops, 1, 2);
    assert.deepEqual([state.flops, state.samples.length], [flops, AUTO_THRESHOLD_SAMPLES]);
  });
});

describe(`'auto''s threshold measured on WebGPU (Dawn, ${adapterName})`, () => {
  const E = 64;
  const create = { embedDim: E, numHeads: 4, backend: 'auto' };
  let device;
  const call = async (mha, sd, L, seed) => {
    const x = { data: filled(L * E, seed), shape: [1, L, E] };
    runs.length = 0;
    const r = await mha.forward(x, x, x);
    assertClose(r.output, { data: mhaReference(mha.config, sd, x, x, x).output, shape: x.shape }, `L = ${L}`);
    return [...runs];
  };
  const flopsOf = (mha, L) => forwardFlops({ B: 1, L, S: L, needWeights: false }, mha.config);

  test('calls near it run on both and move it; calls far from it run once; a measured device samples no more', async () => {
    acquisitionHooks.software = true;
    device = await freshDevice();
    const mha = await MultiHeadAttention.create({ ...create, gpu: device });
    const sd = randomStateDict(mha.stateDictShapes, 3);
    mha.loadStateDict(sd);
    const first = 512;  // above the default: the first call asks for the GPU, and is sampled
    assert.ok(flopsOf(mha, first) >= DEFAULT_WEBGPU_MIN_FLOPS && flopsOf(mha, first) < 2 * DEFAULT_WEBGPU_MIN_FLOPS);
    assert.deepEqual(await call(mha, sd, first, 1), ['wasm', 'webgpu'], 'the first call near the threshold ran on both');
    let profile = mha.gpuProfile().autoThreshold;
    assert.equal(profile.samples.length, 1);
    const [sample] = profile.samples;
    assert.equal(sample.flops, flopsOf(mha, first));
    assert.ok(sample.cpuMs > 0 && sample.gpuMs > 0, JSON.stringify(sample));
    // Where the samples say the CPU was faster, the threshold is above them (and the other way).
    const consistent = (p) => p.samples.every((s) => (s.cpuMs <= s.gpuMs ? p.flops > s.flops : p.flops <= s.flops));
    assert.ok(consistent(profile), JSON.stringify(profile));
    assert.deepEqual(await call(mha, sd, first, 2), ['wasm', 'webgpu'], 'still near it: sampled again');
    profile = mha.gpuProfile().autoThreshold;
    assert.equal(profile.samples.length, 2);
    assert.ok(consistent(profile), JSON.stringify(profile));
    assert.equal(profile.measured, false);
    // Far under the window: one run, where the threshold sends it.
    const small = 32;
    assert.ok(flopsOf(mha, small) * AUTO_THRESHOLD_WINDOW < profile.flops);
    assert.equal((await call(mha, sd, small, 3)).length, 1);
    // The rest of the samples as the rule takes them; then a call near it runs once.
    const state = deviceThreshold(device);
    while (!state.measured) recordSample(state, state.flops, 1, 2);
    assert.equal(mha.gpuProfile().autoThreshold.measured, true);
    assert.equal((await call(mha, sd, first, 4)).length, 1, 'measured: no more sampling');
    mha.dispose();
  });

  test('calls made together: each right, but only one whose GPU run waited for no other becomes a sample', async () => {
    const own = await freshDevice();
    const mha = await MultiHeadAttention.create({ ...create, gpu: own });
    const sd = randomStateDict(mha.stateDictShapes, 6);
    mha.loadStateDict(sd);
    const L = 512;
    await call(mha, sd, L, 7);  // acquires the GPU: one sample
    assert.equal(mha.gpuProfile().autoThreshold.samples.length, 1);
    // Each sampled on both; the GPU runs queue behind one another, so only the first is timed alone.
    const together = [8, 9, 10].map((seed) => {
      const x = { data: filled(L * E, seed), shape: [1, L, E] };
      return mha.forward(x, x, x).then((r) => assertClose(r.output, { data: mhaReference(mha.config, sd, x, x, x).output, shape: x.shape }));
    });
    await Promise.all(together);
    assert.equal(mha.gpuProfile().autoThreshold.samples.length, 2, JSON.stringify(mha.gpuProfile().autoThreshold));
    mha.dispose();
    own.destroy();
  });

  test('a module with its own webgpuMinFlops keeps it and never samples', async () => {
    const mha = await MultiHeadAttention.create({ ...create, gpu: device, webgpuMinFlops: 1e6 });
    const sd = randomStateDict(mha.stateDictShapes, 4);
    mha.loadStateDict(sd);
    assert.deepEqual(await call(mha, sd, 128, 5), ['webgpu']);
    assert.deepEqual(mha.gpuProfile().autoThreshold, { flops: 1e6, measured: false, samples: [] });
    mha.dispose();
    device.destroy();
  });
});
