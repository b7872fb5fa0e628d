// create({ gpuPrecision: 'float16' }): the float16-arithmetic linear and attention variants
// (kernel_config.js's 'h' names; half_arithmetic.wgsl.js in linear_tiled and flash_tiled).
// SwiftShader has no 'shader-f16', so here:
// - the option's checks, and which devices and modules the variants are offered to (stand-ins);
// - a float16 module on this adapter: warned once, reported by gpuProfile().precision, the
//   variants never run, the results float32's;
// - each variant's program compiled with f32 in place of f16 (programs.js's halfTwin(): the same
//   WGSL but for that type name, which is checked here), pinned, against WASM (linear: ragged
//   tiles, both load flavours, a narrow weights dtype; attention: the flash variants' cases,
//   attention_cases.mjs); and with every value rounded to f16
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
import { adapter, adapterName, assertClose, captureWarnings, gpu, gpuAndWasm, gpuMatchesWasm, randomStateDict, withPinned } from './node_setup.mjs';
import { resultDistance, toleranceFor } from '../../web/src/webgpu/selection/kernel_selection.js';
import { attentionCases } from './attention_cases.mjs';

// family → its float16 variants' names.
const HALF = Object.fromEntries(['linear', 'attention'].map((family) => [family,
  Object.keys(VARIANTS[family]).filter((name) => VARIANTS[family][name].precision === 'float16')]));
const ALL_HALF = [...HALF.linear, ...HALF.attention];
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

  // A problem of each family: the rows fits() reads, and what the WGSL depends on.
  const linearProblem = (K, weights) => ({ rows: 70, M: 70, N: 24, K, xOff: 0, xStride: K, wOff: 0, weights });
  const problems = {
    linear: ['float32', 'int4'].flatMap((weights) => [8, 7].map((K) => linearProblem(K, weights))),
    attention: [{ dk: 64, dv: 64 }, { dk: 12, dv: 40 }, { dk: 64, dv: 64, kv: 'int8' }],
  };

  test('offered only to float16 modules on devices with shader-f16, beside the float32 variants', () => {
    assert.deepEqual(HALF, { linear: ['h64x64k16', 'h128x128k16'], attention: ['h64x16', 'hdot64x16'] });
    const limits = { maxComputeWorkgroupStorageSize: 16384 };
    for (const family of ['linear', 'attention']) {
      const names = (features, precision) => fittingVariants(family, { limits, features }, { ...problems[family][0], precision }).map((v) => v.name);
      const float32 = names(new Set(['shader-f16']), 'float32');
      assert.ok(float32.length > 1 && !float32.some((n) => ALL_HALF.includes(n)), float32.join());
      assert.deepEqual(names(new Set(['shader-f16']), 'float16'), [...float32, ...HALF[family]]);
      assert.deepEqual(names(new Set(), 'float16'), float32, 'no feature, no float16 variant');
      for (const name of HALF[family]) {
        assert.equal(VARIANTS[family][name].tolerance, HALF_TOLERANCE);
        assert.match(VARIANTS[family][name].shader(problems[family][0]), /^enable f16;\n/);
      }
    }
    assert.ok(variantFeatures().includes('shader-f16'), 'device.js asks for it where offered');
  });

  test('f16 tiles take half the workgroup memory of their f32 twins\' (fits())', () => {
    // tile64x16 at d = 64: Q 16 KiB + K/V 4 KiB + scores 4 KiB in f32; h64x16's Q and K/V in f16.
    const fitsIn = (variant, bytes) => variant.fits({ maxComputeWorkgroupStorageSize: bytes }, { dk: 64, dv: 64 });
    assert.ok(fitsIn(VARIANTS.attention.h64x16, 14336) && !fitsIn(VARIANTS.attention.h64x16, 14335));
    assert.ok(fitsIn(halfTwin('attention', 'h64x16'), 24576) && !fitsIn(halfTwin('attention', 'h64x16'), 24575));
    assert.ok(fitsIn(VARIANTS.attention.tile64x16, 24576) && !fitsIn(VARIANTS.attention.tile64x16, 24575));
  });

  test('each twin is its variant\'s program with f32 in place of f16, under a key of its own', () => {
    for (const family of ['linear', 'attention']) {
      for (const name of HALF[family]) {
        for (const problem of problems[family]) {
          const half = VARIANTS[family][name].shader(problem);
          const twin = halfTwin(family, name);
          assert.equal(half.replace(/^enable f16;\n/, '').replace(/\bf16\b/g, 'f32').trimStart(), twin.shader(problem).trimStart(), `${name} ${JSON.stringify(problem)}`);
          assert.notEqual(twin.key(problem), VARIANTS[family][name].key(problem));
          assert.notEqual(halfTwin(family, name, 'f16-rounded').key(problem), twin.key(problem));
        }
      }
    }
  });
});

