// The attention variants with subgroup reductions. The flash variant 'sg64x16' (flash_tiled.wgsl.js
// with each tile's row max by subgroup shuffles, subgroup_reduce.wgsl.js's rowGroupMax()): the
// same max as tile64x16's reads, so pinned it gives tile64x16's outputs and weights bit for bit on
// SwiftShader (a smaller max would still pass a tolerance: the online softmax only needs one for
// range, so bits are what pins it), across ragged tiles, masks, causal, d_k ≠ d_v; offered only
// with the feature. Its twins 'sglean64x16' and 'sgdot64x16' give lean64x16's and dot64x16's bits
// on the same cases. The decode variant 'split256sg' (decode_partial.wgsl.js over
// subgroup_reduce.wgsl.js): pinned, it matches the float64 reference and the default variant
// (split256, within its tolerance) on the subgroup size of the adapter (SwiftShader's is 4; the
// kernel is written for any size, 4 to 128) across odd sizes: chunks whose keys are not a multiple
// of the subgroup size, head widths 1 to 256, d_k ≠ d_v, every mask kind, causal, fully masked
// rows, weights. And it is a candidate only on a device with the 'subgroups' feature: the package
// asks for it where offered; on a device without, a pin falls back to the default and the
// selection never runs it. Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, configure } from '#webattention';
import { selectionHooks } from '../internals.mjs';
import { VARIANTS, fittingVariants } from '../../web/src/webgpu/programs.js';
import { resultDistance, toleranceFor } from '../../web/src/webgpu/selection/kernel_selection.js';
import { variantFeatures } from '../../web/src/webgpu/selection/kernel_config.js';
import { filled, mhaReference } from '../contract/contract.mjs';
import { adapter, adapterName, assertClose, assertSame, createGpu, device, gpu, randomStateDict } from './node_setup.mjs';

const SG = 'split256sg';
const FLASH_SG = 'sg64x16';
// Each flash variant with its row max by shuffles, and the variant it is otherwise (its bits).
const FLASH_TWINS = { [FLASH_SG]: 'tile64x16', sglean64x16: 'lean64x16', sgdot64x16: 'dot64x16' };
const ran = [];
const ranAttention = [];
selectionHooks.onCall = (names) => { ran.push(names.decode); ranAttention.push(names.attention); };
after(() => {
  Object.assign(selectionHooks, { clock: null, onCall: null });
  configure({ gpuKernels: {} });
});

describe('which devices it is offered on (stand-in devices, no GPU)', () => {
  const limits = { maxComputeWorkgroupStorageSize: 32768 };
  const names = (features) => fittingVariants('decode', { limits, features }, { dk: 64, dv: 64 }).map((v) => v.name);

  test('a candidate with the subgroups feature, never without it', () => {
    const plain = Object.keys(VARIANTS.decode).filter((name) => VARIANTS.decode[name].features.length === 0);
    assert.ok(plain.includes('split256') && !plain.includes(SG), plain.join());
    assert.deepEqual(names(new Set(['subgroups', 'timestamp-query'])), [...plain, SG]);
    assert.deepEqual(names(new Set(['timestamp-query'])), plain);
    assert.deepEqual(names(undefined), plain, 'a device that lists no features');
  });

  test('it needs the feature, the default needs none, and its WGSL enables subgroups first', () => {
    assert.deepEqual(VARIANTS.decode[SG].features, ['subgroups']);
    assert.deepEqual(VARIANTS.decode.split256.features, []);
    assert.ok(variantFeatures().includes('subgroups'), 'device.js asks for it where offered');
    assert.match(VARIANTS.decode[SG].shader({ dk: 8, dv: 8 }), /^enable subgroups;\n/);
    assert.doesNotMatch(VARIANTS.decode.split256.shader({ dk: 8, dv: 8 }), /subgroup/);
    assert.equal(VARIANTS.decode[SG].reduce.key({ dv: 8 }), VARIANTS.decode.split256.reduce.key({ dv: 8 }), 'one reduce pipeline for both');
  });
});

