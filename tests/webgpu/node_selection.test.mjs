// The kernel selection by measurement (selection/kernel_selection.js) with an injected clock
// (selectionHooks.clock: the "time" of a call from the variants it ran): it picks the fastest
// candidate of each family, measures nothing once chosen, shares the choice with every module on
// the device, and pinned families (configure({ gpuKernels })) are never measured. The selection
// logic alone runs first on a stand-in device. Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, OptionError, configure, gpuKernelVariants } from '#webattention';
import { SELECTION_RUNS, selectionHooks } from '../internals.mjs';
import { chooseKernels, recordTime } from '../../web/src/webgpu/selection/kernel_selection.js';
import { LINEAR_LARGE_ROWS, preferredVariant } from '../../web/src/webgpu/selection/kernel_config.js';
import { filled } from '../contract/contract.mjs';
import { adapterName, freshDevice, kind, randomStateDict } from './node_setup.mjs';

after(() => {
  selectionHooks.clock = null;
  selectionHooks.onCall = null;
  configure({ gpuKernels: {} });
});

describe('selection logic (a stand-in device, no GPU)', () => {
  const candidates = ['a', 'd', 'b'].map((name) => ({ name }));
  const decisions = [
    { family: 'linear', shapeClass: 'c', candidates, preferred: 'd' },
    { family: 'attention', shapeClass: 'c', candidates: [{ name: 'row' }, { name: 'x' }], preferred: 'x' },
  ];
  const times = { a: 1.6, b: 1, d: 1.2, row: 2, x: 2.5 };

  test('the default runs first, candidates far slower than the best after one run drop out, the rest run SELECTION_RUNS times, one family per call, then the lowest median stays', () => {
    const device = {};
    const order = [];
    for (let call = 0; call < 20; call++) {
      const { measured } = chooseKernels(device, decisions, true);
      order.push(measured && `${measured.family}:${measured.name}`);
      if (measured) recordTime(device, measured, times[measured.name] + (call % 2) * 0.1);
    }
    assert.equal(order[0], 'linear:d', 'the first call runs the default');
    const count = (name) => order.filter((o) => o === name).length;
    assert.equal(count('linear:a'), 1, "'a' (1.6 against 1) is not run again");
    assert.equal(count('linear:b'), SELECTION_RUNS);
    assert.equal(count('linear:d'), SELECTION_RUNS, "'d' (1.2) stays in");
    assert.equal(count('attention:x'), SELECTION_RUNS, "'x' (2.5 against 2) stays in");
    assert.equal(count('attention:row'), SELECTION_RUNS);
    assert.equal(order.indexOf('attention:x') > order.lastIndexOf('linear:b'), true, 'one family at a time');
    const after = chooseKernels(device, decisions, true);
    assert.equal(after.measured, null, 'nothing measured once both are chosen');
    assert.deepEqual([after.variants.linear.name, after.variants.attention.name], ['b', 'row']);
    assert.equal(chooseKernels({}, decisions, true).measured.name, 'd', 'another device measures afresh');
  });

  test('the default, else its fallback, else the first variant that fits', () => {
    assert.equal(preferredVariant('attention', 128, ['row', 'tile64x16', 'wide64x16']), 'tile64x16');
    assert.equal(preferredVariant('attention', 128, ['row', 'wide64x16']), 'wide64x16');
    assert.equal(preferredVariant('attention', 128, ['row']), 'row');
    assert.equal(preferredVariant('linear', LINEAR_LARGE_ROWS - 1, ['tile64', 'r64x64k16', 'r128x128k8p']), 'r64x64k16');
    assert.equal(preferredVariant('linear', LINEAR_LARGE_ROWS, ['tile64', 'r64x64k16', 'r128x128k8p']), 'r128x128k8p');
  });

  test('a call that cannot be timed (a GpuBatch\'s) runs the default while undecided, the choice once made, and measures nothing', () => {
    const device = {};
    const untimed = chooseKernels(device, decisions, true, false);
    assert.equal(untimed.measured, null);
    assert.deepEqual([untimed.variants.linear.name, untimed.variants.attention.name], ['d', 'x']);
    for (let call = 0; call < 20; call++) {
      const { measured } = chooseKernels(device, decisions, true);
      if (measured) recordTime(device, measured, times[measured.name]);
    }
    const after = chooseKernels(device, decisions, true, false);
    assert.equal(after.measured, null);
    assert.deepEqual([after.variants.linear.name, after.variants.attention.name], ['b', 'row']);
  });

  test('without measuring (a software adapter) the default runs and nothing is measured', () => {
    const { variants, measured } = chooseKernels({}, decisions, false);
    assert.equal(measured, null);
    assert.deepEqual([variants.linear.name, variants.attention.name], ['d', 'x']);
  });
});

