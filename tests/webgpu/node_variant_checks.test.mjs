// Candidates checked on the device (selection/kernel_selection.js): a candidate's first run is
// compared with its reference's (the family's default) on the same call; one further from it than
// its tolerance is dropped for the device, listed by gpuProfile().rejected and warned of once, and
// every call's result stays correct. A deliberately wrong linear variant (tile64 with its outputs
// scaled by 1.01) is offered through selectionHooks.candidates, and the injected clock makes it
// the fastest, on SwiftShader as on a GPU; so is one that does not compile, and one whose dispatches
// WebGPU refuses when it runs. The checks'
// bookkeeping runs first on a stand-in device.
// Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { SELECTION_RUNS, selectionHooks } from '../internals.mjs';
import { chooseKernels, recordCheck, recordTime, resultDistance } from '../../web/src/webgpu/selection/kernel_selection.js';
import { VARIANTS } from '../../web/src/webgpu/programs.js';
import { filled, mhaReference } from '../contract/contract.mjs';
import { adapterName, assertClose, captureWarnings, freshDevice, randomStateDict } from './node_setup.mjs';

after(() => Object.assign(selectionHooks, { clock: null, onCall: null, candidates: null }));

describe('the checks\' bookkeeping (a stand-in device, no GPU)', () => {
  const decision = (shapeClass) => ({
    family: 'linear', shapeClass, preferred: 'd', candidates: ['d', 'good', 'bad'].map((name) => ({ name, tolerance: 1e-4 })),
  });

  test('a candidate\'s first run names its reference, its later runs do not; a rejected one is gone from every class of the device', async () => {
    const device = {};
    const first = chooseKernels(device, [decision('c')], true).measured;
    assert.deepEqual([first.name, first.reference], ['d', null], 'the default is its own reference');
    recordTime(device, first, 1);
    const good = chooseKernels(device, [decision('c')], true).measured;
    assert.deepEqual([good.name, good.reference?.name], ['good', 'd']);
    assert.equal(recordCheck(device, good, 1e-6, 1e-4), true);
    recordTime(device, good, 1);
    const bad = chooseKernels(device, [decision('c')], true).measured;
    assert.equal(bad.name, 'bad');
    const { warnings } = await captureWarnings(() => recordCheck(device, bad, 0.5, 1e-4));
    assert.equal(warnings.length, 1);
    for (let i = 0; i < 10; i++) {
      const { measured } = chooseKernels(device, [decision('c')], true);
      if (!measured) break;
      assert.notEqual(measured.name, 'bad');
      assert.equal(measured.reference, null, `${measured.name}: checked once only`);
      recordTime(device, measured, 1);
    }
    const other = chooseKernels(device, [decision('other')], true);
    const seen = new Set();
    for (let i = 0, m = other.measured; m && i < 10; i++, m = chooseKernels(device, [decision('other')], true).measured) {
      seen.add(m.name);
      if (m.reference) recordCheck(device, m, 0, 1e-4);
      recordTime(device, m, 1);
    }
    assert.deepEqual([...seen].sort(), ['d', 'good'], 'bad is not tried in another class');
  });

  test('resultDistance: NaN against NaN is equal, against a number infinitely far', () => {
    const r = (output, weights = null) => ({ output: Float32Array.from(output), weights: weights && Float32Array.from(weights) });
    assert.equal(resultDistance(r([1, NaN, Infinity]), r([1, NaN, Infinity])), 0);
    assert.equal(resultDistance(r([1, 2]), r([1, NaN])), Infinity);
    assert.equal(resultDistance(r([1, 2], [0.5]), r([1, 2], [0.25])), 0.25);
  });
});

// tile64 made into a candidate of its own, `name`, its WGSL changed by change(code).
function changedTile64(name, change) {
  const base = VARIANTS.linear.tile64;
  return { ...base, name, key: (problem) => `${name}:${base.key(problem)}`, shader: (problem) => change(base.shader(problem)) };
}

// A module of E 16, 2 heads on `device`, with its state dict.
async function moduleOn(device) {
  const mha = await MultiHeadAttention.create({ embedDim: 16, numHeads: 2, backend: 'webgpu', gpu: device });
  const sd = randomStateDict(mha.stateDictShapes, 9);
  mha.loadStateDict(sd);
  return { mha, sd };
}

// One call of L rows, checked against the float64 reference.
async function checkedCall({ mha, sd }, L, seed) {
  const x = { data: filled(L * 16, seed), shape: [1, L, 16] };
  const r = await mha.forward(x, x, x);
  assertClose(r.output, { data: mhaReference(mha.config, sd, x, x, x).output, shape: x.shape }, `call ${seed} (L = ${L})`);
}

