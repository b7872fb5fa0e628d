// The WebGPU backend in Node: the npm `webgpu` package (Dawn) on SwiftShader's Vulkan driver
// by default, so no GPU is needed (Debian's chromium ships it; VK_ICD_FILENAMES points Vulkan at
// it). A VK_ICD_FILENAMES (or VK_DRIVER_FILES) already set wins: pointed at a GPU's Vulkan
// driver (its ICD .json) the same command tests that GPU; the suite detects its adapter
// (adapter.mjs) and asserts what holds there. Checks:
//   - every PyTorch MHA fixture through the test contract's runCase() with { backend: 'webgpu',
//     gpu } (all of them are small enough for software WebGPU; a case over MAX_FIXTURE_FLOPS
//     would be listed by name in the test that says which were left out);
//   - GPU vs WASM on shapes the fixtures do not reach (several query and key tiles, causal
//     across tiles, wide free head dims, rows with every key masked, fused Q/K/V uploads);
//   - a device lost mid-sequence (device.destroy() while a call is in flight, and between
//     calls): every call still returns the right result, through the WASM fallback;
//   - backend selection: 'webgpu' without an adapter throws BackendError, 'auto' declines
//     SwiftShader by default and takes a hardware GPU above its threshold, honours
//     webgpuMinFlops, option checks.
//   node --test tests/webgpu/       (needs web/dist: bash scripts/build.sh)
if (!process.env.VK_ICD_FILENAMES && !process.env.VK_DRIVER_FILES) {
  process.env.VK_ICD_FILENAMES = '/usr/lib/chromium/vk_swiftshader_icd.json';  // before Dawn loads
}

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from 'webattention';
import { checkResult, compare, filled, runCase } from '../contract/contract.mjs';
import {
  DECODE_MAX_L, DEFAULT_WEBGPU_MIN_FLOPS, acquireGpu, caseFlops, forwardFlops, isSoftwareAdapter, pipelineCount,
  resolveMhaForward, webgpuTestHooks as testHooks,
} from '../internals.mjs';
import { loadFixtures } from '../js/fixtures.js';
import { MAX_FIXTURE_FLOPS, adapterInfo, adapterKind, autoBackendForLargeCalls, requestTestAdapter } from './adapter.mjs';

const { BackendError, MultiHeadAttention, OptionError, StateDictError } = api;
const { create: createGpu } = await import('webgpu');

const fixtures = loadFixtures().filter((c) => c.kind === 'mha');
const small = fixtures.filter((c) => caseFlops(c) <= MAX_FIXTURE_FLOPS);
const large = fixtures.filter((c) => caseFlops(c) > MAX_FIXTURE_FLOPS);

let gpu = createGpu([]);  // the npm webgpu package's GPU object
// The adapter decides what some tests expect (SwiftShader or a hardware GPU): found before the
// tests are made, so that their titles can say which.
const adapter = await requestTestAdapter(gpu);
const kind = adapter ? adapterKind(adapter) : null;
const adapterName = adapter ? `${kind}: ${JSON.stringify(adapterInfo(adapter))}` : 'no adapter';
let device;    // a device of ours, passed as `gpu` where a test needs to reach it
const runs = [];
const paths = [];  // the attention path of each GPU run: 'flash' | 'decode'
testHooks.onRun = (where, plan, path) => {
  runs.push(where);
  if (where === 'webgpu') paths.push(path);
};

before(async () => {
  assert.ok(adapter, 'no WebGPU adapter from the npm webgpu package: is VK_ICD_FILENAMES '
    + `(${process.env.VK_ICD_FILENAMES}) a SwiftShader ICD, or a GPU's? (apt-get install chromium libvulkan1)`);
  device = await adapter.requestDevice();
});

after(() => {
  testHooks.onRun = null;
  device?.destroy();
  gpu = null;
});

/** Records console.warn calls during fn(). */
async function captureWarnings(fn) {
  const warnings = [];
  const original = console.warn;
  console.warn = (...args) => warnings.push(args.join(' '));
  try {
    return { result: await fn(), warnings };
  } finally {
    console.warn = original;
  }
}

/** The test contract's comparison (1e-4 abs + 1e-4 rel) as an assertion. */
function assertClose(actual, expected, what) {
  const { ok, detail } = compare(actual, expected);
  assert.ok(ok, `${what}: ${detail}`);
}

/** A result against a fixture case's expected values (output, and weights or null). */
function checkAgainstFixture(c, result) {
  const { ok, detail } = checkResult(c, result);
  assert.ok(ok, detail);
}

