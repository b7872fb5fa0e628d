// Draft verification (issue 38) on WASM: forward() with a cache and a verification attnMask, and
// cache.keep(), on the module and thread count the environment picks (WEBATTENTION_WASM,
// WEBATTENTION_THREADS: the pool leaves cache calls to the calling thread). The runs:
// tests/contract/cache_verify.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { CacheError, DTypeError, DisposedError, ShapeError } from '#webattention';
import { sameBits } from '../contract/compare.mjs';
import { HOSTILE_KEEPS, VERIFY_LAYOUTS, draftRun, encodedKeepRun, hostileKeepRun, longMaskRun, outsideTolerance, rowsTreeRun,
  sameRead, wideTreeRun, windowIdsRefusalRun } from '../contract/cache_verify.mjs';
import { assertTreeVerify, assertWindowIdsRefused } from '../contract/cache_verify_asserts.mjs';

const describeLayout = ({ cache, mask, create, tree, poison }) => JSON.stringify({ ...cache, mask, rotary: create.rotary, tree, poison });

for (const layout of VERIFY_LAYOUTS) {
  test(`a tree of drafts verified in one call = a causal run per branch; keep(a branch) = a fresh run (${describeLayout(layout)})`, async () => {
    await assertTreeVerify(api, layout);
  });
}

for (const layout of VERIFY_LAYOUTS) {
  test(`draft 4, keep 2 = a fresh run over the accepted tokens (${describeLayout(layout)})`, async () => {
    // The first two: nothing moves.
    const prefix = layout.prefix ?? 5;
    const head = await draftRun(api, layout, [0, 1]);
    assert.equal(head.length, prefix + 2);
    assert.ok(sameBits(head.kept.data, head.fresh.data));
    assert.ok(sameRead(head.read[0], head.read[1]));
    // Moved keys are rotated at their new positions from the call's projected keys, as a fresh
    // run rotates and stores them: the same bits, in every storage type.
    const moved = await draftRun(api, layout, [1, 3]);
    assert.ok(sameBits(moved.kept.data, moved.fresh.data), 'the token after keep([1, 3])');
    assert.ok(sameRead(moved.read[0], moved.read[1]), 'read() after keep([1, 3])');
    assert.equal(outsideTolerance(moved.kept, moved.reference), null);
  });
}

test('a verification mask over a call of several passes (a window\'s ring) = float64', async () => {
  const r = await longMaskRun(api);
  assert.equal(outsideTolerance(r.output, r.reference), null);
});

test('keep() after a call of more than 256 rows (its moved keys rotated on from the stored ones), and on a fork', async () => {
  const long = await draftRun(api, { create: { rotary: { dim: 4 } }, cache: { maxLength: 320 } }, [1, 3, 299], { n: 300 });
  assert.equal(long.length, 5 + 3);
  assert.equal(outsideTolerance(long.kept, long.fresh), null);
  assert.equal(outsideTolerance(long.kept, long.reference), null);
  const worst = long.read[0].key.data.reduce((m, x, i) => Math.max(m, Math.abs(x - long.read[1].key.data[i])), 0);
  assert.ok(worst > 0 && worst <= 1e-6, `read() keys: max |kept − fresh| ${worst}`);
  const forked = await draftRun(api, VERIFY_LAYOUTS[2], [1, 3], { fork: true });
  assert.ok(sameBits(forked.kept.data, forked.fresh.data), 'a fork keeps the projected keys too');
});

test('misuse of keep() and of a verification mask is a typed error that leaves the cache as it was', async () => {
  const r = await hostileKeepRun(api);
  const wrong = r.refusals.filter(({ error }) => !(error instanceof CacheError) || error.argument !== 'indices');
  assert.deepEqual(wrong.map(({ indices, error }) => `keep(${String(indices)}): ${error}`), []);
  const message = (i) => r.refusals[i].error.message;
  assert.match(message(0), /strictly increasing integers in \[0, 4\).*got number 1 at index 1 after 1/);
  assert.match(message(2), /got number 4 at index 0/);
  assert.match(message(HOSTILE_KEEPS.indexOf('x')), /expected an array of indices/);
  for (const [i, error] of r.masks.entries()) {
    assert.ok(error instanceof (i === 2 ? DTypeError : ShapeError), String(error));
    assert.equal(error.argument, 'attnMask');
  }
  assert.match(r.masks[0].message, /expected shape \[2, 2\], \[2, 2, 2\] or \[8, 2, 2\] \(among the 2 new positions, with a cache\), got \[2, 3\]/);
  assert.equal(r.length, 8);
  assert.ok(r.unchanged, 'the next call after the refusals equals a twin cache\'s');
  for (const error of r.noCall) {
    assert.ok(error instanceof CacheError, String(error));
    assert.match(error.message, /no forward\(\) has appended positions/);
  }
  assert.ok(r.disposed instanceof DisposedError, String(r.disposed));
  const encoded = await encodedKeepRun(api);
  assert.ok(encoded instanceof CacheError && /read-only/.test(encoded.message), String(encoded));
});

test('a window in positionIds on a batched cache whose rows differ in length = one cache per row', async () => {
  const r = await rowsTreeRun(api);
  const [L, E] = r.batched.shape.slice(1);
  for (const [b, alone] of r.alone.entries()) {
    const mine = { data: r.batched.data.subarray(b * L * E, (b + 1) * L * E), shape: [1, L, E] };
    assert.equal(outsideTolerance(mine, alone), null, `row ${b}`);
  }
});

test('a wide tree under a window (65 drafts at depth 1, one pass of the ring) = float64', async () => {
  const r = await wideTreeRun(api);
  assert.equal(outsideTolerance(r.output, r.reference), null);
});

test('positionIds that move a window past what its ring holds are a CacheError naming positionIds, the cache unchanged', async () => {
  assertWindowIdsRefused(api, await windowIdsRefusalRun(api));
});
