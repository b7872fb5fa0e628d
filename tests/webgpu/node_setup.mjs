// Shared set-up of the Node WebGPU tests (tests/webgpu/node_*.test.mjs): the WebGPU backend in
// Node through the npm `webgpu` package (Dawn) on SwiftShader's Vulkan driver by default, so no
// GPU is needed (Debian's chromium ships it; VK_ICD_FILENAMES points Vulkan at it). A
// VK_ICD_FILENAMES (or VK_DRIVER_FILES) already set wins: pointed at a GPU's Vulkan driver (its
// ICD .json) the same command tests that GPU; the suite detects its adapter (adapter.mjs) and
// asserts what holds there. Each node_*.test.mjs says in its
// first lines what it checks (a list here only drifted from the files).
//
// Importing this module sets the Vulkan driver default, creates the GPU object and finds the
// adapter, installs the test hook that records where each call ran, and registers the
// process-wide before/after hooks (node --test runs each file in its own process, so each file
// gets its own Dawn, made here after the Vulkan default is set).
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { checkResult, compare, filled, seededStateDict } from '../contract/contract.mjs';
import { DEFAULT_VARIANTS, selectionHooks, webgpuCases, webgpuTestHooks as testHooks } from '../internals.mjs';
import { loadFixtures } from '../js/fixtures.js';
import { SWIFTSHADER_ICD, adapterInfo, adapterKind, requestTestAdapter } from './adapter.mjs';
import { coveringSubset } from './covering.mjs';

const onSwiftShader = !process.env.VK_ICD_FILENAMES && !process.env.VK_DRIVER_FILES;
if (onSwiftShader) process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;  // before Dawn loads (the import below)

const { MultiHeadAttention } = api;
// A dynamic import: static ones run before this module's body, and Dawn must load after the
// VK_ICD_FILENAMES default above.
const { create } = await import('webgpu');
/**
 * Dawn's switches for a new GPU object. On SwiftShader, two of Dawn's safety transforms are off:
 * zeroing workgroup memory and clamping out-of-bounds accesses (robustness). Together they made
 * each pipeline's compile about 6x as long (node_cache.test.mjs: 60 s of compile spans against
 * 10 s; the file 27.6 s against 9.1 s), and compiling is what the WebGPU step's time goes on.
 * The kernels write workgroup memory before reading it and stay in bounds, so results are the
 * same; without the transforms, a kernel that did not would read garbage or fault here, where
 * browsers would hide it. The browser test (browser.test.mjs: Chromium's own SwiftShader) and
 * any hardware adapter run with Dawn's defaults.
 */
const DAWN_SWITCHES = onSwiftShader ? ['enable-dawn-features=disable_workgroup_init,disable_robustness'] : [];
/** A GPU object of the npm webgpu package (Dawn), with DAWN_SWITCHES. */
export const createGpu = () => create(DAWN_SWITCHES);

/** The PyTorch MHA fixture cases. */
export const fixtures = webgpuCases(loadFixtures());

export let gpu = createGpu();  // the npm webgpu package's GPU object
// The adapter decides what some tests expect (SwiftShader or a hardware GPU): found before the
// tests are made, so that their titles can say which.
export const adapter = await requestTestAdapter(gpu);
export const kind = adapter ? adapterKind(adapter) : null;
export const adapterName = adapter ? `${kind}: ${JSON.stringify(adapterInfo(adapter))}` : 'no adapter';
/**
 * Where the adapter selects kernels by measurement (a hardware GPU), pins every family to its
 * small-problem default (configure({ gpuKernels })), so that calls a test compares bit for bit
 * run the same kernels and create() compiles the defaults alone; returns the undo. SwiftShader
 * never measures and always runs the defaults: nothing to pin. pinned: whether it pinned.
 */
export function pinDefaultsWhereSelecting() {
  if (kind !== 'hardware') return { pinned: false, undo: () => {} };
  api.configure({ gpuKernels: Object.fromEntries(Object.entries(DEFAULT_VARIANTS).map(([f, [small]]) => [f, small])) });
  return { pinned: true, undo: () => api.configure({ gpuKernels: {} }) };
}
/**
 * A test file's modules: module(options, seed) creates one on `device` from `base` and options,
 * with seeded random weights; every one (and those pushed onto `modules`) is disposed after the
 * file's tests, which run with the defaults pinned where the adapter selects
 * (pinDefaultsWhereSelecting()).
 */