describe(`PyTorch parity on WebGPU (Dawn, ${adapterName})`, () => {
  test(`the adapter is what the suite detected (${kind}), the package agrees, and the fixtures fit software WebGPU`, () => {
    if (kind === 'software') {
      assert.equal(adapter.info.architecture, 'swiftshader', 'the software adapter is SwiftShader');
      assert.equal(isSoftwareAdapter(adapter), true, "the package sees a software adapter (which 'auto' leaves alone)");
    } else {
      assert.equal(isSoftwareAdapter(adapter), false, "the package sees a hardware adapter (which 'auto' uses above its threshold)");
    }
    assert.ok(small.length >= 30, `${small.length} MHA fixtures`);
  });

  test(`fixtures over ${MAX_FIXTURE_FLOPS / 1e6} MFLOP left out of software WebGPU: ${large.map((c) => c.name).join(', ') || 'none'}`, () => {
    assert.equal(small.length + large.length, fixtures.length);
  });

  for (const c of small) {
    test(`webgpu parity with PyTorch: mha ${c.name}`, async () => {
      runs.length = 0;
      const r = await runCase(api, c, { create: { backend: 'webgpu', gpu } });
      assert.equal(r.backend, 'webgpu');
      assert.deepEqual(runs, ['webgpu'], 'the call ran on the GPU');
      assert.ok(r.ok, r.detail);
    });
  }
});

// ---- GPU vs WASM where the fixtures do not reach -----------------------------------------------

function randomStateDict(shapes, seed) {
  return Object.fromEntries(shapes.map(({ name, shape }, i) => {
    const n = shape.reduce((a, b) => a * b, 1);
    return [name, { data: filled(n, seed + i, 1 / Math.sqrt(shape.at(-1))), shape }];
  }));
}

/** Runs the same call on 'wasm' and on 'webgpu' and compares (1e-4 abs + 1e-4 rel). */
async function gpuMatchesWasm({ create, B, L, S, self = false, kvSame = false, options = {}, seed = 7, scale = 1, path }) {
  const wasm = await MultiHeadAttention.create({ ...create, backend: 'wasm' });
  const gpuMha = await MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu });
  try {
    const c = wasm.config;
    const stateDict = randomStateDict(wasm.stateDictShapes, seed);
    wasm.loadStateDict(stateDict);
    gpuMha.loadStateDict(stateDict);
    const query = { data: filled(B * L * c.embedDim, seed + 10, scale), shape: [B, L, c.embedDim] };
    const key = self ? query : { data: filled(B * S * c.kdim, seed + 11, scale), shape: [B, S, c.kdim] };
    const value = self || kvSame ? key : { data: filled(B * S * c.vdim, seed + 12, scale), shape: [B, S, c.vdim] };
    const expected = await wasm.forward(query, key, value, options);
    runs.length = 0;
    paths.length = 0;
    const actual = await gpuMha.forward(query, key, value, options);
    assert.deepEqual(runs, ['webgpu']);
    if (path) assert.deepEqual(paths, [path], `the ${path} path was taken`);
    assertClose(actual.output, expected.output, 'output');
    if (expected.attnWeights) assertClose(actual.attnWeights, expected.attnWeights, 'attnWeights');
    else assert.equal(actual.attnWeights, null);
    return { actual, expected };
  } finally {
    wasm.dispose();
    gpuMha.dispose();
  }
}

const boolMask = (n, every, offset = 0) => {
  const m = new Uint8Array(n);
  for (let i = offset; i < n; i += every) m[i] = 1;
  return m;
};

