// Randomized differential test: seeded random MHA configurations (tests/contract/random_cases.mjs:
// shapes, free head dims, kdim / vdim, bias, every mask kind and combination, causal, weights,
// fully masked rows, NaN and ±Infinity) through the public API, against the float64 reference
// (tests/contract/reference.mjs). scripts/test.sh runs it on every single-threaded module and on
// the worker pool (WEBATTENTION_THREADS=2). A failure names its seed; replay one with
//   WEBATTENTION_DIFF_SEEDS=<seed>[,<seed>...] node --test tests/js/differential.test.js
// and explore new ground with WEBATTENTION_DIFF_FIRST=<n> (the first seed; default 1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { randomMhaCase, runCase } from '../contract/contract.mjs';

const COUNT = 500;
// Seeds past COUNT that once found a bug, kept as regressions: a NaN row's weights in the key
// tiles causal never computes were 0 (1381: all its scores NaN; 500466: NaN among finite ones).
// They run as they were drawn then (randomMhaCase's asBefore: heads from the first draw, no
// grouped queries).
const REGRESSIONS = [1381, 500466];
const first = Number(process.env.WEBATTENTION_DIFF_FIRST ?? 1);
const seeds = process.env.WEBATTENTION_DIFF_SEEDS
  ? process.env.WEBATTENTION_DIFF_SEEDS.split(',').map(Number)
  : [...Array.from({ length: COUNT }, (_, i) => first + i), ...REGRESSIONS];

test(`${seeds.length} random MHA configurations match the float64 reference (seeds ${seeds[0]}…${first + COUNT - 1} and regressions)`, async () => {
  const failures = [];
  let nonFinite = 0;
  for (const seed of seeds) {
    const c = randomMhaCase(seed, { asBefore: REGRESSIONS.includes(seed) });
    if (!c.expected.output.data.every(Number.isFinite)) nonFinite++;
    try {
      const r = await runCase(api, c);
      if (!r.ok) failures.push(`seed ${seed} (${JSON.stringify(c.create)}, B·L·S ${c.inputs.query.shape[0]}·${c.inputs.query.shape[1]}·${c.inputs.key.shape[1]}, ${Object.keys(c.options).join(' ')}): ${r.detail}`);
    } catch (e) {
      failures.push(`seed ${seed}: threw ${e?.name}: ${e?.message}`);
    }
  }
  assert.deepEqual(failures, [], `${failures.length} of ${seeds.length} failed; replay with WEBATTENTION_DIFF_SEEDS=<seed>`);
  // The generator must keep reaching the non-finite paths (NaN rows), or the test proves less.
  if (!process.env.WEBATTENTION_DIFF_SEEDS) assert.ok(nonFinite >= 10, `only ${nonFinite} cases with NaN rows`);
});
