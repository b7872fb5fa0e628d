// create({ gpuPrecision: 'float16' }): the float16-arithmetic linear variants (kernel_config.js's
// 'h' names, linear_tiled.wgsl.js's `half`). SwiftShader has no 'shader-f16', so here:
// - the option's checks, and which devices and modules the variants are offered to (stand-ins);
// - a float16 module on this adapter: warned once, reported by gpuProfile().precision, the
//   variants never run, the results float32's;
// - each variant's program compiled with f32 in place of f16 (programs.js's halfTwin(): the same
//   WGSL but for that type name, which is checked here), pinned, against WASM on ragged tiles,
//   both load flavours and a narrow weights dtype; and with every value rounded to f16
//   ('f16-rounded'), float16's error against WASM, within the variants' tolerance. naga validates the f16 programs themselves
//   (wgsl_naga.test.mjs), and a device that has the feature checks each against the float32
//   default on its first run (node_variant_checks.test.mjs). Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, OptionError, configure } from '#webattention';
import { selectionHooks } from '../internals.mjs';
import { VARIANTS, fittingVariants, halfTwin } from '../../web/src/webgpu/programs.js';
import { HALF_TOLERANCE, variantFeatures } from '../../web/src/webgpu/selection/kernel_config.js';
import { filled, mhaReference } from '../contract/contract.mjs';
import { adapter, adapterName, assertClose, captureWarnings, gpu, gpuAndWasm, gpuMatchesWasm, randomStateDict } from './node_setup.mjs';
import { resultDistance, toleranceFor } from '../../web/src/webgpu/selection/kernel_selection.js';

const HALF = Object.keys(VARIANTS.linear).filter((name) => VARIANTS.linear[name].precision === 'float16');
const ran = [];
after(() => {
  Object.assign(selectionHooks, { onCall: null, candidates: null });
  configure({ gpuKernels: {} });
});

describe('the option and where its variants are offered (no GPU)', () => {
  test('gpuPrecision: a typed error names it for a value it does not take, and with backend \'wasm\'', async () => {
    await assert.rejects(MultiHeadAttention.create({ embedDim: 8, numHeads: 2, gpuPrecision: 'float64' }),
      (e) => e instanceof OptionError && e.argument === 'gpuPrecision' && /'float32' \| 'float16'/.test(e.message));
    await assert.rejects(MultiHeadAttention.create({ embedDim: 8, numHeads: 2, backend: 'wasm', gpuPrecision: 'float16' }),
      (e) => e instanceof OptionError && e.argument === 'gpuPrecision' && e.actual === "backend 'wasm'");
    const plain = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, backend: 'wasm', gpuPrecision: 'float32' });
    plain.dispose();
  });

  test('offered only to float16 modules on devices with shader-f16, beside the float32 variants', () => {
    assert.deepEqual(HALF, ['h64x64k16', 'h128x128k16']);
    const limits = { maxComputeWorkgroupStorageSize: 16384 };
    const names = (features, precision) => fittingVariants('linear', { limits, features }, { rows: 70, precision }).map((v) => v.name);
    const float32 = names(new Set(['shader-f16']), 'float32');
    assert.ok(float32.includes('r64x64k16') && !float32.some((n) => HALF.includes(n)), float32.join());
    assert.deepEqual(names(new Set(['shader-f16']), 'float16'), [...float32, ...HALF]);
    assert.deepEqual(names(new Set(), 'float16'), float32, 'no feature, no float16 variant');
    assert.ok(variantFeatures().includes('shader-f16'), 'device.js asks for it where offered');
    for (const name of HALF) {
      assert.equal(VARIANTS.linear[name].tolerance, HALF_TOLERANCE);
      assert.match(VARIANTS.linear[name].shader({ M: 4, N: 4, K: 4, xOff: 0, xStride: 4, wOff: 0, weights: 'float32' }), /^enable f16;\n/);
    }
  });

  test('each twin is its variant\'s program with f32 in place of f16, under a key of its own', () => {
    for (const name of HALF) {
      for (const weights of ['float32', 'int4']) {
        for (const K of [8, 7]) {
          const problem = { M: 70, N: 24, K, xOff: 0, xStride: K, wOff: 0, weights };
          const half = VARIANTS.linear[name].shader(problem);
          assert.equal(half.replace(/^enable f16;\n/, '\n').replace(/\bf16\b/g, 'f32'), halfTwin(name).shader(problem), `${name} ${weights} K ${K}`);
          assert.notEqual(halfTwin(name).key(problem), VARIANTS.linear[name].key(problem));
        }
      }
    }
  });
});

