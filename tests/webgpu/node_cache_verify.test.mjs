// Draft verification (issue 38) on a cache on the GPU: the verification attnMask is read by the
// attention kernels (amKey0: it covers the call's new positions), and keep() writes the moved rows
// again on the device, in the cache's call queue (the runs make it while the calls before it are
// still queued); a cache's window counts in positionIds (the kernels read them from the call's row
// table), a tree of drafts under a window compared with WASM's run too. Same runs as
// tests/js/cache_verify.test.js on WASM (tests/contract/cache_verify.mjs), fewer layouts:
// SwiftShader is slow. Set-up: node_setup.mjs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { CacheError, DTypeError, DisposedError, ShapeError } from '#webattention';
import { sameBits } from '../contract/compare.mjs';
import { VERIFY_LAYOUTS, draftRun, encodedKeepRun, hostileKeepRun, longMaskRun, outsideTolerance, rowsTreeRun, sameRead,
  treeRun, wideTreeRun, windowIdsRefusalRun } from '../contract/cache_verify.mjs';
import { assertTreeVerify, assertWindowIdsRefused } from '../contract/cache_verify_asserts.mjs';
import { filled } from '../contract/random.mjs';
import { fittingVariants } from '../../web/src/webgpu/programs.js';
import { selectionHooks } from '../internals.mjs';
import { adapter, gpu, runs } from './node_setup.mjs';

const ON_GPU = { backend: 'webgpu', gpu };
const onlyGpu = (before) => runs.slice(before).every((where) => where === 'webgpu');

// The window's layouts (3 on: a window counted in positionIds, the kernels reading the ids through
// the row table, decode for the four drafts of 'small', flash for six) are each also compared with
// the same run on WASM.
for (const layout of [VERIFY_LAYOUTS[0], VERIFY_LAYOUTS[2], ...VERIFY_LAYOUTS.slice(3)]) {
  test(`WebGPU: a tree of drafts verified in one call = a causal run per branch; keep() = a fresh run (${JSON.stringify({ ...layout.cache, mask: layout.mask, tree: layout.tree, poison: layout.poison })})`, async () => {
    const before = runs.length;
    const r = await assertTreeVerify(api, layout, ON_GPU);
    assert.ok(onlyGpu(before), 'every call on the GPU');
    if (!layout.cache.window) return;
    const wasm = await treeRun(api, layout);
    for (const [n, b] of r.branches.entries()) assert.equal(outsideTolerance(b.verified, wasm.branches[n].verified), null, `branch ${n} against WASM`);
    assert.equal(outsideTolerance(r.weights, wasm.weights), null, 'the verify call\'s weights against WASM');
    assert.equal(outsideTolerance(r.next.kept, wasm.next.kept), null, 'the token after keep() against WASM');
  });
}

for (const layout of [VERIFY_LAYOUTS[1], VERIFY_LAYOUTS[3]]) {
  test(`WebGPU: draft 4, keep 2 = a fresh run over the accepted tokens (${JSON.stringify(layout.cache)})`, async () => {
    const before = runs.length;
    const head = await draftRun(api, layout, [0, 1], { on: ON_GPU });
    assert.ok(sameBits(head.kept.data, head.fresh.data));
    assert.ok(sameRead(head.read[0], head.read[1]));
    const moved = await draftRun(api, layout, [1, 3], { on: ON_GPU });
    assert.ok(onlyGpu(before), 'every call on the GPU');
    assert.equal(moved.length, (layout.prefix ?? 5) + 2);
    assert.equal(outsideTolerance(moved.kept, moved.fresh), null);
    assert.equal(outsideTolerance(moved.kept, moved.reference), null);
    assert.ok(sameRead(moved.read[0], moved.read[1]), 'read() after keep([1, 3]): the moved rows written as a fresh run writes them');
  });
}

test('WebGPU: a verification mask over a call of several passes (a window\'s ring) = float64', async () => {
  const before = runs.length;
  const r = await longMaskRun(api, ON_GPU);
  assert.ok(onlyGpu(before), 'every call on the GPU');
  assert.equal(outsideTolerance(r.output, r.reference), null);
});