// Linear's default, one good candidate and `candidate`, which the clock makes the fastest;
// attention's default alone (not measured). ran: the linear variant of every GPU call.
function offerFastest(candidate, ran) {
  selectionHooks.candidates = (family, list) => (family === 'linear'
    ? [...list.filter((v) => ['r64x64k16', 'tile64'].includes(v.name)), candidate] : list.slice(0, 1));
  selectionHooks.clock = (names) => (names.linear === candidate.name ? 0.1 : 1);
  selectionHooks.onCall = (names) => ran.push(names.linear);
}

// fn({ module, ran }) on a module of a fresh device where `candidate` is offered as the fastest
// (offerFastest()); both disposed after.
async function withCandidate(candidate, fn) {
  const device = await freshDevice();
  device.addEventListener?.('uncapturederror', () => {});  // the candidate's own errors, expected
  const ran = [];
  offerFastest(candidate, ran);
  const module = await moduleOn(device);
  try {
    await fn({ module, ran });
  } finally {
    module.mha.dispose();
    device.destroy();
  }
}

describe(`a wrong candidate on WebGPU (Dawn, ${adapterName})`, () => {
  const broken = changedTile64('broken', (code) => {
    const wrong = code.replace('acc[i * 4u + j] + bias', '1.01 * acc[i * 4u + j] + bias');
    assert.notEqual(wrong, code, 'the linear kernel changed: find another place to break it');
    return wrong;
  });
  const ran = [];
  let device;

  test('is dropped for the device, reported, warned of once, and no call returns its result', async () => {
    device = await freshDevice();
    offerFastest(broken, ran);
    const module = await moduleOn(device);
    const { warnings } = await captureWarnings(async () => {
      for (let i = 0; i < 12; i++) await checkedCall(module, 70, 100 + i);
    });
    const profile = module.mha.gpuProfile();
    assert.equal(ran.filter((n) => n === 'broken').length, 1, 'the broken candidate ran once');
    assert.equal(profile.rejected.length, 1, JSON.stringify(profile.rejected));
    const [rejected] = profile.rejected;
    assert.equal(rejected.kernel, 'linear');
    assert.equal(rejected.variant, 'broken');
    assert.ok(rejected.maxAbsDiff > rejected.tolerance && rejected.tolerance > 0, JSON.stringify(rejected));
    const linear = profile.classes.find((c) => c.family === 'linear');
    assert.equal(linear.runs.broken, undefined, 'its time is not kept');
    assert.ok(['r64x64k16', 'tile64'].includes(linear.chosen), `chosen ${linear.chosen}`);
    assert.equal(linear.runs.tile64, SELECTION_RUNS, 'the good candidate passed its check and stayed in');
    assert.equal(warnings.filter((w) => w.includes("'broken'")).length, 1, warnings.join('\n'));
    module.mha.dispose();
  });

  test('another shape class and another module on the device never run it, and no second warning', async () => {
    ran.length = 0;
    const module = await moduleOn(device);
    const { warnings } = await captureWarnings(async () => {
      for (let i = 0; i < 8; i++) await checkedCall(module, 300, 200 + i);
    });
    assert.ok(ran.length >= 8 && !ran.includes('broken'), ran.join());
    assert.deepEqual(warnings, []);
    assert.equal(module.mha.gpuProfile().rejected.length, 1);
    module.mha.dispose();
  });

  test('on calls with a KV cache too: every step is the causal reference\'s rows (the cache holds what the reference wrote)', async () => {
    const fresh = await freshDevice();
    const saved = device;
    device = fresh;
    ran.length = 0;
    const { mha, sd } = await moduleOn(device);
    const N = 48;
    const seq = { data: filled(N * 16, 300), shape: [1, N, 16] };
    const want = mhaReference(mha.config, sd, seq, seq, seq, { isCausal: true }).output;
    const cache = mha.createCache({ maxLength: 64 });
    const rows = (from, to) => ({ data: seq.data.slice(from * 16, to * 16), shape: [1, to - from, 16] });
    const { warnings } = await captureWarnings(async () => {
      for (let [from, to] = [0, 36]; from < N; [from, to] = [to, to + 1]) {
        const x = rows(from, to);
        const r = await mha.forward(x, x, x, { cache });
        assertClose(r.output, { data: want.slice(from * 16, to * 16), shape: x.shape }, `rows ${from}..${to}`);
      }
    });
    assert.ok(ran.includes('broken'), `the broken candidate ran on a cached call: ${ran.join()}`);
    assert.deepEqual(mha.gpuProfile().rejected.map((r) => r.variant), ['broken']);
    assert.deepEqual(warnings, [], 'warned once per process: already');
    mha.dispose();
    fresh.destroy();
    device = saved;
  });

  test('a call whose result stays on the GPU measures nothing (its candidate could not be checked)', async () => {
    const fresh = await freshDevice();
    let clocked = 0;
    selectionHooks.clock = () => (clocked++, 1);
    const mha = await MultiHeadAttention.create({ embedDim: 16, numHeads: 2, backend: 'webgpu', gpu: fresh });
    mha.loadStateDict(randomStateDict(mha.stateDictShapes, 9));
    const x = { data: filled(70 * 16, 3), shape: [1, 70, 16] };
    const r = await mha.forward(x, x, x, { output: 'gpu-buffer', needWeights: false });
    r.output.destroy?.();
    assert.equal(clocked, 0);
    await mha.forward(x, x, x);
    assert.equal(clocked, 1, 'a call read back measures');
    mha.dispose();
    fresh.destroy();
    device.destroy();
  });
});

