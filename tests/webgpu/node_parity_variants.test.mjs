// The PyTorch MHA fixtures through the test contract's runCase() with every kernel variant pinned
// (configure({ gpuKernels })): round i pins the i-th linear variant with the (i mod n)-th flash
// variant, so each variant of each family runs every fixture it fits (wide64x16 is only for wide
// heads, which no fixture has, and rows8 for a decode step's few rows: node_variants.test.mjs covers
// them); each call is checked to have run the pinned variants where they fit. On SwiftShader, the covering subset of rounds × fixtures
// (onGpuOrCovering): every round and every fixture once. Set-up: node_setup.mjs
// (node_parity.test.mjs runs every fixture on the defaults).
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { runCase } from '../contract/contract.mjs';
import { caseFlops, resolveMhaConfig, selectionHooks } from '../internals.mjs';
import { fittingVariants } from '../../web/src/webgpu/programs.js';
import { MAX_FIXTURE_FLOPS } from './adapter.mjs';
import { pairs } from './covering.mjs';
import { adapter, adapterName, fixtures, gpu, onGpuOrCovering } from './node_setup.mjs';

const names = await api.gpuKernelVariants();
// A fixture's largest projection's rows (B·L or B·S), which a linear variant's fits() reads.
const callRows = ({ inputs: { query, key } }) => Math.max(...[query, key].map((t) => t.shape.slice(0, -1).reduce((a, b) => a * b, 1)));
const rounds = Math.max(names.linear.length, names.attention.length);
const small = fixtures.filter((c) => caseFlops(c) <= MAX_FIXTURE_FLOPS);
const kept = onGpuOrCovering(pairs([...Array(rounds).keys()], small), ([round, c]) => [round, c.name]);
const ran = [];
selectionHooks.onCall = (variants) => ran.push(variants);
after(() => {
  selectionHooks.onCall = null;
  api.configure({ gpuKernels: {} });
});

for (let round = 0; round < rounds; round++) {
  const pins = { linear: names.linear[round % names.linear.length], attention: names.attention[round % names.attention.length] };
  describe(`PyTorch parity on WebGPU with linear '${pins.linear}', attention '${pins.attention}' (Dawn, ${adapterName})`, () => {
    const cases = kept.filter(([r]) => r === round).map(([, c]) => c);
    test(`${cases.length} of the ${small.length} fixtures`, async () => {
      api.configure({ gpuKernels: pins });
      const failures = [];
      for (const c of cases) {
        ran.length = 0;
        const r = await runCase(api, c, { create: { backend: 'webgpu', gpu } });
        if (!r.ok) failures.push(`${c.name}: ${r.detail}`);
        const { headDim: dk, valueHeadDim: dv } = resolveMhaConfig(c.create);
        const fits = fittingVariants('attention', adapter, { dk, dv }).some((v) => v.name === pins.attention);
        // A float32 module on this adapter runs the pin where fittingVariants() offers it (its
        // limits, its features, the module's precision), else the default.
        const linearFits = fittingVariants('linear', adapter, { rows: callRows(c) }).some((v) => v.name === pins.linear);
        const wrong = ran.find((v) => (linearFits && v.linear !== pins.linear) || (fits && v.attention && v.attention !== pins.attention));
        if (r.backend !== 'webgpu' || ran.length === 0 || wrong) failures.push(`${c.name}: ran ${JSON.stringify(ran)} on ${r.backend}`);
      }
      assert.deepEqual(failures, []);
    });
  });
}