describe(`a float16 module on an adapter without shader-f16 (Dawn, ${adapterName})`, () => {
  test('warned once, reported, its projections float32\'s: no float16 variant runs', async () => {
    assert.ok(!adapter.features.has('shader-f16'), 'this adapter has shader-f16: run the variants themselves here');
    selectionHooks.onCall = (names) => ran.push(names.linear);
    const { result: mha, warnings } = await captureWarnings(() => MultiHeadAttention.create({ embedDim: 32, numHeads: 4, backend: 'webgpu', gpu, gpuPrecision: 'float16' }));
    try {
      assert.equal(warnings.filter((w) => w.includes('shader-f16')).length, 1, warnings.join('\n'));
      assert.deepEqual(mha.gpuProfile().precision, { requested: 'float16', float16: false });
      const sd = randomStateDict(mha.stateDictShapes, 3);
      mha.loadStateDict(sd);
      const x = { data: filled(70 * 32, 4), shape: [1, 70, 32] };
      const r = await mha.forward(x, x, x);
      assertClose(r.output, { data: mhaReference(mha.config, sd, x, x, x).output, shape: x.shape }, 'output');
      assert.ok(ran.length > 0 && ran.every((n) => !HALF.includes(n)), ran.join());
    } finally {
      selectionHooks.onCall = null;
      mha.dispose();
    }
  });
});

// Runs `call` with the linear family pinned to `name`, its twin offered in its place.
async function pinnedTwin(name, call, halfType = 'f32') {
  selectionHooks.candidates = (family, list) => (family === 'linear' ? [...list, halfTwin(name, halfType)] : list);
  selectionHooks.onCall = (names) => ran.push(names.linear);
  configure({ gpuKernels: { linear: name } });
  ran.length = 0;
  try {
    await call();
  } finally {
    configure({ gpuKernels: {} });
    Object.assign(selectionHooks, { onCall: null, candidates: null });
  }
  assert.ok(ran.length > 0 && ran.every((n) => n === name), `the twin of ${name} ran: ${ran.join()}`);
}

describe(`the float16 variants' programs with f32 arithmetic, pinned, vs WASM (Dawn, ${adapterName})`, () => {
  const cases = [
    ['E 132 (vec4 loads), L 70: ragged tiles', { create: { embedDim: 132, numHeads: 4 }, B: 1, L: 70, self: true }],
    ['kdim 13, vdim 7 (scalar loads), batch 2, L 9, S 131', { create: { embedDim: 20, numHeads: 2, kdim: 13, vdim: 7 }, B: 2, L: 9, S: 131 }],
    ['int4 weights, E 136, L 67, GQA', { create: { embedDim: 136, numHeads: 4, numKvHeads: 2, weightsDtype: 'int4' }, B: 1, L: 67, self: true }],
  ];
  for (const name of HALF) {
    for (const [title, args] of cases) test(`${name}: ${title}`, () => pinnedTwin(name, () => gpuMatchesWasm(args)));
  }
});

// float16's error, on a device without it: each variant's twin with every tile value, product and
// slice sum rounded to f16 (halfType 'f16-rounded'), pinned, against WASM's float32 on the same
// weights and inputs: max |Δ| over the output within the bound the selection's on-device check
// holds the variant to (toleranceFor(): HALF_TOLERANCE × max(1, max |WASM|)). Above 1e-6: the
// rounding took place.
describe(`float16's error through the rounded twins, vs WASM (Dawn, ${adapterName})`, () => {
  const cases = [
    ['E 256, L 70', { create: { embedDim: 256, numHeads: 4 }, B: 1, L: 70, self: true, seed: 2 }],
    ['E 1024 (K 1024), L 40, int8 weights', { create: { embedDim: 1024, numHeads: 16, weightsDtype: 'int8' }, B: 1, L: 40, self: true, seed: 2 }],
  ];
  for (const name of HALF) {
    for (const [title, args] of cases) {
      test(`${name}: ${title}`, (t) => pinnedTwin(name, async () => {
        const { actual, expected } = await gpuAndWasm(args);
        const diff = resultDistance({ output: actual.output.data }, { output: expected.output.data });
        const bound = toleranceFor(VARIANTS.linear[name], { output: expected.output.data });
        t.diagnostic(`max |Δ| ${diff.toExponential(2)}, ${(diff * HALF_TOLERANCE / bound).toExponential(2)} of max(1, max |output|)`);
        assert.ok(diff <= bound, `${diff} over ${bound}`);
        assert.ok(diff > 1e-6, `max |Δ| ${diff}: the values were not rounded to f16`);
      }, 'f16-rounded'));
    }
  }
});
