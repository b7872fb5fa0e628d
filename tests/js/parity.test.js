// Every PyTorch fixture case through the public API (the test contract's runCase(), tests/contract/):
// output and attention weights within 1e-4 (abs) + 1e-4 (rel) of torch.nn.MultiheadAttention /
// the torch reference formulas. The Node driver of the contract: scripts/test.sh runs it once per
// WASM module (WEBATTENTION_WASM) and, with WEBATTENTION_THREADS=<n> (2), with every module made
// with threads: n, so the MHA cases run on the worker pool.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { runCase } from '../contract/contract.mjs';
import { AUTO_MIN_FLOPS, caseFlops, poolTestHooks } from '../internals.mjs';
import { loadFixtures } from './fixtures.js';

const cases = loadFixtures();
const worst = { output: { abs: 0, name: '' }, attnWeights: { abs: 0, name: '' } };
const pooledCases = new Set();
let current = null;
poolTestHooks.beforeRun = () => pooledCases.add(current);

test('the fixture set covers the configurations the product promises', () => {
  const names = cases.map((c) => c.name);
  assert.ok(cases.length >= 30, `only ${cases.length} cases`);
  for (const must of ['causal', 'large_logits', 'long_1024', 'head_dim_1', 'one_token', 'no_bias',
    'free_head_dims', 'cross_kdim_vdim', 'attn_mask_bool_3d', 'attn_mask_float_2d', 'kpm_float']) {
    assert.ok(names.includes(must), `missing fixture ${must}`);
  }
});

for (const c of cases) {
  test(`parity with PyTorch: ${c.kind} ${c.name}`, async () => {
    current = c.name;
    const r = await runCase(api, c);
    for (const key of ['output', 'attnWeights']) {
      if (c.expected[key] && r[key].abs > worst[key].abs) worst[key] = { abs: r[key].abs, name: c.name };
      assert.ok(r[key].ok, `${key}: ${r[key].detail}`);
    }
  });
}

const threads = Number(process.env.WEBATTENTION_THREADS);
test('the MHA cases ran where WEBATTENTION_THREADS says: the worker pool when > 1, else only big ones', () => {
  if (!(threads > 1)) {
    // Default 'auto': only a call of at least AUTO_MIN_FLOPS may go to the pool (and only once the
    // workers are up, so whether it does is timing; that it is big enough is not).
    const small = [...pooledCases].filter((name) => caseFlops(cases.find((k) => k.name === name)) < AUTO_MIN_FLOPS);
    assert.deepEqual(small, [], 'calls under AUTO_MIN_FLOPS went to the pool');
    return;
  }
  // Only a case with a single (batch, K/V head) unit has nothing to split.
  const splittable = cases.filter((c) => c.kind === 'mha' && (c.inputs.query.shape.length === 3 ? c.inputs.query.shape[0] : 1) * (c.create.numKvHeads ?? c.create.numHeads) > 1);
  assert.deepEqual(splittable.filter((c) => !pooledCases.has(c.name)).map((c) => c.name), []);
  assert.ok(splittable.length >= 20, `${splittable.length} cases`);
});

after(() => {
  console.log(`worst abs error vs PyTorch: output ${worst.output.abs.toExponential(2)} (${worst.output.name}), ` +
    `attnWeights ${worst.attnWeights.abs.toExponential(2)} (${worst.attnWeights.name}); ` +
    `${pooledCases.size} cases on the worker pool`);
});
