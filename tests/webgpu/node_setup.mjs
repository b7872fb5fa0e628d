// Shared set-up of the Node WebGPU tests (tests/webgpu/node_*.test.mjs): the WebGPU backend in
// Node through the npm `webgpu` package (Dawn) on SwiftShader's Vulkan driver by default, so no
// GPU is needed (Debian's chromium ships it; VK_ICD_FILENAMES points Vulkan at it). A
// VK_ICD_FILENAMES (or VK_DRIVER_FILES) already set wins: pointed at a GPU's Vulkan driver (its
// ICD .json) the same command tests that GPU; the suite detects its adapter (adapter.mjs) and
// asserts what holds there. The files check:
//   - node_parity: every PyTorch MHA fixture through the test contract's runCase() with
//     { backend: 'webgpu', gpu } (all of them are small enough for software WebGPU; a case over
//     MAX_FIXTURE_FLOPS would be listed by name in the test that says which were left out);
//   - node_gpu_vs_wasm: GPU vs WASM on shapes the fixtures do not reach (several query and key
//     tiles, causal across tiles, wide free head dims, rows with every key masked, fused Q/K/V
//     uploads), pipeline caching, loadStateDict();
//   - node_buffer_cache: per-call GPU buffers cached per module, dropped on dispose and device loss;
//   - node_storage_buffers: no float32 copy of a float16 / int8 cache, snapshots from the pool, no
//     buffers for options a module does not have;
//   - node_decode: the decode path (L <= DECODE_MAX_L) vs WASM;
//   - node_kernel_cases: the kernel-level cases of tests/cases/kernel_cases.json against their
//     float64 reference;
//   - node_device_loss: a device lost mid-sequence (device.destroy() while a call is in flight,
//     and between calls): every call still returns the right result, through the WASM fallback;
//   - node_backend_selection: 'webgpu' without an adapter throws BackendError, 'auto' declines
//     SwiftShader by default and takes a hardware GPU above its threshold, honours
//     webgpuMinFlops, option checks.
//   node --test tests/webgpu/       (needs web/dist: bash scripts/build.sh)
//
// Importing this module sets the Vulkan driver default, creates the GPU object and finds the
// adapter, installs the test hook that records where each call ran, and registers the
// process-wide before/after hooks (node --test runs each file in its own process, so each file
// gets its own Dawn, made here after the Vulkan default is set).
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { checkResult, compare, filled } from '../contract/contract.mjs';
import { webgpuCases, webgpuTestHooks as testHooks } from '../internals.mjs';
import { loadFixtures } from '../js/fixtures.js';
import { SWIFTSHADER_ICD, adapterInfo, adapterKind, requestTestAdapter } from './adapter.mjs';

if (!process.env.VK_ICD_FILENAMES && !process.env.VK_DRIVER_FILES) {
  process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;  // before Dawn loads (the import below)
}

const { MultiHeadAttention } = api;
// A dynamic import: static ones run before this module's body, and Dawn must load after the
// VK_ICD_FILENAMES default above.
export const { create: createGpu } = await import('webgpu');

/** The PyTorch MHA fixture cases. */
export const fixtures = webgpuCases(loadFixtures());

export let gpu = createGpu([]);  // the npm webgpu package's GPU object
// The adapter decides what some tests expect (SwiftShader or a hardware GPU): found before the
// tests are made, so that their titles can say which.
export const adapter = await requestTestAdapter(gpu);
export const kind = adapter ? adapterKind(adapter) : null;
export const adapterName = adapter ? `${kind}: ${JSON.stringify(adapterInfo(adapter))}` : 'no adapter';
export let device;    // a device of ours, passed as `gpu` where a test needs to reach it
export const runs = [];
export const paths = [];  // the attention path of each GPU run: 'flash' | 'decode'
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

/** A new device on a new adapter request, for a test that destroys or instruments it. */
export async function freshDevice() {
  return (await gpu.requestAdapter()).requestDevice();
}

/** Records console.warn calls during fn(). */
export async function captureWarnings(fn) {
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
export function assertClose(actual, expected, what) {
  const { ok, detail } = compare(actual, expected);
  assert.ok(ok, `${what}: ${detail}`);
}

/** A result against a fixture case's expected values (output, and weights or null). */
export function checkAgainstFixture(c, result) {
  const { ok, detail } = checkResult(c, result);
  assert.ok(ok, detail);
}

export function randomStateDict(shapes, seed) {
  return Object.fromEntries(shapes.map(({ name, shape }, i) => {
    const n = shape.reduce((a, b) => a * b, 1);
    return [name, { data: filled(n, seed + i, 1 / Math.sqrt(shape.at(-1))), shape }];
  }));
}

/** Runs the same call on 'wasm' and on 'webgpu' and compares (1e-4 abs + 1e-4 rel). */
export async function gpuMatchesWasm({ create, B, L, S, self = false, kvSame = false, options = {}, seed = 7, scale = 1, path, nonFiniteKeys = [] }) {
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
    // [j, x]: key and value rows j of every batch hold x (NaN, Infinity): masked means absent.
    for (const [j, x] of nonFiniteKeys) {
      for (const t of [key, value]) {
        const width = t.shape[2];
        for (let b = 0; b < B; b++) t.data.fill(x, (b * S + j) * width, (b * S + j + 1) * width);
      }
    }
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

/** A boolean mask of n entries with every `every`-th one set (masked), from `offset`. */
export const boolMask = (n, every, offset = 0) => {
  const m = new Uint8Array(n);
  for (let i = offset; i < n; i += every) m[i] = 1;
  return m;
};