describe('WebGPU vs WASM on shapes the fixtures do not reach', () => {
  test('several query and key tiles (L 70, S 130, d_k 32), weights per head', () => gpuMatchesWasm({
    create: { embedDim: 64, numHeads: 2 }, B: 2, L: 70, S: 130,
    options: { needWeights: true, averageAttnWeights: false },
  }));

  test('causal self-attention across tiles (L = S = 150), fused Q/K/V projection, averaged weights', () => gpuMatchesWasm({
    create: { embedDim: 32, numHeads: 4 }, B: 1, L: 150, S: 150, self: true,
    options: { isCausal: true, needWeights: true },
  }));

  test('wide free head dims (d_k 48, d_v 80: 32-key tiles), key === value (fused K/V projection)', () => gpuMatchesWasm({
    create: { embedDim: 24, numHeads: 3, kdim: 20, vdim: 20, headDim: 48, valueHeadDim: 80 }, B: 2, L: 9, S: 77, kvSame: true,
    options: { keyPaddingMask: { data: boolMask(2 * 77, 5), shape: [2, 77] } },
  }));

  test('rows whose keys are all masked give zeros (output = out_proj.bias, weights 0), like WASM', async () => {
    const B = 2, L = 5, S = 6, H = 2;
    const kpm = new Uint8Array(B * S);
    kpm.fill(1, S, 2 * S);                             // batch 1: every key padded
    const am = boolMask(B * H * L * S, 1000);
    am.fill(1, (0 * L + 2) * S, (0 * L + 3) * S);      // batch 0, head 0, row 2: every key masked
    const { actual } = await gpuMatchesWasm({
      create: { embedDim: 8, numHeads: H }, B, L, S,
      options: { keyPaddingMask: { data: kpm, shape: [B, S] }, attnMask: { data: am, shape: [B * H, L, S] }, needWeights: true, averageAttnWeights: false },
    });
    assert.ok(actual.attnWeights.data.slice(B * H * L * S / 2).every((w) => w === 0), 'batch 1 weights are zero');
    assert.ok(actual.output.data.every(Number.isFinite));
  });

  test('additive -inf and large finite masks, causal with L > S', () => {
    const L = 12, S = 7;
    const am = filled(L * S, 3, 2);
    for (let i = 0; i < am.length; i += 4) am[i] = -Infinity;
    const kpm = new Float32Array(S);
    kpm[1] = -1e9;
    return gpuMatchesWasm({
      create: { embedDim: 16, numHeads: 4 }, B: 1, L, S,
      options: { attnMask: { data: am, shape: [L, S] }, keyPaddingMask: { data: kpm, shape: [1, S] }, isCausal: true, needWeights: true },
    });
  });

  test('pipelines are made once per shape class and reused', async () => {
    const create = { embedDim: 16, numHeads: 2, backend: 'webgpu', gpu: device };
    const mha = await MultiHeadAttention.create(create);
    try {
      mha.loadStateDict(randomStateDict(mha.stateDictShapes, 3));
      const x = (L) => ({ data: filled(L * 16, L), shape: [1, L, 16] });
      await mha.forward(x(DECODE_MAX_L + 1), x(7), x(7));
      const count = pipelineCount(device);
      assert.equal(count, 2, 'linear and flash(8, 8)');
      for (const L of [DECODE_MAX_L + 2, 17, 64, 65, 100]) await mha.forward(x(L), x(L + 2), x(L + 2), { isCausal: L > 50 });
      assert.equal(pipelineCount(device), count, 'no new pipeline for other lengths and masks');
      await mha.forward(x(8), x(8), x(8), { needWeights: true });
      assert.equal(pipelineCount(device), count + 1, 'the weights kernel, once');
      await mha.forward(x(1), x(300), x(300));
      assert.equal(pipelineCount(device), count + 3, 'the decode partial and reduce kernels');
      for (const L of [1, 2, DECODE_MAX_L]) await mha.forward(x(L), x(L + 600), x(L + 600), { isCausal: L > 1, needWeights: true });
      assert.equal(pipelineCount(device), count + 3, 'decode: no new pipeline for other lengths');
    } finally {
      mha.dispose();
    }
  });

  test('forward() before loadStateDict() rejects with StateDictError, as on WASM', async () => {
    const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, backend: 'webgpu', gpu });
    try {
      const x = { data: filled(3 * 8, 1), shape: [1, 3, 8] };
      await assert.rejects(mha.forward(x, x, x), StateDictError);
    } finally {
      mha.dispose();
    }
  });

  test('loadStateDict() again replaces the weights on the GPU', async () => {
    const [a, b] = fixtures.filter((c) => c.name === 'weights_avg' || c.name === 'kpm_bool_attn_float');
    const mha = await MultiHeadAttention.create({ ...a.create, backend: 'webgpu', gpu });
    try {
      for (const c of [a, b, a]) {
        mha.loadStateDict(c.stateDict);
        checkAgainstFixture(c, await mha.forward(c.inputs.query, c.inputs.key, c.inputs.value, c.options));
      }
    } finally {
      mha.dispose();
    }
  });
});

// ---- per-call buffers: cached per module -------------------------------------------------------