// A candidate whose program does not compile on the device (a feature or a subgroup size CI never
// saw, or a browser's compiler with rules of its own) never fails a call: on its first run its
// pipelines fail, it is dropped for the device (kernel_selection.js's recordCompileFailure()),
// reported by gpuProfile().rejected with the compiler's message and warned of once, and the call
// chooses again.
describe(`a candidate that does not compile (Dawn, ${adapterName})`, () => {
  const uncompilable = changedTile64('uncompilable', (code) => `${code}\nfn broken() -> f32 { return undefinedName; }\n`);

  test('is dropped for the device, reported with the compiler\'s message, warned of once; every call is right', async () => {
    await withCandidate(uncompilable, async ({ module, ran }) => {
      const { warnings } = await captureWarnings(async () => {
        for (let i = 0; i < 10; i++) await checkedCall(module, 70, 40 + i);
      });
      assert.ok(ran.length >= 10 && !ran.includes('uncompilable'), ran.join());
      const { rejected, classes } = module.mha.gpuProfile();
      assert.equal(rejected.length, 1, JSON.stringify(rejected));
      assert.equal(rejected[0].variant, 'uncompilable');
      assert.equal(rejected[0].maxAbsDiff, null);
      assert.ok(typeof rejected[0].error === 'string' && rejected[0].error.length > 0, JSON.stringify(rejected[0]));
      assert.equal(classes.find((c) => c.family === 'linear').runs.uncompilable, undefined, 'no time kept');
      assert.equal(warnings.filter((w) => w.includes("'uncompilable' did not compile")).length, 1, warnings.join('\n'));
    });
  });
});

// A candidate that compiles but whose dispatches WebGPU refuses (a binding its layout lacks, found
// only when the call runs) is dropped the same way on its first run (recordRunFailure()), and that
// call is made with its reference: every call right, none failed.
describe(`a candidate refused when it runs (Dawn, ${adapterName})`, () => {
  const unbindable = changedTile64('unbindable', (code) => code
    .replace('@group(0) @binding(4) var<storage, read_write> y: array<f32>;',
      '@group(0) @binding(4) var<storage, read_write> y: array<f32>;\n@group(0) @binding(5) var<storage, read> extra: array<f32>;')
    .replace('acc[i * 4u + j] + bias[p.bOff + n]', 'acc[i * 4u + j] + bias[p.bOff + n] + extra[0] * 0.0'));

  test('is dropped for the device, reported with WebGPU\'s message, warned of once; every call is right', async () => {
    await withCandidate(unbindable, async ({ module, ran }) => {
      const { warnings } = await captureWarnings(async () => {
        for (let i = 0; i < 10; i++) await checkedCall(module, 70, 60 + i);
      });
      assert.equal(ran.filter((v) => v === 'unbindable').length, 1, ran.join());
      const { rejected } = module.mha.gpuProfile();
      assert.deepEqual(rejected.map((r) => [r.variant, r.maxAbsDiff]), [['unbindable', null]], JSON.stringify(rejected));
      assert.match(rejected[0].error, /binding|entries/i);
      assert.equal(warnings.filter((w) => w.includes("'unbindable' failed when it ran")).length, 1, warnings.join('\n'));
    });
  });
});