test('WebGPU: after a call of more than 256 rows keep() keeps a prefix; a moved row is a CacheError, the cache unchanged', async () => {
  const mha = await api.MultiHeadAttention.create({ embedDim: 16, numHeads: 4, rotary: { dim: 4 }, ...ON_GPU });
  try {
    mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }, i) => [name, { data: filled(shape.reduce((a, b) => a * b, 1), 80 + i), shape }])));
    const x = { data: filled(300 * 16, 81), shape: [1, 300, 16] };
    const cache = mha.createCache({ maxLength: 320 });
    await mha.forward(x, x, x, { cache });
    assert.throws(() => cache.keep([1, 3]), (e) => e instanceof CacheError && e.argument === 'indices' && /only a prefix/.test(e.message));
    assert.equal(cache.length, 300);
    cache.keep([0, 1, 2]);
    assert.equal(cache.length, 3);
    assert.equal((await cache.read()).key.shape[2], 3);
  } finally {
    mha.dispose();
  }
});

test('WebGPU: misuse of keep() and of a verification mask is a typed error that leaves the cache as it was', async () => {
  const r = await hostileKeepRun(api, ON_GPU);
  const wrong = r.refusals.filter(({ error }) => !(error instanceof CacheError) || error.argument !== 'indices');
  assert.deepEqual(wrong.map(({ indices, error }) => `keep(${String(indices)}): ${error}`), []);
  for (const [i, error] of r.masks.entries()) assert.ok(error instanceof (i === 2 ? DTypeError : ShapeError) && error.argument === 'attnMask', String(error));
  assert.equal(r.length, 8);
  assert.ok(r.unchanged);
  for (const error of r.noCall) assert.ok(error instanceof CacheError, String(error));
  assert.ok(r.disposed instanceof DisposedError);
  const encoded = await encodedKeepRun(api, ON_GPU);
  assert.ok(encoded instanceof CacheError, String(encoded));
});

// Every flash and decode variant reads the window's ids through the same helpers (beforeWindow(),
// firstKey() from a tile's first row): the window's trees with each pinned, against WASM.
describe('WebGPU: a window in positionIds in every attention variant = WASM', () => {
  const ran = [];
  before(() => { selectionHooks.onCall = (names) => ran.push(names); });
  after(() => {
    selectionHooks.onCall = null;
    api.configure({ gpuKernels: {} });
  });
  const deep = VERIFY_LAYOUTS.find((l) => l.tree === 'deep' && !l.poison);
  const small = VERIFY_LAYOUTS.find((l) => l.tree === 'small');
  for (const [family, layout] of [['attention', deep], ['decode', small]]) {
    const wasm = treeRun(api, layout);
    for (const { name } of fittingVariants(family, adapter, { dk: 4, dv: 4 })) {
      test(`${family} ${name} (${JSON.stringify({ ...layout.cache, tree: layout.tree })})`, async () => {
        api.configure({ gpuKernels: { [family]: name } });
        ran.length = 0;
        const r = await treeRun(api, layout, ON_GPU).finally(() => api.configure({ gpuKernels: {} }));
        const pinned = ran.map((names) => names[family]).filter(Boolean);
        assert.ok(pinned.length > 0 && pinned.every((n) => n === name), `ran ${pinned.join(', ')}`);
        for (const [n, b] of r.branches.entries()) {
          assert.equal(outsideTolerance(b.verified, (await wasm).branches[n].verified), null, `branch ${n} against WASM`);
        }
      });
    }
  }
});

test('WebGPU: a window in positionIds on a batched cache whose rows differ in length = one cache per row = WASM', async () => {
  const before = runs.length;
  const r = await rowsTreeRun(api, ON_GPU);
  assert.ok(onlyGpu(before), 'every call on the GPU');
  const wasm = await rowsTreeRun(api);
  assert.equal(outsideTolerance(r.batched, wasm.batched), null, 'against WASM');
  const [L, E] = r.batched.shape.slice(1);
  for (const [b, alone] of r.alone.entries()) {
    const mine = { data: r.batched.data.subarray(b * L * E, (b + 1) * L * E), shape: [1, L, E] };
    assert.equal(outsideTolerance(mine, alone), null, `row ${b}`);
  }
});

test('WebGPU: a wide tree under a window (65 drafts at depth 1: a second tile of query rows) = float64 = WASM', async () => {
  const before = runs.length;
  const r = await wideTreeRun(api, ON_GPU);
  assert.ok(onlyGpu(before), 'every call on the GPU');
  assert.equal(outsideTolerance(r.output, r.reference), null, 'against float64');
  assert.equal(outsideTolerance(r.output, (await wideTreeRun(api)).output), null, 'against WASM');
});

test('WebGPU: positionIds that move a window past what its ring holds are the CacheError WASM gives, the cache unchanged', async () => {
  const before = runs.length;
  assertWindowIdsRefused(api, await windowIdsRefusalRun(api, ON_GPU));
  assert.ok(onlyGpu(before), 'every call on the GPU');
});