// A module with free head widths (dk, dv), its state dict, and one decode call's inputs.
async function moduleOn(gpuOrDevice, { dk, dv, H = 2 }) {
  const mha = await MultiHeadAttention.create({ embedDim: 12, numHeads: H, headDim: dk, valueHeadDim: dv, backend: 'webgpu', gpu: gpuOrDevice });
  const sd = randomStateDict(mha.stateDictShapes, dk * 7 + dv);
  mha.loadStateDict(sd);
  return { mha, sd };
}

// Runs `options`' call with the decode family pinned to `name`; checks that it ran.
async function pinnedCall(mha, name, q, kv, options) {
  configure({ gpuKernels: { decode: name } });
  ran.length = 0;
  try {
    const r = await mha.forward(q, kv, kv, options);
    assert.deepEqual(ran, [name], `the pinned ${name} ran on the decode path`);
    return r;
  } finally {
    configure({ gpuKernels: {} });
  }
}

// Masks of a call of B rows of L queries over S keys: key padding (every 5th key, and where B > 1
// all of the last batch row's keys: fully masked rows), an additive [L, S] mask with -inf and -1e9
// entries; causal is top-left (row i sees keys 0..i), so a cached call covers it over many keys.
function masks(kind, B, L, S) {
  if (kind === 'padding') {
    const m = new Uint8Array(B * S);
    for (let i = 0; i < B * S; i++) m[i] = i % 5 === 3 || (B > 1 && i >= (B - 1) * S) ? 1 : 0;
    return { keyPaddingMask: { data: m, shape: [B, S] } };
  }
  if (kind === 'additive') {
    const m = filled(L * S, 41, 2);
    for (let i = 0; i < L * S; i += 7) m[i] = i % 2 ? -Infinity : -1e9;
    return { attnMask: { data: m, shape: [L, S] } };
  }
  return kind === 'causal' ? { isCausal: true } : {};
}

const CASES = [
  // [dk, dv, B, L, S, masks]: S about the chunk (256) and not multiples of any subgroup size.
  [1, 1, 1, 1, 1, 'none'],
  [1, 3, 2, 3, 7, 'causal'],
  [3, 5, 1, 4, 255, 'padding'],
  [5, 2, 1, 2, 257, 'additive'],
  [17, 17, 2, 1, 513, 'padding'],
  [64, 64, 1, 4, 700, 'none'],
  [100, 36, 1, 1, 301, 'additive'],
  [128, 256, 1, 2, 259, 'none'],
  [256, 256, 2, 1, 129, 'padding'],
];

describe(`${SG} pinned: the float64 reference and split256 (Dawn, ${adapterName})`, () => {
  const hasFeature = adapter.features.has('subgroups');

  test(`the package asks for 'subgroups' where the adapter offers it (offered: ${hasFeature})`, async () => {
    const { mha } = await moduleOn(gpu, { dk: 4, dv: 4 });
    const x = { data: filled(12, 1), shape: [1, 1, 12] };
    await pinnedCall(mha, hasFeature ? SG : 'split256', x, x, {});
    mha.dispose();
  });

  for (const [dk, dv, B, L, S, kind] of CASES) {
    test(`d_k ${dk}, d_v ${dv}, batch ${B}, L ${L}, S ${S}, ${kind}, weights`, { skip: !hasFeature && 'the adapter has no subgroups' }, async () => {
      const { mha, sd } = await moduleOn(gpu, { dk, dv });
      const q = { data: filled(B * L * 12, dk + 3, 2), shape: [B, L, 12] };
      const kv = { data: filled(B * S * 12, dv + 5, 2), shape: [B, S, 12] };
      const options = { ...masks(kind, B, L, S), needWeights: true };
      const sg = await pinnedCall(mha, SG, q, kv, options);
      const plain = await pinnedCall(mha, 'split256', q, kv, options);
      const want = mhaReference(mha.config, sd, q, kv, kv, options);
      assertClose(sg.output, { data: want.output, shape: q.shape }, 'output vs float64');
      assertClose(sg.attnWeights, { data: want.weights, shape: [B, L, S] }, 'weights vs float64');
      const reference = { output: plain.output.data, weights: plain.attnWeights.data };
      const distance = resultDistance({ output: sg.output.data, weights: sg.attnWeights.data }, reference);
      const tolerance = toleranceFor(VARIANTS.decode[SG], reference);
      assert.ok(distance <= tolerance, `max |${SG} − split256| ${distance} over its tolerance ${tolerance}`);
      mha.dispose();
    });
  }
});