describe('per-call GPU buffers are cached per module', () => {
  /** A fresh device whose createBuffer() is counted and whose buffers' destroy() is tracked. */
  async function countingDevice() {
    const own = await (await gpu.requestAdapter()).requestDevice();
    const made = [];          // labels of the buffers created, in order
    const live = new Set();   // buffers created and not destroyed
    const createBuffer = own.createBuffer;
    own.createBuffer = function (descriptor) {
      const b = createBuffer.call(this, descriptor);
      made.push(descriptor.label);
      live.add(b);
      const destroy = b.destroy;
      b.destroy = function () { live.delete(b); return destroy.call(this); };
      return b;
    };
    return { own, made, live };
  }

  const create = { embedDim: 16, numHeads: 2, kdim: 12, vdim: 12 };
  function inputs(B, L, S, seed) {
    return [
      { data: filled(B * L * 16, seed), shape: [B, L, 16] },
      { data: filled(B * S * 12, seed + 1), shape: [B, S, 12] },
      { data: filled(B * S * 12, seed + 2), shape: [B, S, 12] },
      { keyPaddingMask: { data: boolMask(B * S, 7), shape: [B, S] }, attnMask: { data: filled(L * S, seed + 3), shape: [L, S] }, needWeights: true },
    ];
  }

  test('a second identical call creates no buffer; larger calls grow the cache; results equal WASM and stay equal; dispose destroys them', async () => {
    const { own, made, live } = await countingDevice();
    const wasm = await MultiHeadAttention.create({ ...create, backend: 'wasm' });
    const mha = await MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu: own });
    try {
      const stateDict = randomStateDict(wasm.stateDictShapes, 5);
      wasm.loadStateDict(stateDict);
      mha.loadStateDict(stateDict);
      const check = async (args, what) => {
        const actual = await mha.forward(...args);
        const expected = await wasm.forward(...args);
        assertClose(actual.output, expected.output, `${what} output`);
        assertClose(actual.attnWeights, expected.attnWeights, `${what} attnWeights`);
        return actual;
      };
      runs.length = 0;
      const small1 = inputs(2, 9, 20, 1);
      made.length = 0;
      const first = await check(small1, 'first call');
      assert.ok(made.length >= 8, `the first call makes its buffers (${made.join(', ')})`);
      made.length = 0;
      const again = await check(small1, 'same call again');
      assert.deepEqual(made, [], 'the same call again creates no buffer (the readback buffer is mapped and unmapped again)');
      assert.deepEqual(again.output.data, first.output.data, 'same result, bit for bit');
      assert.deepEqual(again.attnWeights.data, first.attnWeights.data);

      const big = inputs(2, 70, 150, 2);
      await check(big, 'larger call');
      assert.ok(made.length > 0, 'a larger call grows the cache');
      made.length = 0;
      await check(big, 'larger call again');
      await check(inputs(1, 33, 101, 3), 'a call between the two sizes');
      const back = await check(small1, 'the first call after growing');
      assert.deepEqual(made, [], 'calls no larger than the largest so far create no buffer');
      assert.deepEqual(back.output.data, first.output.data, 'same result as before the cache grew');

      const decode = inputs(2, 1, 600, 4);
      await check(decode, 'decode path');
      made.length = 0;
      await check(decode, 'decode path again');
      assert.deepEqual(made, [], 'the decode path reuses its buffers too');

      // Overlapping calls on one module run one after the other on the cached buffers.
      const overlapping = [small1, big, decode, inputs(1, 20, 50, 6), small1];
      const results = await Promise.all(overlapping.map((args) => mha.forward(...args)));
      for (const [i, args] of overlapping.entries()) {
        const expected = await wasm.forward(...args);
        assertClose(results[i].output, expected.output, `overlapping call ${i}`);
        assertClose(results[i].attnWeights, expected.attnWeights, `overlapping call ${i} attnWeights`);
      }
      assert.deepEqual(results[4].output.data, first.output.data);
      assert.ok(runs.every((r) => r === 'webgpu'), `every call ran on the GPU (${runs.join(', ')})`);
      assert.ok(live.size > 4, 'weights and cached buffers are alive before dispose');
    } finally {
      mha.dispose();
      wasm.dispose();
    }
    assert.equal(live.size, 0, `dispose() destroys the weights and every cached buffer (${[...live].map((b) => b.label).join(', ')})`);

    // A new module on the same device after dispose: same results.
    const again = await MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu: own });
    try {
      again.loadStateDict(randomStateDict(again.stateDictShapes, 5));
      const wasm2 = await MultiHeadAttention.create({ ...create, backend: 'wasm' });
      wasm2.loadStateDict(randomStateDict(wasm2.stateDictShapes, 5));
      const args = inputs(2, 9, 20, 1);
      assertClose((await again.forward(...args)).output, (await wasm2.forward(...args)).output, 'after dispose, a new module');
      wasm2.dispose();
    } finally {
      again.dispose();
      own.destroy();
    }
  });

  test('device loss drops the cache; the module carries on on WASM', async () => {
    const { own, made, live } = await countingDevice();
    const mha = await MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu: own });
    const wasm = await MultiHeadAttention.create({ ...create, backend: 'wasm' });
    try {
      const stateDict = randomStateDict(mha.stateDictShapes, 9);
      mha.loadStateDict(stateDict);
      wasm.loadStateDict(stateDict);
      const args = inputs(1, 12, 30, 8);
      await mha.forward(...args);
      assert.ok(made.length > 4);
      own.destroy();
      await own.lost;
      await new Promise((r) => setTimeout(r, 0));
      const params = [...live].map((b) => b.label).filter((l) => !/weight|bias/.test(l));
      assert.deepEqual(params, [], 'only the weights remain until dispose()');
      runs.length = 0;
      const actual = await mha.forward(...args);
      assert.deepEqual(runs, ['wasm']);
      assertClose(actual.output, (await wasm.forward(...args)).output, 'after device loss');
    } finally {
      mha.dispose();
      wasm.dispose();
    }
    assert.equal(live.size, 0);
  });
});