describe(`a float16 module on an adapter without shader-f16 (Dawn, ${adapterName})`, () => {
  test('warned once, reported, its projections float32\'s: no float16 variant runs', async () => {
    assert.ok(!adapter.features.has('shader-f16'), 'this adapter has shader-f16: run the variants themselves here');
    selectionHooks.onCall = (names) => ran.push(names.linear, names.attention);
    const { result: mha, warnings } = await captureWarnings(() => MultiHeadAttention.create({ embedDim: 32, numHeads: 4, backend: 'webgpu', gpu, gpuPrecision: 'float16' }));
    try {
      assert.equal(warnings.filter((w) => w.includes('shader-f16')).length, 1, warnings.join('\n'));
      assert.deepEqual(mha.gpuProfile().precision, { requested: 'float16', float16: false });
      const sd = randomStateDict(mha.stateDictShapes, 3);
      mha.loadStateDict(sd);
      const x = { data: filled(70 * 32, 4), shape: [1, 70, 32] };
      const r = await mha.forward(x, x, x);
      assertClose(r.output, { data: mhaReference(mha.config, sd, x, x, x).output, shape: x.shape }, 'output');
      assert.ok(ran.length > 0 && ran.every((n) => !ALL_HALF.includes(n)), ran.join());
    } finally {
      selectionHooks.onCall = null;
      mha.dispose();
    }
  });
});

// Runs `call` with `family` pinned to `name`, its twin offered in its place.
async function pinnedTwin(family, name, call, halfType = 'f32') {
  selectionHooks.candidates = (f, list) => (f === family ? [...list, halfTwin(family, name, halfType)] : list);
  try {
    await withPinned(family, name, call);
  } finally {
    selectionHooks.candidates = null;
  }
}

describe(`the float16 variants' programs with f32 arithmetic, pinned, vs WASM (Dawn, ${adapterName})`, () => {
  const cases = [
    ['E 132 (vec4 loads), L 70: ragged tiles', { create: { embedDim: 132, numHeads: 4 }, B: 1, L: 70, self: true }],
    ['kdim 13, vdim 7 (scalar loads), batch 2, L 9, S 131', { create: { embedDim: 20, numHeads: 2, kdim: 13, vdim: 7 }, B: 2, L: 9, S: 131 }],
    ['int4 weights, E 136, L 67, GQA', { create: { embedDim: 136, numHeads: 4, numKvHeads: 2, weightsDtype: 'int4' }, B: 1, L: 67, self: true }],
  ];
  for (const name of HALF.linear) {
    for (const [title, args] of cases) test(`${name}: ${title}`, () => pinnedTwin('linear', name, () => gpuMatchesWasm(args)));
  }
  // Every case the flash variants' test has that the twin fits here (wide heads do not, in 16 KiB).
  for (const name of HALF.attention) {
    for (const [title, heads, args] of attentionCases.filter(([, heads]) => halfTwin('attention', name).fits(adapter.limits, heads))) {
      test(`${name}: ${title}`, () => pinnedTwin('attention', name, () => gpuMatchesWasm({ ...args, path: 'flash' })));
    }
  }
});

// float16's error, on a device without it: each variant's twin with every tile value, product and
// slice sum rounded to f16 (halfType 'f16-rounded'), pinned, against WASM's float32 on the same
// weights and inputs: max |Δ| over the output within the bound the selection's on-device check
// holds the variant to (toleranceFor(): HALF_TOLERANCE × max(1, max |WASM|)). Above 1e-6: the
// rounding took place.
describe(`float16's error through the rounded twins, vs WASM (Dawn, ${adapterName})`, () => {
  const cases = {
    linear: [
      ['E 256, L 70', { create: { embedDim: 256, numHeads: 4 }, B: 1, L: 70, self: true, seed: 2 }],
      ['E 1024 (K 1024), L 40, int8 weights', { create: { embedDim: 1024, numHeads: 16, weightsDtype: 'int8' }, B: 1, L: 40, self: true, seed: 2 }],
    ],
    // Head width 64, as the models' heads; inputs ×4 give scores of a few units and peaked rows.
    attention: [
      ['d 64, L 70, S 200', { create: { embedDim: 256, numHeads: 4 }, B: 1, L: 70, S: 200, seed: 2, path: 'flash' }],
      ['d 64, causal L 150, inputs ×4, GQA', { create: { embedDim: 256, numHeads: 4, numKvHeads: 2 }, B: 1, L: 150, self: true, seed: 2, scale: 4, path: 'flash', options: { isCausal: true } }],
    ],
  };
  for (const family of ['linear', 'attention']) {
    for (const name of HALF[family]) {
      for (const [title, args] of cases[family]) testError(family, name, title, args);
    }
  }
});

// One variant's rounded twin on one case: max |Δ| against WASM within its tolerance, and above 1e-6.
function testError(family, name, title, args) {
  test(`${name}: ${title}`, (t) => pinnedTwin(family, name, async () => {
    const { actual, expected } = await gpuAndWasm(args);
    const diff = resultDistance({ output: actual.output.data }, { output: expected.output.data });
    const bound = toleranceFor(VARIANTS[family][name], { output: expected.output.data });
    t.diagnostic(`max |Δ| ${diff.toExponential(2)}, ${(diff * HALF_TOLERANCE / bound).toExponential(2)} of max(1, max |output|)`);
    assert.ok(diff <= bound, `${diff} over ${bound}`);
    assert.ok(diff > 1e-6, `max |Δ| ${diff}: the values were not rounded to f16`);
  }, 'f16-rounded'));
}
