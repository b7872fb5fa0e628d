// create({ activations: 'int8' }) (docs/attention-math/storage.md §11): int8 and int4 weights multiplied by
// projection inputs quantised per block of 32 (llama.cpp's q8_0 rule), each block's dot product in
// int32. Random MHA configurations and decode sequences against the float64 reference that
// quantises the same way (tests/contract/storage.mjs's int8Activations); the documented f32
// order of the block sum, bit for bit; the default unchanged; bad options as typed errors.
// scripts/test.sh runs tests/js on every single-threaded module and on the worker pool
// (WEBATTENTION_THREADS=2), so these run there too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { MultiHeadAttention, OptionError } from '#webattention';
import { compare, randomDecodeCase, randomMhaCase, randomTensor, rng, runCase } from '../contract/contract.mjs';

const INTEGER_WEIGHTS = ['int8', 'int4'];

/** The names and details of the cases that do not match their reference. */
async function failures(cases) {
  const failed = [];
  for (const c of cases) {
    const r = await runCase(api, c);
    if (!r.ok) failed.push(`${c.name}: ${r.detail}`);
  }
  return failed;
}
const seeds = (n) => Array.from({ length: n }, (_, i) => i + 1);

for (const weightsDtype of INTEGER_WEIGHTS) {
  test(`40 random MHA configurations: ${weightsDtype} weights, int8 activations, against the reference that quantises alike`, async () => {
    assert.deepEqual(await failures(seeds(40).map((seed) => randomMhaCase(seed, { weightsDtype, activations: 'int8' }))), []);
  });

  test(`random decode sequences: ${weightsDtype} weights, int8 activations, float32 cache`, async () => {
    assert.deepEqual(await failures(seeds(12).map((seed) => randomDecodeCase(seed, { weightsDtype, activations: 'int8' }))), []);
  });
}

test('the quantised activations matter: their reference differs from the float32 one by more than the tolerance', () => {
  const act8 = randomMhaCase(3, { weightsDtype: 'int8', activations: 'int8' });
  const f32 = randomMhaCase(3, { weightsDtype: 'int8' });
  assert.ok(!compare({ data: act8.expected.output.data, shape: act8.expected.output.shape }, f32.expected.output).ok,
    'the reference with int8 activations equals the float32 one: the cases would not tell them apart');
});

// ---- the rule, bit for bit -------------------------------------------------------------------

const f = Math.fround;
const roundHalfEven = (x) => {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
};
const roundHalfAway = (x) => Math.sign(x) * Math.floor(Math.abs(x) + 0.5);

/** A row's int8 blocks by `rule`: { codes, scales } (d = fl(max|x| / 127), q = rule(fl(x / d))). */
function quantise(x, rule) {
  const codes = [], scales = [];
  for (let b = 0; b < x.length; b += 32) {
    const block = Array.from(x.slice(b, b + 32));
    const d = f(Math.max(0, ...block.map(Math.abs)) / 127);
    scales.push(d);
    for (const v of block) codes.push(d > 0 ? Math.max(-127, Math.min(127, rule(f(v / d)))) : 0);
  }
  return { codes, scales };
}

/**
 * y = x Wᵀ + b as an int8-weights module with int8 activations computes it, in float32: per
 * column, acc = 0; for each block in order acc += fl(fl(s_w · d_x) · dot); y = fl(acc + b).
 */
function emulatedLinear(x, W, bias, inDim, outDim) {
  const xq = quantise(x, roundHalfAway);
  const y = new Float32Array(outDim);
  for (let o = 0; o < outDim; o++) {
    const wq = quantise(W.subarray(o * inDim, (o + 1) * inDim), roundHalfEven);
    let acc = 0;
    for (let b = 0; b * 32 < inDim; b++) {
      let dot = 0;
      for (let k = b * 32; k < Math.min(inDim, b * 32 + 32); k++) dot += wq.codes[k] * xq.codes[k];
      acc = f(acc + f(f(wq.scales[b] * xq.scales[b]) * dot));
    }
    y[o] = f(acc + bias[o]);
  }
  return y;
}

// E 80: blocks of 32, 32 and 16, 10 panels of 8 outputs (a one-row step's pairs); E 516: 65
// panels, 64 of them in far groups of 4 (kernels/simd128/q8_panel_groups_simd128.h) and one narrow.
for (const E of [80, 516]) {
  test(`int8 weights × int8 activations give the documented float32 sum bit for bit (E ${E}; one key: attention passes V on)`, async () => {
    const next = rng(21);
    const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 1, weightsDtype: 'int8', activations: 'int8' });
    try {
      const sd = Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, randomTensor(shape, next)]));
      mha.loadStateDict(sd);
      const x = randomTensor([1, 1, E], next);
      // Block 0's largest value 127 · 2⁻⁷, so d = 2⁻⁷ exactly, and x[3] = 62.5 d, a tie: away from
      // zero it is 63 (to even it would be 62).
      for (let k = 0; k < 32; k++) x.data[k] *= 0.5;
      x.data[0] = 127 / 128;
      x.data[3] = 62.5 / 128;
      const W = sd.in_proj_weight.data, b = sd.in_proj_bias.data;
      const v = emulatedLinear(x.data, W.subarray(2 * E * E), b.subarray(2 * E), E, E);
      const want = emulatedLinear(v, sd['out_proj.weight'].data, sd['out_proj.bias'].data, E, E);
      const { output } = await mha.forward(x, x, x);
      assert.deepEqual([...output.data], [...want]);
    } finally {
      mha.dispose();
    }
  });
}

// ---- the default, the options --------------------------------------------------------------

test("activations 'float32' is the default: the same bits, and the config says so", async () => {
  const next = rng(8);
  const x = randomTensor([2, 3, 16], next);
  const outputs = [];
  for (const options of [{}, { activations: 'float32' }]) {
    const mha = await MultiHeadAttention.create({ embedDim: 16, numHeads: 2, weightsDtype: 'int4', ...options });
    const sdNext = rng(9);
    mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, randomTensor(shape, sdNext)])));
    assert.equal(mha.config.activations, 'float32');
    outputs.push([...(await mha.forward(x, x, x)).output.data]);
    mha.dispose();
  }
  assert.deepEqual(outputs[0], outputs[1]);
});

test("activations 'int8' with float weights, or a value off the list, is an OptionError naming activations", async () => {
  for (const weightsDtype of [undefined, 'float32', 'float16', 'bfloat16']) {
    await assert.rejects(MultiHeadAttention.create({ embedDim: 8, numHeads: 2, weightsDtype, activations: 'int8' }),
      (e) => e instanceof OptionError && e.argument === 'activations'
        && e.message.includes(`'int8' needs weightsDtype 'int8' or 'int4', got weightsDtype '${weightsDtype ?? 'float32'}'`));
  }
  for (const activations of ['int4', 'INT8', 'float16', 8, null, '', {}]) {
    await assert.rejects(MultiHeadAttention.create({ embedDim: 8, numHeads: 2, weightsDtype: 'int8', activations }),
      (e) => e instanceof OptionError && e.argument === 'activations' && /activations: expected 'float32' \| 'int8'/.test(e.message), String(activations));
  }
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, weightsDtype: 'int8', activations: 'int8' });
  assert.equal(mha.config.activations, 'int8');
  mha.dispose();
});

test("'auto' without a GPU computes int8 activations on WASM (on a GPU they run there: tests/webgpu/node_int8_activations)", async () => {
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, weightsDtype: 'int8', activations: 'int8', backend: 'auto' });
  assert.equal(mha.backend, 'wasm');
  mha.dispose();
});
