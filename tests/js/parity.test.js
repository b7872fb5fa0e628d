// Every PyTorch fixture case through the public API: output and attention weights within
// 1e-4 (abs) + 1e-4 (rel) of torch.nn.MultiheadAttention / the torch reference formulas.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, scaledDotProductAttention, selfAttention } from 'webattention';
import { compare, loadFixtures } from './fixtures.js';

const cases = loadFixtures();
const worst = { output: { abs: 0, name: '' }, attnWeights: { abs: 0, name: '' } };

async function run(c) {
  if (c.kind === 'mha') {
    const mha = await MultiHeadAttention.create(c.create);
    try {
      mha.loadStateDict(c.stateDict);
      const { query, key, value } = c.inputs;
      return await mha.forward(query, key, value, c.options);
    } finally {
      mha.dispose();
    }
  }
  if (c.kind === 'sdpa') {
    const { query, key, value } = c.inputs;
    return scaledDotProductAttention(query, key, value, c.options);
  }
  if (c.kind === 'self') return selfAttention(c.inputs.x, c.options);
  throw new Error(`unknown fixture kind ${c.kind}`);
}

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
    const result = await run(c);
    for (const key of ['output', 'attnWeights']) {
      const expected = c.expected[key];
      if (!expected) {
        assert.equal(result[key] ?? null, null, `${key} returned but not requested`);
        continue;
      }
      assert.ok(result[key], `${key} missing`);
      const { ratio, abs } = compare(result[key], expected);
      if (abs > worst[key].abs) worst[key] = { abs, name: c.name };
      assert.ok(ratio <= 1, `${key}: max abs error ${abs} is outside 1e-4 + 1e-4·|expected|`);
    }
  });
}

after(() => {
  console.log(`worst abs error vs PyTorch: output ${worst.output.abs.toExponential(2)} (${worst.output.name}), ` +
    `attnWeights ${worst.attnWeights.abs.toExponential(2)} (${worst.attnWeights.name})`);
});
