// create()'s score options and per-projection biases (issue 20) at the boundary: bad values are
// OptionErrors naming the option, the resolved config says what was chosen, the state-dict entries
// follow the bias flags, and the options mean what they say (a scale of 1/sqrt(headDim) is the
// default; a softcap far above every score changes nothing; logits in the thousands stay finite;
// with sinks, a row with every key masked gives zero heads and zero weights).
// PyTorch-derived parity is in checkpoint_layouts.test.js and the differential test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, OptionError } from '#webattention';
import { compare } from '../contract/compare.mjs';
import { filled, seededStateDict } from '../contract/random.mjs';

const base = { embedDim: 8, numHeads: 2 };

test('bad bias, scale and softcap values are OptionErrors naming the option', async () => {
  for (const [options, argument] of [
    [{ scale: 0 }, 'scale'], [{ scale: -1 }, 'scale'], [{ scale: NaN }, 'scale'], [{ scale: Infinity }, 'scale'], [{ scale: '0.5' }, 'scale'],
    [{ softcap: 0 }, 'softcap'], [{ softcap: -30 }, 'softcap'], [{ softcap: Infinity }, 'softcap'], [{ softcap: null }, 'softcap'],
    [{ bias: 'yes' }, 'bias'], [{ bias: null }, 'bias'], [{ bias: { q: 1 } }, 'bias.q'], [{ bias: { w: true } }, 'w'],
    [{ sinks: 'yes' }, 'sinks'], [{ sinks: 1 }, 'sinks'],
    [{ qkNorm: null }, 'qkNorm'], [{ qkNorm: { eps: 0 } }, 'qkNorm.eps'], [{ qkNorm: { epsilon: 1e-6 } }, 'epsilon'],
  ]) {
    await assert.rejects(MultiHeadAttention.create({ ...base, ...options }),
      (e) => e instanceof OptionError && e.argument === argument, JSON.stringify(options));
  }
});

test('the resolved config and the state-dict entries follow the options', async () => {
  const cases = [
    [{}, { q: true, k: true, v: true, out: true }, 0.5, null, ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias']],
    [{ bias: { q: true, k: true, v: true } }, { q: true, k: true, v: true, out: false }, 0.5, null, ['in_proj_weight', 'in_proj_bias', 'out_proj.weight']],
    [{ bias: { k: true, out: true }, scale: 0.125, softcap: 30, sinks: true }, { q: false, k: true, v: false, out: true }, 0.125, 30,
      ['in_proj_weight', 'k_proj_bias', 'out_proj.weight', 'out_proj.bias', 'sinks']],
  ];
  for (const [options, bias, scale, softcap, names] of cases) {
    const mha = await MultiHeadAttention.create({ ...base, ...options });
    try {
      assert.deepEqual([mha.config.bias, mha.config.scale, mha.config.softcap], [bias, scale, softcap]);
      assert.deepEqual(mha.stateDictShapes.map((s) => s.name), names);
    } finally {
      mha.dispose();
    }
  }
});

/** forward(x, x, x) of a module with `options` and the weights of seed 3 (scaled by `w`). */
async function output(options, w = 1) {
  const mha = await MultiHeadAttention.create({ ...base, ...options });
  try {
    mha.loadStateDict(seededStateDict(mha.stateDictShapes, 3, w));
    const x = { data: filled(2 * 5 * 8, 11), shape: [2, 5, 8] };
    return (await mha.forward(x, x, x, { isCausal: true })).output;
  } finally {
    mha.dispose();
  }
}

test('qkNorm: its weights are state-dict entries [headDim]; no bilinear form (the scores are not bilinear then)', async () => {
  const mha = await MultiHeadAttention.create({ ...base, bias: false, qkNorm: {} });
  try {
    assert.deepEqual(mha.config.qkNorm, { eps: 1e-6 });
    assert.deepEqual(mha.stateDictShapes.slice(-2), [{ name: 'q_norm.weight', shape: [4] }, { name: 'k_norm.weight', shape: [4] }]);
    mha.loadStateDict(seededStateDict(mha.stateDictShapes, 0, 1));
    assert.throws(() => mha.headBilinearForm(0), (e) => e instanceof OptionError && /qkNorm/.test(e.message));
  } finally {
    mha.dispose();
  }
});

test('scale 1/sqrt(headDim) is the default; a softcap far above the scores changes nothing; a tiny one flattens them', async () => {
  const plain = await output({});
  assert.ok(compare(await output({ scale: 0.5 }), plain).ok);
  assert.ok(compare(await output({ softcap: 1e6 }), plain).ok);
  assert.ok(!compare(await output({ softcap: 1e-3 }), plain).ok, 'a softcap of 1e-3 makes every score ~0');
});

test('logits in the thousands under a softcap stay finite (tanh saturates, no inf − inf)', async () => {
  const { data } = await output({ scale: 1000, softcap: 20 }, 4);
  assert.ok(data.every(Number.isFinite));
});

test('sinks: a row with every key masked gives zero heads (output = out_proj.bias) and zero weights; other rows sum below 1', async () => {
  const mha = await MultiHeadAttention.create({ ...base, sinks: true });
  try {
    const sd = seededStateDict(mha.stateDictShapes, 20, 1);
    sd.sinks = { data: new Float32Array([2, -1]), shape: [2] };
    mha.loadStateDict(sd);
    const x = { data: filled(2 * 3 * 8, 12), shape: [2, 3, 8] };
    const keyPaddingMask = { data: new Uint8Array([1, 1, 1, 0, 0, 1]), shape: [2, 3] };  // batch 0: all masked
    const { output, attnWeights } = await mha.forward(x, x, x, { keyPaddingMask, needWeights: true, averageAttnWeights: false });
    const outBias = sd['out_proj.bias'].data;
    for (let i = 0; i < 3 * 8; i++) assert.equal(output.data[i], outBias[i % 8]);
    assert.ok(attnWeights.data.subarray(0, 2 * 3 * 3).every((w) => w === 0));
    for (let row = 2 * 3; row < 4 * 3; row++) {
      const total = attnWeights.data.subarray(row * 3, row * 3 + 3).reduce((a, b) => a + b, 0);
      assert.ok(total > 0 && total < 0.99, `row ${row}: weights sum to ${total}`);
    }
  } finally {
    mha.dispose();
  }
});