export function seededModules(base) {
  const modules = [];
  let undo = () => {};
  before(() => ({ undo } = pinDefaultsWhereSelecting()));
  after(() => {
    for (const m of modules) m.dispose();
    undo();
  });
  const module = async (options = {}, seed = 3) => {
    const mha = await MultiHeadAttention.create({ ...base, gpu: device, ...options });
    mha.loadStateDict(randomStateDict(mha.stateDictShapes, seed));
    modules.push(mha);
    return mha;
  };
  return { modules, module };
}
/**
 * The whole of a long list of cases on a hardware GPU, or with WEBATTENTION_GPU_TESTS=all; on
 * SwiftShader its covering subset over keysOf (covering.mjs): every variant, dtype, shape... that
 * keysOf names still runs, not every combination of them, so that CI's WebGPU step keeps a fixed
 * size on two slow cores.
 */
export function onGpuOrCovering(items, keysOf) {
  const everything = kind === 'hardware' || process.env.WEBATTENTION_GPU_TESTS === 'all';
  return everything ? items : coveringSubset(items, keysOf);
}
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

// The device's work done before it is destroyed, and its loss seen, before the process exits:
// Dawn torn down at exit with work or events pending crashed the process (SIGSEGV / SIGABRT) after
// every test had passed, in most runs of a file that did little on the GPU and now and then in a
// busy one.
after(async () => {
  testHooks.onRun = null;
  await device?.queue.onSubmittedWorkDone().catch(() => {});
  device?.destroy();
  await device?.lost;
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

/**
 * WASM's bits where WGSL is exact as the core is (SwiftShader: no fused multiply-adds); a GPU may
 * fuse a product into a sum, so there the contract's tolerance.
 */
export function assertSame(actual, expected, what) {
  if (kind === 'hardware') return assertClose(actual, expected, what);
  const i = expected.data.findIndex((x, j) => !Object.is(x, actual.data[j]));
  assert.equal(i, -1, `${what}: [${i}] the GPU gives ${actual.data[i]}, WASM ${expected.data[i]}`);
}

/** A result against a fixture case's expected values (output, and weights or null). */
export function checkAgainstFixture(c, result) {
  const { ok, detail } = checkResult(c, result);
  assert.ok(ok, detail);
}

/** Seeded weights of about unit output scale: each entry's values within ±1/√(its input width). */
export const randomStateDict = (shapes, seed) => seededStateDict(shapes, seed, (shape) => 1 / Math.sqrt(shape.at(-1)));

/** Runs the same call on 'wasm' and on 'webgpu' and compares (1e-4 abs + 1e-4 rel). */
export async function gpuMatchesWasm(args) {
  const { actual, expected } = await gpuAndWasm(args);
  assertClose(actual.output, expected.output, 'output');
  if (expected.attnWeights) assertClose(actual.attnWeights, expected.attnWeights, 'attnWeights');
  else assert.equal(actual.attnWeights, null);
  return { actual, expected };
}

/**
 * The same call on 'wasm' (expected) and on 'webgpu' (actual, checked to have run there, on
 * `path` where given): modules of `create` with one random state dict (seed), inputs of seed + 10…12.
 */
export async function gpuAndWasm({ create, B, L, S, self = false, kvSame = false, options = {}, seed = 7, scale = 1, path, nonFiniteKeys = [] }) {
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
    return { actual, expected };
  } finally {
    wasm.dispose();
    gpuMha.dispose();
  }
}

/**
 * Runs call() with `family` pinned to variant `name` (configure({ gpuKernels })) and checks that a
 * GPU call ran and every one ran `name`; selectionHooks.onCall, if set, still sees every call.
 */
export async function withPinned(family, name, call) {
  const ran = [];
  const onCall = selectionHooks.onCall;
  selectionHooks.onCall = (names) => {
    ran.push(names[family]);
    onCall?.(names);
  };
  api.configure({ gpuKernels: { [family]: name } });
  try {
    await call();
  } finally {
    api.configure({ gpuKernels: {} });
    selectionHooks.onCall = onCall;
  }
  assert.ok(ran.length > 0, 'a GPU call ran');
  for (const ranName of ran) assert.equal(ranName, name, `the pinned ${family} variant ran`);
}

/** A boolean mask of n entries with every `every`-th one set (masked), from `offset`. */
export const boolMask = (n, every, offset = 0) => {
  const m = new Uint8Array(n);
  for (let i = offset; i < n; i += every) m[i] = 1;
  return m;
};