// ---- the decode path (L <= DECODE_MAX_L: split-K over keys, then a reduce) ---------------------

describe(`decode path (L <= ${DECODE_MAX_L}): split-K partials + reduce vs WASM`, () => {
  const create = { embedDim: 16, numHeads: 2 };
  const H = 2;

  for (const S of [1, 7, 300, 1500, 4096]) {
    test(`L 1, S ${S}, batch 2, weights per head`, () => gpuMatchesWasm({
      create, B: 2, L: 1, S, path: 'decode', seed: S,
      options: { needWeights: true, averageAttnWeights: false },
    }));
  }

  test('key padding mask, boolean [B, S] (S 1500, batch 2: 6 chunks), averaged weights', () => gpuMatchesWasm({
    create, B: 2, L: 1, S: 1500, path: 'decode',
    options: { keyPaddingMask: { data: boolMask(2 * 1500, 3), shape: [2, 1500] }, needWeights: true },
  }));

  test('key padding mask, additive with -inf and -1e9 (S 300)', () => {
    const kpm = filled(2 * 300, 5, 3);
    for (let i = 0; i < kpm.length; i += 7) kpm[i] = -Infinity;
    kpm[4] = -1e9;
    return gpuMatchesWasm({ create, B: 2, L: 1, S: 300, path: 'decode', options: { keyPaddingMask: { data: kpm, shape: [2, 300] } } });
  });

  test('2-D boolean attn mask [L, S] (S 4096)', () => gpuMatchesWasm({
    create, B: 1, L: 1, S: 4096, path: 'decode',
    options: { attnMask: { data: boolMask(4096, 2, 1), shape: [1, 4096] }, needWeights: true },
  }));

  test('2-D additive attn mask with -inf (L 3, S 1500)', () => {
    const am = filled(3 * 1500, 9, 4);
    for (let i = 0; i < am.length; i += 5) am[i] = -Infinity;
    return gpuMatchesWasm({ create, B: 2, L: 3, S: 1500, path: 'decode', options: { attnMask: { data: am, shape: [3, 1500] } } });
  });

  test('per-head 3-D boolean attn mask [B·h, L, S] (batch 2, S 700)', () => gpuMatchesWasm({
    create, B: 2, L: 1, S: 700, path: 'decode',
    options: { attnMask: { data: boolMask(2 * H * 700, 4, 2), shape: [2 * H, 1, 700] }, needWeights: true, averageAttnWeights: false },
  }));

  test('per-head 3-D additive attn mask (batch 2, L 2, S 1500)', () => gpuMatchesWasm({
    create, B: 2, L: 2, S: 1500, path: 'decode',
    options: { attnMask: { data: filled(2 * H * 2 * 1500, 13, 5), shape: [2 * H, 2, 1500] } },
  }));

  test('causal, L 1, S 300: the row sees key 0 only (top-left rule), weights', async () => {
    const { actual } = await gpuMatchesWasm({
      create, B: 2, L: 1, S: 300, path: 'decode', options: { isCausal: true, needWeights: true },
    });
    const w = actual.attnWeights.data;
    for (let b = 0; b < 2; b++) {
      assert.ok(Math.abs(w[b * 300] - 1) < 1e-6, 'all weight on key 0');
      assert.ok(w.slice(b * 300 + 1, (b + 1) * 300).every((x) => x === 0), 'later keys masked');
    }
  });

  test(`causal, L ${DECODE_MAX_L}, S 1500, with a key padding mask`, () => gpuMatchesWasm({
    create, B: 2, L: DECODE_MAX_L, S: 1500, path: 'decode',
    options: { isCausal: true, keyPaddingMask: { data: boolMask(2 * 1500, 2, 1), shape: [2, 1500] }, needWeights: true },
  }));

  test('fully masked rows give zeros (output = out_proj.bias, weights 0), like WASM', async () => {
    const B = 2, L = 2, S = 600;
    const kpm = new Uint8Array(B * S);
    kpm.fill(1, S, 2 * S);                             // batch 1: every key padded (3 chunks)
    const am = new Uint8Array(B * H * L * S);
    am.fill(1, (1 * L + 0) * S, (1 * L + 1) * S);      // batch 0, head 1, row 0: every key masked
    am.fill(1, 0, 256);                                // batch 0, head 0, row 0: first chunk all masked
    const { actual } = await gpuMatchesWasm({
      create, B, L, S, path: 'decode',
      options: { keyPaddingMask: { data: kpm, shape: [B, S] }, attnMask: { data: am, shape: [B * H, L, S] }, needWeights: true, averageAttnWeights: false },
    });
    const w = actual.attnWeights.data;
    assert.ok(w.slice(B * H * L * S / 2).every((x) => x === 0), 'batch 1 weights are zero');
    assert.ok(w.slice(L * S, (L + 1) * S).every((x) => x === 0), 'batch 0, head 1, row 0 weights are zero');
    assert.ok(actual.output.data.every(Number.isFinite));
  });

  test('large logits (inputs ×30), S 1500, additive mask', () => gpuMatchesWasm({
    create, B: 2, L: 1, S: 1500, path: 'decode', scale: 30,
    options: { attnMask: { data: filled(1500, 21, 2), shape: [1, 1500] }, needWeights: true },
  }));

  test('batch 3, L 4, cross-attention with kdim/vdim and free head dims (d_k 24, d_v 40)', () => gpuMatchesWasm({
    create: { embedDim: 16, numHeads: 2, kdim: 12, vdim: 20, headDim: 24, valueHeadDim: 40 }, B: 3, L: 4, S: 1000, path: 'decode',
    options: { keyPaddingMask: { data: boolMask(3 * 1000, 11), shape: [3, 1000] } },
  }));

  test('self-attention with L = S = 1 (fused Q/K/V) takes decode; key === value with L 2', async () => {
    await gpuMatchesWasm({ create, B: 2, L: 1, S: 1, self: true, path: 'decode', options: { isCausal: true } });
    await gpuMatchesWasm({ create, B: 2, L: 2, S: 900, kvSame: true, path: 'decode' });
  });

  test(`L ${DECODE_MAX_L + 1} takes the flash kernel`, () => gpuMatchesWasm({
    create, B: 1, L: DECODE_MAX_L + 1, S: 300, path: 'flash', options: { isCausal: true },
  }));
});

