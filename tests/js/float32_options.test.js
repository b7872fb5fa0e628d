// Scalar options are stored as float32 by the core and the GPU (issue 34): a value float32 rounds
// to 0 or to Infinity is an OptionError naming the option, at create() and in
// scaledDotProductAttention() alike. On 1aa1392 `scale: 1e-46` in sdpa became 0, which the core
// read as "default" (1/√dk), and create({ scale: 1e-46 }) gave uniform weights; 1e39 and 3.5e38
// passed as scale or softcap and gave all-NaN outputs, as did a linear rotary factor of 1e-320.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, OptionError, scaledDotProductAttention } from '#webattention';

const FLT_MAX = 3.4028234663852886e38;
const TOO_SMALL = [1e-46, 1e-300, 5e-324, 2 ** -150];
const TOO_LARGE = [1e39, 3.5e38, 1e300];
const base = { embedDim: 8, numHeads: 2 };
const x = { data: new Float32Array([1, 0, 0, 1]), shape: [2, 2] };

test('sdpa scale: rounds to 0 or Infinity as a float32 is an OptionError; the float32 extremes are taken', async () => {
  for (const scale of [...TOO_SMALL, ...TOO_LARGE]) {
    await assert.rejects(() => scaledDotProductAttention(x, x, x, { scale }),
      (e) => e instanceof OptionError && e.argument === 'scale' && e.message.includes(String(scale)), String(scale));
  }
  for (const scale of [2 ** -149, FLT_MAX]) {
    const { output } = await scaledDotProductAttention(x, x, x, { scale, needWeights: true });
    assert.equal(output.shape.length, 2, String(scale));
  }
});

test('create(): scale, softcap, qkNorm.eps, rotary base and scaling factors out of float32 range are OptionErrors naming them', async () => {
  const cases = [
    ...[...TOO_SMALL, ...TOO_LARGE].flatMap((v) => [[{ scale: v }, 'scale'], [{ softcap: v }, 'softcap'], [{ qkNorm: { eps: v } }, 'qkNorm.eps']]),
    [{ rotary: { scaling: { type: 'linear', factor: 1e-320 } } }, 'rotary.scaling.factor'],
    [{ rotary: { scaling: { type: 'linear', factor: 1e39 } } }, 'rotary.scaling.factor'],
    [{ rotary: { scaling: { type: 'llama3', factor: 8, lowFreqFactor: 1e-46 } } }, 'rotary.scaling.lowFreqFactor'],
    [{ rotary: { scaling: { type: 'llama3', factor: 8, highFreqFactor: 1e39 } } }, 'rotary.scaling.highFreqFactor'],
    // Distinct doubles, one float32: the core would divide by highFreqFactor − lowFreqFactor = 0.
    [{ rotary: { scaling: { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 1 + 1e-9 } } }, 'rotary.scaling.highFreqFactor'],
    [{ rotary: { base: 1e39 } }, 'rotary.base'],
    [{ rotary: { base: 1 + 1e-9 } }, 'rotary.base'],  // 1 as a float32: no falling frequencies
  ];
  for (const [options, argument] of cases) {
    await assert.rejects(() => MultiHeadAttention.create({ ...base, ...options }),
      (e) => e instanceof OptionError && e.argument === argument, JSON.stringify(options));
  }
  const mha = await MultiHeadAttention.create({ ...base, scale: 2 ** -149, softcap: FLT_MAX, rotary: { base: FLT_MAX } });
  mha.dispose();
});
