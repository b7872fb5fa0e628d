// A candidate whose program does not compile on the device (a feature or a subgroup size CI never
// saw, or a browser's compiler with rules of its own) never fails a call: on its first run its
// pipelines fail, it is dropped for the device (kernel_selection.js's recordCompileFailure()),
// reported by gpuProfile().rejected with the compiler's message and warned of once, and the call
// chooses again. Offered through selectionHooks.candidates, made the fastest by the injected
// clock, on SwiftShader as on a GPU. Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { selectionHooks } from '../internals.mjs';
import { VARIANTS } from '../../web/src/webgpu/programs.js';
import { filled, mhaReference } from '../contract/contract.mjs';
import { adapterName, assertClose, captureWarnings, freshDevice, randomStateDict } from './node_setup.mjs';

after(() => Object.assign(selectionHooks, { clock: null, onCall: null, candidates: null }));

describe(`a candidate that does not compile (Dawn, ${adapterName})`, () => {
  const base = VARIANTS.linear.tile64;
  const uncompilable = {
    ...base, name: 'uncompilable', key: (problem) => `uncompilable:${base.key(problem)}`,
    shader: (problem) => `${base.shader(problem)}\nfn broken() -> f32 { return undefinedName; }\n`,
  };

  test('is dropped for the device, reported with the compiler\'s message, warned of once; every call is right', async () => {
    const device = await freshDevice();
    device.addEventListener?.('uncapturederror', () => {});  // the shader module's own error, expected
    const ran = [];
    selectionHooks.candidates = (family, list) => (family === 'linear'
      ? [...list.filter((v) => ['r64x64k16', 'tile64'].includes(v.name)), uncompilable] : list.slice(0, 1));
    selectionHooks.clock = (names) => (names.linear === 'uncompilable' ? 0.1 : 1);
    selectionHooks.onCall = (names) => ran.push(names.linear);
    const mha = await MultiHeadAttention.create({ embedDim: 16, numHeads: 2, backend: 'webgpu', gpu: device });
    try {
      const sd = randomStateDict(mha.stateDictShapes, 5);
      mha.loadStateDict(sd);
      const { warnings } = await captureWarnings(async () => {
        for (let i = 0; i < 10; i++) {
          const x = { data: filled(70 * 16, 40 + i), shape: [1, 70, 16] };
          const r = await mha.forward(x, x, x);
          assertClose(r.output, { data: mhaReference(mha.config, sd, x, x, x).output, shape: x.shape }, `call ${i}`);
        }
      });
      assert.ok(ran.length >= 10 && !ran.includes('uncompilable'), ran.join());
      const { rejected, classes } = mha.gpuProfile();
      assert.equal(rejected.length, 1, JSON.stringify(rejected));
      assert.equal(rejected[0].variant, 'uncompilable');
      assert.equal(rejected[0].maxAbsDiff, null);
      assert.ok(typeof rejected[0].error === 'string' && rejected[0].error.length > 0, JSON.stringify(rejected[0]));
      assert.equal(classes.find((c) => c.family === 'linear').runs.uncompilable, undefined, 'no time kept');
      assert.equal(warnings.filter((w) => w.includes("'uncompilable' did not compile")).length, 1, warnings.join('\n'));
    } finally {
      mha.dispose();
      device.destroy();
    }
  });
});
