// A GpuStep's lifetime against its callers (dispatch/gpu_step.js, gpu_batch.js): the modules of its
// calls held while it lives (a module the app dropped is disposed once collected, api.js, which
// would break every replay); a replay() made before the recording's submit settled, both refused,
// leaves the cache where it was; the read() of a result dropped unsubmitted rejects rather than
// give the place's old values, and a dispose() the moment a call is recorded puts its cache back;
// an encode() into a step while its replay runs is refused.
// Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { GpuStep, MultiHeadAttention } from '#webattention';
import { filled } from '../contract/contract.mjs';
import { adapterName, device, randomStateDict, seededModules } from './node_setup.mjs';
import { COPY_DST, COPY_SRC, STORAGE, gpuTensor } from './gpu_tensor_inputs.mjs';

const E = 16;
const { module } = seededModules({ embedDim: E, numHeads: 4, numKvHeads: 2, rotary: {}, backend: 'webgpu' });
const place = () => ({ gpuBuffer: device.createBuffer({ size: E * 4, usage: STORAGE | COPY_SRC | COPY_DST }), shape: [1, 1, E] });
const row = (seed) => gpuTensor(filled(E, seed), [1, 1, E]);
const into = (cache, out, batch) => ({ cache, output: 'gpu-buffer', out, batch });

// One call of a module of `seed` recorded into a new GpuStep (not submitted): { cache, x, step, output }.
async function recording(seed) {
  const mha = await module({}, seed);
  const cache = mha.createCache({ maxLength: 16 });
  const x = row(seed + 1);
  const out = place();
  device.queue.writeBuffer(out.gpuBuffer, 0, new Float32Array(E).fill(7));  // what a dropped result must not read as its own
  const gpuStep = new GpuStep();
  const { output } = await mha.forward(x, x, x, into(cache, out, gpuStep));
  return { cache, x, gpuStep, output };
}

// A full collection, run until the FinalizationRegistry's callbacks had their turns.
async function collect() {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc');
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe(`GpuStep lifetime (Dawn, ${adapterName})`, () => {
  test('a step holds the modules of its calls: replays after a collection, the app holding the step and cache alone', async () => {
    const x = row(1401);
    const out = place();
    const record = async () => {
      // Made here, not by module() (whose list would hold it): dropped on return.
      const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 4, numKvHeads: 2, rotary: {}, backend: 'webgpu', gpu: device });
      mha.loadStateDict(randomStateDict(mha.stateDictShapes, 1400));
      const cache = mha.createCache({ maxLength: 16 });
      const gpuStep = new GpuStep();
      await mha.forward(x, x, x, into(cache, out, gpuStep));
      await gpuStep.submit();
      return { gpuStep, cache };
    };
    const { gpuStep, cache } = await record();
    await collect();
    await gpuStep.replay();
    assert.equal(cache.length, 2);
    gpuStep.dispose();
    await collect();  // the step gone, its module with it: the cache is disposed
    assert.throws(() => cache.length, { name: 'DisposedError' });
  });

  test('a replay() before the recording\'s refused submit settled: both refused, the cache at 0', async () => {
    const { cache, x, gpuStep } = await recording(1410);
    x.gpuBuffer.destroy();
    const outcomes = await Promise.allSettled([gpuStep.submit(), gpuStep.replay()]);
    assert.deepEqual(outcomes.map((o) => o.status), ['rejected', 'rejected']);
    assert.equal(cache.length, 0, 'no position claimed that was never written');
  });

  test('the read() of a result dropped unsubmitted (dispose() of a recording) rejects with a DisposedError', async () => {
    const { cache, gpuStep, output } = await recording(1420);
    gpuStep.dispose();
    await assert.rejects(output.read(), { name: 'DisposedError', argument: 'batch' });
    assert.equal(cache.length, 0);
  });

  test('dispose() of a recording the moment its call is recorded, before forward() resolves: the cache back at its length', async () => {
    const mha = await module({}, 1440);
    const cache = mha.createCache({ maxLength: 16 });
    const x = row(1441);
    const gpuStep = new GpuStep();
    const made = mha.forward(x, x, x, into(cache, place(), gpuStep));
    // Each microtask until the step holds the call: the gap where the cache had not yet advanced.
    for (let i = 0; i < 1e5 && gpuStep.pending === 0; i++) await Promise.resolve();
    assert.equal(gpuStep.pending, 1);
    gpuStep.dispose();
    await made;
    assert.equal(cache.length, 0, 'the dropped call appended nothing');
  });

  test('an encode() into the step while its replay() runs: an OptionError naming batch, nothing of it in the replay', async () => {
    const { cache, gpuStep } = await recording(1430);
    await gpuStep.submit();
    let called = false;
    const replaying = gpuStep.replay();
    assert.throws(() => gpuStep.encode(device, () => { called = true; }), { name: 'OptionError', argument: 'batch' });
    await replaying;
    assert.equal(called, false);
    assert.equal(cache.length, 2);
  });
});