// ---- device loss -------------------------------------------------------------------------------

describe('a lost device: the module carries on on WASM', () => {
  const c = () => fixtures.find((f) => f.name === 'kpm_bool_attn_float');

  async function freshDevice() {
    return (await gpu.requestAdapter()).requestDevice();
  }

  test('device.destroy() during the 2nd of 4 calls: all 4 correct, backend switches to wasm with a warning', async () => {
    const f = c();
    const own = await freshDevice();
    const mha = await MultiHeadAttention.create({ ...f.create, backend: 'webgpu', gpu: own });
    mha.loadStateDict(f.stateDict);
    const { query, key, value } = f.inputs;
    const { result: results, warnings } = await captureWarnings(async () => {
      runs.length = 0;
      const out = [await mha.forward(query, key, value, f.options)];
      assert.equal(mha.backend, 'webgpu');
      const inFlight = mha.forward(query, key, value, f.options);
      own.destroy();
      out.push(await inFlight);
      out.push(await mha.forward(query, key, value, f.options));
      out.push(await mha.forward(query, key, value, f.options));
      return out;
    });
    try {
      results.forEach((r, i) => checkAgainstFixture({ ...f, name: `call ${i + 1}` }, r));
      assert.deepEqual(runs, ['webgpu', 'wasm', 'wasm', 'wasm']);
      assert.equal(mha.backend, 'wasm');
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0], /device was lost \(destroyed.*computes on WASM/);
    } finally {
      mha.dispose();
    }
  });

  test('device lost between calls: the next call goes straight to WASM, correct', async () => {
    const f = c();
    const own = await freshDevice();
    const mha = await MultiHeadAttention.create({ ...f.create, backend: 'webgpu', gpu: own });
    try {
      mha.loadStateDict(f.stateDict);
      const { query, key, value } = f.inputs;
      runs.length = 0;
      checkAgainstFixture(f, await mha.forward(query, key, value, f.options));
      own.destroy();
      await own.lost;
      assert.equal(mha.backend, 'wasm');
      mha.loadStateDict(f.stateDict);  // still loads (into WASM)
      checkAgainstFixture(f, await mha.forward(query, key, value, f.options));
      assert.deepEqual(runs, ['webgpu', 'wasm']);
    } finally {
      mha.dispose();
    }
  });

  test('a module made after the shared device was lost gets a new device', async () => {
    const gpu2 = createGpu([]);
    const f = c();
    const first = await MultiHeadAttention.create({ ...f.create, backend: 'webgpu', gpu: gpu2 });
    first.dispose();
    // Reach the shared device through a module's forward: lose it by destroying every device
    // the package made on gpu2 (it made one); the next create() must not reuse it.
    const shared = await acquireGpu({ gpu: gpu2, backend: 'webgpu' });
    shared.device.destroy();
    await shared.device.lost;
    const second = await MultiHeadAttention.create({ ...f.create, backend: 'webgpu', gpu: gpu2 });
    try {
      second.loadStateDict(f.stateDict);
      runs.length = 0;
      checkAgainstFixture(f, await second.forward(f.inputs.query, f.inputs.key, f.inputs.value, f.options));
      assert.deepEqual(runs, ['webgpu']);
      assert.equal(second.backend, 'webgpu');
    } finally {
      second.dispose();
    }
  });
});