describe('configure({ gpuKernels }) and gpuKernelVariants()', () => {
  test('the variant names per family; pins are checked against them', async () => {
    const names = await gpuKernelVariants();
    assert.deepEqual(Object.keys(names), ['linear', 'attention', 'decode', 'q8linear', 'q8rows']);
    assert.ok(names.linear.includes('tile64') && names.attention.includes('row') && names.decode.includes('split256'));
    const refused = (value, argument) => assert.throws(() => configure({ gpuKernels: value }),
      (e) => e instanceof OptionError && e.argument === argument);
    refused({ softmax: 'row' }, 'gpuKernels');
    refused({ linear: 'row' }, 'gpuKernels.linear');
    refused('tile64', 'gpuKernels');
    configure({ gpuKernels: { linear: 'tile64', attention: null } });
    configure({ gpuKernels: null });
  });
});

describe(`selection on WebGPU with an injected clock (Dawn, ${adapterName})`, () => {
  const fastest = { linear: 'r64x128k16', attention: 'tile64x32' };
  const clocked = [];
  const ran = [];
  const create = { embedDim: 16, numHeads: 2, backend: 'webgpu' };
  const x = { data: filled(70 * 16, 5), shape: [1, 70, 16] };
  let device;
  const module = async () => {
    const mha = await MultiHeadAttention.create({ ...create, gpu: device });
    mha.loadStateDict(randomStateDict(mha.stateDictShapes, 9));
    return mha;
  };

  test('picks the fastest variant of each family, then measures nothing more', async () => {
    device = await freshDevice();
    selectionHooks.clock = (names) => {
      clocked.push(names);
      return (names.linear === fastest.linear ? 1 : 5) + (names.attention === fastest.attention ? 1 : 3);
    };
    selectionHooks.onCall = (names) => ran.push(names);
    const mha = await module();
    for (let i = 0; i < 40 && mha.gpuProfile().classes.some((c) => c.chosen === null) || i === 0; i++) await mha.forward(x, x, x);
    const { classes, measuring, pinned } = mha.gpuProfile();
    // A hardware adapter measures by itself; on SwiftShader only the injected clock selects.
    assert.equal(measuring, kind === 'hardware', `${adapterName}: measuring`);
    assert.deepEqual(pinned, {});
    assert.deepEqual(Object.fromEntries(classes.map((c) => [c.family, c.chosen])), fastest);
    const linear = classes.find((c) => c.family === 'linear');
    assert.equal(linear.runs[fastest.linear], SELECTION_RUNS, 'the fastest ran SELECTION_RUNS times');
    assert.ok(Object.values(linear.runs).every((n) => n === 1 || n === SELECTION_RUNS), 'the others once (far slower) or as often');
    const measuredCalls = clocked.length;
    for (let i = 0; i < 3; i++) await mha.forward(x, x, x);
    assert.equal(clocked.length, measuredCalls, 'no call measured after the choice');
    assert.deepEqual(ran.at(-1), fastest, 'the chosen variants run');
    mha.dispose();
  });

  test('another module on the same device uses the choice without measuring', async () => {
    const before = clocked.length;
    const mha = await module();
    ran.length = 0;
    await mha.forward(x, x, x);
    assert.equal(clocked.length, before);
    assert.deepEqual(ran, [fastest]);
    assert.deepEqual(Object.fromEntries(mha.gpuProfile().classes.map((c) => [c.family, c.chosen])), fastest);
    mha.dispose();
  });

  test('pinned families run the pinned variant and are never measured, even in a new shape class', async () => {
    const mha = await module();
    configure({ gpuKernels: { linear: 'tile64', attention: 'row' } });
    const before = clocked.length;
    ran.length = 0;
    const long = { data: filled(300 * 16, 6), shape: [1, 300, 16] };
    await mha.forward(long, long, long);
    assert.equal(clocked.length, before, 'nothing measured');
    assert.deepEqual(ran, [{ linear: 'tile64', attention: 'row' }]);
    assert.deepEqual(mha.gpuProfile().pinned, { linear: 'tile64', attention: 'row' });
    configure({ gpuKernels: {} });
    mha.dispose();
    device.destroy();
  });
});