describe(`${SG} pinned on a KV cache (Dawn, ${adapterName})`, () => {
  test('prefill 290 rows, then decode steps of 1 and 3 rows to 305: every step the causal float64 reference\'s rows', async () => {
    const { mha, sd } = await moduleOn(gpu, { dk: 24, dv: 40, H: 3 });
    const N = 305;
    const seq = { data: filled(N * 12, 77, 2), shape: [1, N, 12] };
    const want = mhaReference(mha.config, sd, seq, seq, seq, { isCausal: true }).output;
    const cache = mha.createCache({ maxLength: 320 });
    const rows = (from, to) => ({ data: seq.data.slice(from * 12, to * 12), shape: [1, to - from, 12] });
    await mha.forward(rows(0, 290), rows(0, 290), rows(0, 290), { cache });
    for (let from = 290; from < N;) {
      const to = Math.min(N, from + (from % 2 ? 3 : 1));
      const x = rows(from, to);
      const r = await pinnedCall(mha, SG, x, x, { cache });
      assertClose(r.output, { data: want.slice(from * 12, to * 12), shape: x.shape }, `rows ${from}..${to}`);
      from = to;
    }
    mha.dispose();
  });
});

describe(`the selection and the feature (Dawn, ${adapterName})`, () => {
  // The injected clock makes the selection measure on SwiftShader too, and SG the fastest; linear
  // is pinned, so that the calls measure the decode family alone, and the decode candidates are
  // SG and its default (the other chunk sizes are node_variants.test.mjs's).
  const decodeCalls = async (gpuOrDevice) => {
    selectionHooks.clock = (names) => (names.decode === SG ? 1 : 2);
    selectionHooks.candidates = (family, list) => (family === 'decode' ? list.filter((v) => ['split256', SG].includes(v.name)) : list);
    configure({ gpuKernels: { linear: 'tile64' } });
    ran.length = 0;
    try {
      const { mha } = await moduleOn(gpuOrDevice, { dk: 6, dv: 6 });
      const kv = { data: filled(300 * 12, 8), shape: [1, 300, 12] };
      for (let i = 0; i < 8; i++) await mha.forward({ data: filled(12, 20 + i), shape: [1, 1, 12] }, kv, kv);
      const profile = mha.gpuProfile();
      mha.dispose();
      return profile;
    } finally {
      Object.assign(selectionHooks, { clock: null, candidates: null });
      configure({ gpuKernels: {} });
    }
  };

  test('a device without the feature (pins fall back): never runs it, and has nothing to measure', async () => {
    assert.equal(device.features.has('subgroups'), false, 'node_setup\'s device asks for no features');
    const { mha } = await moduleOn(device, { dk: 4, dv: 4 });
    const x = { data: filled(12, 1), shape: [1, 1, 12] };
    configure({ gpuKernels: { decode: SG } });
    ran.length = 0;
    try {
      await mha.forward(x, x, x);
    } finally {
      configure({ gpuKernels: {} });
    }
    assert.deepEqual(ran, ['split256'], 'the pin gave way to the default');
    mha.dispose();
    const profile = await decodeCalls(device);
    assert.ok(ran.length >= 8 && ran.every((n) => n === 'split256'), ran.join());
    assert.equal(profile.classes.filter((c) => c.family === 'decode').length, 0, 'one candidate: no decode class measured');
  });

  test('a device with it: measured against split256, checked on the device, kept', { skip: !adapter.features.has('subgroups') && 'the adapter has no subgroups' }, async () => {
    const profile = await decodeCalls(createGpu());  // a GPU object of its own: a new device, and the package's
    assert.ok(ran.includes(SG), ran.join());
    assert.deepEqual(profile.rejected, []);
    const decode = profile.classes.find((c) => c.family === 'decode');
    assert.equal(decode.chosen, SG, JSON.stringify(decode));
  });
});