// ---- choosing the backend ----------------------------------------------------------------------

describe('backend selection', () => {
  const base = { embedDim: 8, numHeads: 2 };

  test("'webgpu' with no WebGPU at all (Node without a gpu option) throws BackendError", async () => {
    assert.equal(globalThis.navigator?.gpu, undefined);
    await assert.rejects(MultiHeadAttention.create({ ...base, backend: 'webgpu' }), (e) => {
      assert.ok(e instanceof BackendError, e.stack);
      assert.equal(e.name, 'BackendError');
      assert.match(e.message, /WebGPU is not available/);
      return true;
    });
  });

  test("'webgpu' where requestAdapter() finds no adapter throws BackendError", async () => {
    const noAdapter = { requestAdapter: async () => null };
    await assert.rejects(MultiHeadAttention.create({ ...base, backend: 'webgpu', gpu: noAdapter }), BackendError);
    const throwing = { requestAdapter: async () => { throw new Error('driver gone'); } };
    await assert.rejects(MultiHeadAttention.create({ ...base, backend: 'webgpu', gpu: throwing }), /driver gone/);
  });

  test("'auto' without an adapter (or without WebGPU), and 'wasm', run on WASM", async () => {
    const noAdapter = { requestAdapter: async () => null };
    const throwing = { requestAdapter: async () => { throw new Error('driver gone'); } };
    for (const options of [{ gpu: noAdapter }, { gpu: throwing }, {}, { backend: 'wasm', gpu }]) {
      // webgpuMinFlops 0: the first call makes 'auto' look for a GPU.
      const mha = await MultiHeadAttention.create({ ...base, ...options, webgpuMinFlops: 0 });
      try {
        mha.loadStateDict(randomStateDict(mha.stateDictShapes, 4));
        const x = { data: filled(3 * 8, 1), shape: [1, 3, 8] };
        runs.length = 0;
        await mha.forward(x, x, x);
        assert.ok(!runs.includes('webgpu'), JSON.stringify(options));  // (a module with no GPU at all reports no runs)
        assert.equal(mha.backend, 'wasm');
      } finally {
        mha.dispose();
      }
    }
  });

  // A call of forwardFlops >= 2^26 (the default threshold): (L = S = 128, E = 256, h = 4).
  const bigCall = async (mha) => {
    const x = { data: filled(128 * 256, 5), shape: [1, 128, 256] };
    const plan = resolveMhaForward(mha.config, x, x, x);
    assert.ok(forwardFlops(plan, mha.config) >= DEFAULT_WEBGPU_MIN_FLOPS);
    return mha.forward(x, x, x);
  };
  /** The package's GPU object, counting requestAdapter() calls. */
  const counting = () => {
    const probe = { calls: 0 };
    probe.gpu = { requestAdapter: (options) => { probe.calls++; return gpu.requestAdapter(options); } };
    return probe;
  };

  test("'auto' asks for no adapter until a call reaches the threshold", async () => {
    const probe = counting();
    const f = fixtures.find((x) => x.name === 'weights_avg');
    const mha = await MultiHeadAttention.create({ ...f.create, backend: 'auto', gpu: probe.gpu });
    try {
      mha.loadStateDict(f.stateDict);
      runs.length = 0;
      checkAgainstFixture(f, await mha.forward(f.inputs.query, f.inputs.key, f.inputs.value, f.options));
      assert.equal(probe.calls, 0);
      assert.equal(mha.backend, 'wasm');
      assert.deepEqual(runs, ['wasm']);
    } finally {
      mha.dispose();
    }
  });

  // Both kinds of adapter: calls below the threshold stay on WASM without an adapter probe; at
  // the threshold a hardware GPU takes them, SwiftShader is left alone (slower than WASM at every
  // size). Either way: one probe for both modules and all calls, WASM's results.
  test(`'auto' at the default threshold on this ${kind} adapter: large calls on ${autoBackendForLargeCalls(kind)}, small ones on WASM`, async () => {
    const where = autoBackendForLargeCalls(kind);
    const probe = counting();
    const make = (backend) => MultiHeadAttention.create({ embedDim: 256, numHeads: 4, backend, gpu: probe.gpu });
    const [a, b, reference] = [await make('auto'), await make('auto'), await make('wasm')];
    try {
      for (const mha of [a, b, reference]) mha.loadStateDict(randomStateDict(mha.stateDictShapes, 9));
      const x = { data: filled(8 * 256, 5), shape: [1, 8, 256] };
      assert.ok(forwardFlops(resolveMhaForward(a.config, x, x, x), a.config) < DEFAULT_WEBGPU_MIN_FLOPS);
      runs.length = 0;
      await a.forward(x, x, x);
      assert.deepEqual(runs, ['wasm'], 'a call below the threshold');
      assert.equal(probe.calls, 0, 'no adapter probe below the threshold');
      runs.length = 0;
      const [ra, rb] = await Promise.all([bigCall(a), bigCall(b)]);
      await bigCall(a);
      assert.deepEqual(runs, [where, where, where]);
      assert.deepEqual(ra.output.data, rb.output.data);
      assert.equal(a.backend, where);
      assert.equal(probe.calls, 1, 'one adapter probe for both modules and all calls');
      assertClose(ra.output, (await bigCall(reference)).output, `'auto' (${where}) vs 'wasm'`);
    } finally {
      a.dispose();
      b.dispose();
      reference.dispose();
    }
  });

  test(`'auto' with webgpuMinFlops: small calls on WASM, large on the GPU (default threshold ${DEFAULT_WEBGPU_MIN_FLOPS} on hardware adapters)`, async () => {
    const f = fixtures.find((x) => x.name === 'weights_avg');
    const threshold = 20_000;
    const mha = await MultiHeadAttention.create({ ...f.create, backend: 'auto', gpu, webgpuMinFlops: threshold });
    try {
      mha.loadStateDict(f.stateDict);
      const E = f.create.embedDim;
      const x = (B, L) => ({ data: filled(B * L * E, L), shape: [B, L, E] });
      const smallCall = resolveMhaForward(mha.config, x(1, 2), x(1, 2), x(1, 2));
      const largeCall = resolveMhaForward(mha.config, x(2, 40), x(2, 40), x(2, 40));
      const fixtureCall = resolveMhaForward(mha.config, f.inputs.query, f.inputs.key, f.inputs.value, f.options);
      assert.ok(forwardFlops(smallCall, mha.config) < threshold && forwardFlops(largeCall, mha.config) > threshold
        && forwardFlops(fixtureCall, mha.config) > threshold);
      runs.length = 0;
      await mha.forward(x(1, 2), x(1, 2), x(1, 2));
      assert.equal(mha.backend, 'wasm', 'no choice made before the first large call');
      await mha.forward(x(2, 40), x(2, 40), x(2, 40));
      assert.equal(mha.backend, 'webgpu');
      checkAgainstFixture(f, await mha.forward(f.inputs.query, f.inputs.key, f.inputs.value, f.options));
      assert.deepEqual(runs, ['wasm', 'webgpu', 'webgpu']);
    } finally {
      mha.dispose();
    }
  });

  test("'auto' uploads a state dict loaded before its device existed, and a later one", async () => {
    const [a, b] = fixtures.filter((c) => c.name === 'weights_avg' || c.name === 'kpm_bool_attn_float');
    const mha = await MultiHeadAttention.create({ ...a.create, backend: 'auto', gpu, webgpuMinFlops: 0 });
    try {
      const sd = Object.fromEntries(Object.entries(a.stateDict).map(([k, t]) => [k, { data: t.data.slice(), shape: t.shape }]));
      mha.loadStateDict(sd);
      for (const t of Object.values(sd)) t.data.fill(7);  // the module copied what it needs
      runs.length = 0;
      checkAgainstFixture(a, await mha.forward(a.inputs.query, a.inputs.key, a.inputs.value, a.options));
      mha.loadStateDict(b.stateDict);
      checkAgainstFixture(b, await mha.forward(b.inputs.query, b.inputs.key, b.inputs.value, b.options));
      assert.deepEqual(runs, ['webgpu', 'webgpu']);
    } finally {
      mha.dispose();
    }
  });

  test('bad backend options throw OptionError naming the option', async () => {
    for (const [options, argument] of [[{ backend: 'cuda' }, 'backend'], [{ gpu: 42 }, 'gpu'],
      [{ backend: 'webgpu', gpu: {} }, 'gpu'], [{ webgpuMinFlops: -1 }, 'webgpuMinFlops'], [{ webgpuMinFlops: '1e6' }, 'webgpuMinFlops']]) {
      await assert.rejects(MultiHeadAttention.create({ ...base, ...options }), (e) => {
        assert.ok(e instanceof OptionError, `${JSON.stringify(options)}: ${e.stack}`);
        assert.equal(e.argument, argument);
        return true;
      });
    }
  });
});