describe(`${Object.keys(FLASH_TWINS).join(', ')} pinned: the bits of ${Object.values(FLASH_TWINS).join(', ')} (Dawn, ${adapterName})`, () => {
  test('a candidate with the subgroups feature, never without it', () => {
    const limits = { maxComputeWorkgroupStorageSize: 49152 };  // an H100's: sglean64x16 takes over 32 KiB at d = 64
    const names = (features) => fittingVariants('attention', { limits, features }, { dk: 64, dv: 64 }).map((v) => v.name);
    for (const [name, plain] of Object.entries(FLASH_TWINS)) {
      assert.ok(names(new Set(['subgroups'])).includes(name), name);
      assert.ok(!names(new Set()).includes(name) && names(new Set()).includes(plain), name);
      assert.match(VARIANTS.attention[name].shader({ dk: 8, dv: 8 }), /^enable subgroups;\n/);
    }
  });

  // [dk, dv, B, L, S, masks]: one and several query tiles (64 rows), ragged key tiles (16), fully
  // masked rows, causal with L > S.
  const FLASH_CASES = [[8, 8, 1, 5, 3, 'none'], [16, 24, 2, 70, 100, 'padding'], [8, 8, 1, 130, 130, 'causal'], [12, 40, 1, 37, 50, 'additive']];
  for (const [dk, dv, B, L, S, kind] of FLASH_CASES) {
    test(`d_k ${dk}, d_v ${dv}, batch ${B}, L ${L}, S ${S}, ${kind}, weights`, { skip: !adapter.features.has('subgroups') && 'the adapter has no subgroups' }, async () => {
      const { mha } = await moduleOn(gpu, { dk, dv });
      const q = { data: filled(B * L * 12, dk + 7, 2), shape: [B, L, 12] };
      const kv = { data: filled(B * S * 12, dv + 9, 2), shape: [B, S, 12] };
      const options = { ...masks(kind, B, L, S), needWeights: true, averageAttnWeights: false };
      const run = async (name) => {
        configure({ gpuKernels: { attention: name } });
        ranAttention.length = 0;
        try {
          const r = await mha.forward(q, kv, kv, options);
          assert.deepEqual(ranAttention, [name], `the pinned ${name} ran`);
          return r;
        } finally {
          configure({ gpuKernels: {} });
        }
      };
      for (const [name, plainName] of Object.entries(FLASH_TWINS)) {
        const sg = await run(name);
        const plain = await run(plainName);
        assertSame(sg.output, plain.output, `${name}'s output`);
        assertSame(sg.attnWeights, plain.attnWeights, `${name}'s weights`);
      }
      mha.dispose();
    });
  }
});

describe('rows8sg: the few-rows linear kernel with its column sums by subgroup shuffles', () => {
  test('a candidate with the subgroups feature, never without it, for a decode step\'s rows only', () => {
    const names = (features, rows) => fittingVariants('linear', { limits: {}, features }, { rows }).map((v) => v.name);
    assert.ok(names(new Set(['subgroups']), 1).includes('rows8sg') && names(new Set(['subgroups']), 1).includes('rows8'));
    assert.ok(!names(new Set(), 1).includes('rows8sg') && names(new Set(), 1).includes('rows8'));
    assert.ok(!names(new Set(['subgroups']), 70).includes('rows8sg'));
    for (const weights of ['float32', 'int4']) {
      assert.match(VARIANTS.linear.rows8sg.shader({ K: 64, xStride: 64, weights }), /^enable subgroups;\n/);
    }
  });
  // Its outputs against WASM on every weights dtype, pinned: node_variants.test.mjs.
});
