// The WebGPU backend's NaN rule (README, "Limits"; web/src/finite_inputs.js): a call whose visible
// inputs hold a NaN or an infinity (query, key, value, additive mask entries other than -Inf, the
// loaded weights, a NaN sink) runs on the CPU, where a row that sees a NaN is NaN, as on WASM; the
// same random contract cases the WASM differential test runs (tests/js/differential.test.js) must
// match the float64 reference there, NaN rows included. On 1aa1392 they ran on the GPU, which
// promised nothing for them. A call on a cache stored on the GPU stays there, and the GPU applies
// the rule itself (the tests after the first two; they failed before nonfinite_rows.wgsl.js).
// Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { checkResult, compare, filled, mhaReference, randomDecodeCase, randomMhaCase, rng, runCase, sameBits, seededStateDict } from '../contract/contract.mjs';
import { runDecode } from '../contract/run_decode.mjs';
import { adapterName, gpu, runs } from './node_setup.mjs';
import { passHooks } from '../internals.mjs';

const COUNT = 12;  // SwiftShader runs WGSL on the CPU: a few dozen small calls a second

// A value a row can see that is NaN or infinite (-Inf in an additive mask masks: not one).
const seesNonFinite = (c) => [c.inputs.query, c.inputs.key, c.inputs.value].some((t) => t.data.some((x) => !Number.isFinite(x)))
  || [c.options.keyPaddingMask, c.options.attnMask].some((m) => m?.data instanceof Float32Array
    && m.data.some((x) => x !== -Infinity && !Number.isFinite(x)));

test(`${COUNT} random MHA configurations with NaN or ±Infinity inputs on backend 'webgpu' (${adapterName}) follow the WASM rule`, async () => {
  const failures = [];
  let checked = 0, moved = 0;
  for (let seed = 1; checked < COUNT && seed < 2000; seed++) {
    const c = randomMhaCase(seed);
    if (!seesNonFinite(c)) continue;
    checked += 1;
    runs.length = 0;
    const r = await runCase(api, c, { create: { backend: 'webgpu', gpu } }).catch((e) => ({ ok: false, detail: `threw ${e?.message}` }));
    // A row that sees a NaN is NaN in the reference: such a call must have left the GPU. One whose
    // non-finite keys every row masks may stay there (masked means absent, on every backend).
    const nanRows = !c.expected.output.data.every(Number.isFinite);
    if (!r.ok) failures.push(`seed ${seed}: ${r.detail}`);
    else if (nanRows && runs.join() !== 'wasm') failures.push(`seed ${seed}: ran on ${runs.join() || 'nothing'}, not the CPU`);
    if (runs.join() === 'wasm') moved += 1;
  }
  assert.equal(checked, COUNT);
  assert.ok(moved >= COUNT / 2, `only ${moved} of ${COUNT} calls ran on the CPU`);
  assert.deepEqual(failures, [], 'replay one with randomMhaCase(seed)');
});

test("a NaN or infinite weight, or a NaN sink: backend 'webgpu' computes as WASM does, bit for bit; finite weights go back to the GPU", async () => {
  const create = { embedDim: 8, numHeads: 2, sinks: true };
  const [onGpu, onWasm] = [await api.MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu }), await api.MultiHeadAttention.create(create)];
  try {
    const x = { data: filled(2 * 3 * 8, 8), shape: [2, 3, 8] };
    for (const [name, at, value] of [['out_proj.weight', 5, NaN], ['in_proj_weight', 70, Infinity], ['sinks', 1, NaN], ['in_proj_bias', 3, -Infinity]]) {
      const sd = seededStateDict(onGpu.stateDictShapes, 4);
      sd[name].data[at] = value;
      onGpu.loadStateDict(sd);
      onWasm.loadStateDict(sd);
      runs.length = 0;
      const [gpuOut, wasmOut] = [await onGpu.forward(x, x, x, { needWeights: true }), await onWasm.forward(x, x, x, { needWeights: true })];
      assert.ok(sameBits(gpuOut.output.data, wasmOut.output.data) && sameBits(gpuOut.attnWeights.data, wasmOut.attnWeights.data), `${name}[${at}] = ${value}`);
      assert.deepEqual(runs, ['wasm'], `${name}[${at}] = ${value}`);
    }
    onGpu.loadStateDict(seededStateDict(onGpu.stateDictShapes, 4));
    runs.length = 0;
    await onGpu.forward(x, x, x);
    assert.deepEqual(runs, ['webgpu']);
  } finally {
    onGpu.dispose();
    onWasm.dispose();
  }
});

test("a 16-bit module's float32 weight past its dtype's range (stored as ±Inf): WASM's bits, not the GPU's; as large a bias stays on the GPU; hostWeights: false refuses it", async () => {
  const x = { data: filled(2 * 3 * 8, 9), shape: [2, 3, 8] };
  const options = { keyPaddingMask: { data: new Uint8Array([0, 0, 1, 0, 0, 0]), shape: [2, 3] }, needWeights: true };
  for (const [weightsDtype, big] of [['float16', 7e4], ['bfloat16', 3.4e38]]) {
    const create = { embedDim: 8, numHeads: 2, weightsDtype };
    const [onGpu, onWasm] = [await api.MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu }), await api.MultiHeadAttention.create(create)];
    const gpuOnly = await api.MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu, hostWeights: false });
    try {
      const sd = seededStateDict(onGpu.stateDictShapes, 5);
      sd.in_proj_weight.data[17] = big;  // a query row's weight: stored as +Inf
      onGpu.loadStateDict(sd);
      onWasm.loadStateDict(sd);
      runs.length = 0;
      const [gpuOut, wasmOut] = [await onGpu.forward(x, x, x, options), await onWasm.forward(x, x, x, options)];
      assert.ok(sameBits(gpuOut.output.data, wasmOut.output.data) && sameBits(gpuOut.attnWeights.data, wasmOut.attnWeights.data), weightsDtype);
      assert.deepEqual(runs, ['wasm'], weightsDtype);
      assert.throws(() => gpuOnly.loadStateDict(sd), { name: 'StateDictError', argument: 'stateDict' }, weightsDtype);
      const biased = seededStateDict(onGpu.stateDictShapes, 5);
      biased.in_proj_bias.data[2] = big;  // float32 in every module
      onGpu.loadStateDict(biased);
      runs.length = 0;
      await onGpu.forward(x, x, x, options);
      assert.deepEqual(runs, ['webgpu'], weightsDtype);
    } finally {
      for (const m of [onGpu, onWasm, gpuOnly]) m.dispose();
    }
  }
});

// A cached call on a cache stored on the GPU cannot move to the CPU (its keys and values are on
// the device): there the GPU computes the rule itself (kernels/nonfinite_rows.wgsl.js). The random
// decode cases of the 16- and 8-bit contract (tests/contract/run_decode.mjs), with NaN and ±Inf put
// into some rows of x (query = key = value: every later row sees them), for each cache dtype,
// against the float64 reference and against WASM on a WASM cache fed the same chunks: a dozen
// cases in all, each dtype its own seeds (SwiftShader compiles each case's head widths anew).
const CACHED = 4;
const poisonValues = [NaN, Infinity, -Infinity];

// A decode case with `rows` positions of x holding a NaN or an infinity (one or all of a row's
// elements), its expected values recomputed; weight columns past a chunk's keys are 0 there.
function poisonedDecodeCase(seed, cacheDtype) {
  const c = randomDecodeCase(seed, { cacheDtype });
  const next = rng(seed + 1000);
  const pick = (n) => Math.floor((next() + 0.5) * n);
  const [B, T, E] = c.inputs.query.shape;
  const data = c.inputs.query.data;
  for (let k = 0; k < 1 + pick(2); k++) {
    const row = (pick(B) * T + pick(T)) * E;
    const x = poisonValues[pick(3)];
    if (next() < 0) data[row + pick(E)] = x;
    else data.fill(x, row, row + E);
  }
  const config = { embedDim: E, numHeads: c.create.numHeads, kdim: E, vdim: E, headDim: E / c.create.numHeads, valueHeadDim: E / c.create.numHeads, weightsDtype: 'float32' };
  const { output, weights } = mhaReference(config, c.stateDict, c.inputs.query, c.inputs.query, c.inputs.query, { ...c.options, isCausal: true }, cacheDtype);
  if (weights) {
    // forward() of a chunk gives weights over the keys up to its end: later columns read 0.
    let at = 0;
    for (const n of c.chunks) {
      for (let g = 0; g < weights.length / (T * T); g++) {
        for (let i = at; i < at + n; i++) weights.fill(0, (g * T + i) * T + at + n, (g * T + i + 1) * T);
      }
      at += n;
    }
  }
  c.expected = { output: { data: output, shape: c.expected.output.shape }, ...(weights ? { attnWeights: { data: weights, shape: c.expected.attnWeights.shape } } : {}) };
  return c;
}

for (const [d, cacheDtype] of ['float32', 'float16', 'int8'].entries()) {
  test(`${CACHED} random decode cases with NaN or ±Infinity in x, through a ${cacheDtype} cache on backend 'webgpu' (${adapterName}): the reference's and WASM's values`, async (t) => {
    const failures = [];
    const wasmDiffers = [];
    let nanRows = 0;
    for (let seed = 1 + d * CACHED; seed <= (d + 1) * CACHED; seed++) {
      const c = poisonedDecodeCase(seed, cacheDtype);
      runs.length = 0;
      const [onGpu, onWasm] = [await runDecode(api, c, { create: { backend: 'webgpu', gpu } }), await runDecode(api, c)];
      if (runs.length === 0 || !runs.every((r) => r === 'webgpu')) failures.push(`seed ${seed}: ran on ${runs}`);
      const checks = [['reference', checkResult(c, onGpu)]];
      // WASM's own arithmetic on infinities can differ from the reference's (it may form a score
      // of -Inf·x and +Inf·y in another order: NaN where the reference has -Inf, a zero row): such
      // a case is held to the reference alone, and listed.
      if (checkResult(c, onWasm).ok) checks.push(['WASM', checkResult({ ...c, expected: onWasm }, onGpu)]);
      else wasmDiffers.push(seed);
      for (const [what, r] of checks) if (!r.ok) failures.push(`seed ${seed} against ${what}: ${r.detail}`);
      nanRows += c.expected.output.data.some(Number.isNaN) ? 1 : 0;
    }
    t.diagnostic(`WASM differs from the reference for seeds [${wasmDiffers}]`);
    assert.ok(nanRows >= CACHED / 2, `only ${nanRows} of ${CACHED} cases have a NaN row`);
    assert.ok(wasmDiffers.length <= CACHED / 4, `WASM differs from the reference for seeds ${wasmDiffers}`);
    assert.deepEqual(failures, [], 'replay one with poisonedDecodeCase(seed, cacheDtype)');
  });
}

// The same steps on a GPU cache and on a WASM cache: each step's output and weights compared
// (NaN where NaN). steps: [name, (mha, caches) => a forward's promise, or null for a cache op].
async function sameOnBoth(create, stateDict, cacheOptions, steps) {
  const failures = [];
  const modules = [await api.MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu }), await api.MultiHeadAttention.create(create)];
  try {
    const caches = modules.map((mha) => { mha.loadStateDict(stateDict); return { a: mha.createCache(cacheOptions) }; });
    let nan = 0;
    for (const [name, step] of steps) {
      runs.length = 0;
      const [onGpu, onWasm] = [await step(modules[0], caches[0]), await step(modules[1], caches[1])];
      if (!onGpu) continue;
      if (runs[0] !== 'webgpu') failures.push(`${name}: ran on ${runs[0]}`);
      nan += onWasm.output.data.some(Number.isNaN) ? 1 : 0;
      for (const key of ['output', 'attnWeights']) {
        const r = onWasm[key] && compare(onGpu[key], onWasm[key]);
        if (r && !r.ok) failures.push(`${name} ${key}: ${r.detail}`);
      }
    }
    return { failures, nan };
  } finally {
    modules.forEach((mha) => mha.dispose());
  }
}

// Rows of x [1, n, E] from `seed`, rows `poisoned` ([row, value, count]) holding the value in
// their first `count` elements (all of them when not given).
function rowsOf(n, seed, poisoned = [], E = 8) {
  const data = filled(n * E, seed);
  for (const [row, x, count = E] of poisoned) data.fill(x, row * E, row * E + count);
  return { data, shape: [1, n, E] };
}

test("a GPU cache's flags follow fork(), truncate() and reset(), and a window's slide: the WASM cache's outputs", async () => {
  const create = { embedDim: 8, numHeads: 2 };
  const sd = seededStateDict((await api.MultiHeadAttention.create(create)).stateDictShapes, 3);
  const call = (x, options = {}) => (mha, caches, which = 'a') => mha.forward(x, x, x, { cache: caches[which], needWeights: true, averageAttnWeights: false, ...options });
  const { failures, nan } = await sameOnBoth(create, sd, { maxLength: 16 }, [
    ['4 finite rows', call(rowsOf(4, 1))],
    ['a NaN row, an Inf row, a finite one', call(rowsOf(3, 2, [[0, NaN], [1, Infinity]]))],
    ['fork, one row', (mha, caches) => { caches.b = caches.a.fork(); return call(rowsOf(1, 3))(mha, caches, 'b'); }],
    ['truncate(4): the poisoned positions gone', (mha, caches) => { caches.a.truncate(4); return null; }],
    ['2 finite rows after truncate', call(rowsOf(2, 4))],
    ['the fork again: still poisoned', (mha, caches) => call(rowsOf(1, 5))(mha, caches, 'b')],
    ['reset the fork, 2 finite rows', (mha, caches) => { caches.b.reset(); return call(rowsOf(2, 6))(mha, caches, 'b'); }],
  ]);
  assert.equal(nan, 3, 'the poisoned call and the fork\'s two');
  assert.deepEqual(failures, []);
  const slide = await sameOnBoth(create, sd, { window: 3 }, [
    ['a -Inf row among finite ones', call(rowsOf(3, 7, [[1, -Infinity]]))],
    ...[8, 9, 10, 11, 12].map((seed) => [`one row (seed ${seed})`, call(rowsOf(1, seed))]),
  ]);
  assert.ok(slide.nan >= 1 && slide.nan < 6, `${slide.nan} NaN steps: the window slides past the poisoned row`);
  assert.deepEqual(slide.failures, []);
});

test('a cached GPU call with a NaN or +Inf key-padding entry, or a NaN sink: the WASM cache\'s outputs', async () => {
  const create = { embedDim: 8, numHeads: 2, sinks: true };
  const sd = seededStateDict((await api.MultiHeadAttention.create(create)).stateDictShapes, 5);
  const kpm = (values) => ({ data: Float32Array.from(values), shape: [1, values.length] });
  const call = (x, options) => (mha, caches) => mha.forward(x, x, x, { cache: caches.a, needWeights: true, ...options });
  const { failures, nan } = await sameOnBoth(create, sd, { maxLength: 16 }, [
    ['finite rows, a -Inf entry', call(rowsOf(3, 1), { keyPaddingMask: kpm([0, -Infinity, 0.5]) })],
    ['a NaN entry', call(rowsOf(1, 2), { keyPaddingMask: kpm([0, 0, NaN, 1]) })],
    ['a +Inf entry', call(rowsOf(1, 3), { keyPaddingMask: kpm([Infinity, -Infinity, 0, 0, 0]) })],
    ['masked NaN entries only (-Inf masks)', call(rowsOf(1, 4), { keyPaddingMask: kpm([0, -Infinity, 0, 0, 0, 2]) })],
  ]);
  assert.equal(nan, 2);
  assert.deepEqual(failures, []);
  sd.sinks.data[1] = NaN;
  const sink = await sameOnBoth(create, sd, { maxLength: 8 }, [['a NaN sink', call(rowsOf(2, 5), {})]]);
  assert.equal(sink.nan, 1);
  assert.deepEqual(sink.failures, []);
});

test('a GPU cache with grouped-query heads and RoPE, float16, and a non-finite weight: the WASM cache\'s outputs', async () => {
  const create = { embedDim: 16, numHeads: 4, numKvHeads: 2, rotary: {} };
  const shapes = (await api.MultiHeadAttention.create(create)).stateDictShapes;
  const call = (x) => (mha, caches) => mha.forward(x, x, x, { cache: caches.a, needWeights: true });
  const rope = await sameOnBoth(create, seededStateDict(shapes, 7), { maxLength: 12, dtype: 'float16' }, [
    ['3 finite rows', call(rowsOf(3, 1, [], 16))],
    ['an element of +Inf, then finite rows', call(rowsOf(3, 2, [[0, Infinity, 1]], 16))],
    ['one row of 1e30 (an infinity in float16)', call(rowsOf(1, 3, [[0, 1e30]], 16))],
  ]);
  assert.equal(rope.nan, 2);
  assert.deepEqual(rope.failures, []);
  for (const [name, at, value] of [['k_proj_weight', 17, Infinity], ['out_proj.weight', 3, NaN]]) {
    const sd = seededStateDict(shapes, 8);
    sd[name].data[at] = value;
    const r = await sameOnBoth(create, sd, { maxLength: 4 }, [['2 rows', call(rowsOf(2, 4, [], 16))]]);
    assert.equal(r.nan, 1, `${name}[${at}] = ${value}`);
    assert.deepEqual(r.failures, [], `${name}[${at}] = ${value}`);
  }
});

// A score of -Inf by arithmetic is no mask (PyTorch's rule, docs/attention-math/basics.md §1): embedDim 1
// and x = [-Inf] is NaN (the row's only key scores -Inf); a -Inf-scoring key whose value is
// infinite makes every later row NaN (its weight 0 times the value). Before the rule's kernel
// knew it, the GPU gave the first a zero row and dropped the key from the later rows.
test('a GPU cache: a score of -Inf by arithmetic is no mask (embedDim 1 and x = [-Inf]; a -Inf key with an infinite value)', async () => {
  const tensor = (values, shape) => ({ data: Float32Array.from(values), shape });
  const call = (x) => (mha, caches) => mha.forward(x, x, x, { cache: caches.a, needWeights: true });
  const sd1 = {
    in_proj_weight: tensor([0.5, -0.7, 0.3], [3, 1]), in_proj_bias: tensor([0.1, -0.2, 0.3], [3]),
    'out_proj.weight': tensor([2], [1, 1]), 'out_proj.bias': tensor([0.25], [1]),
  };
  const one = await sameOnBoth({ embedDim: 1, numHeads: 1 }, sd1, { maxLength: 4 }, [
    ['x = [-Inf]', call(tensor([-Infinity], [1, 1, 1]))],
  ]);
  assert.equal(one.nan, 1);
  assert.deepEqual(one.failures, []);
  // W_q with no zero (an infinite token's query is infinite, not NaN), W_k and W_v all ones: token 2
  // = [-Inf, 0] has key and value [-Inf, -Inf], which every later (positive) query scores -Inf.
  const sd2 = {
    in_proj_weight: tensor([1, 0.5, 0.5, 1, 1, 1, 1, 1, 1, 1, 1, 1], [6, 2]), in_proj_bias: tensor([0, 0, 0, 0, 0, 0], [6]),
    'out_proj.weight': tensor([1, 0, 0, 1], [2, 2]), 'out_proj.bias': tensor([0.25, 0.25], [2]),
  };
  const rows = (values) => tensor(values.flat(), [1, values.length, 2]);
  const two = await sameOnBoth({ embedDim: 2, numHeads: 1 }, sd2, { maxLength: 8 }, [
    ['two finite rows', call(rows([[0.5, 0.25], [0.3, 0.9]]))],
    ['the -Inf token and two after it', call(rows([[-Infinity, 0], [0.2, 0.4], [0.7, 0.1]]))],
    ['one finite row after', call(rows([[0.6, 0.6]]))],
  ]);
  assert.equal(two.nan, 2, 'the chunk with the token, and the row after it');
  assert.deepEqual(two.failures, []);
});

// Without weights or sinks, a decode step's NaN rule runs in its reduce kernel
// (decode_reduce_nan.wgsl.js), per (batch, head, row), not in a dispatch of its own: the same
// poisoned steps as above (flags, fork, truncate, a window's slide, a NaN key-padding entry, GQA
// with RoPE on float16 and int8 caches, a -Inf score by arithmetic), each of the WASM cache's
// outputs, and no nonFiniteRows dispatch among them.
test('a GPU cache without weights or sinks: the NaN rule in the decode reduce gives the WASM cache\'s outputs', async () => {
  const kernels = new Set();
  passHooks.onDispatches = (dispatches) => dispatches.forEach((d) => kernels.add(d.kernel.replace('webattention ', '').split(':')[0]));
  try {
    const call = (x, options = {}) => (mha, caches, which = 'a') => mha.forward(x, x, x, { cache: caches[which], needWeights: false, ...options });
    const create = { embedDim: 8, numHeads: 2 };
    const sd = seededStateDict((await api.MultiHeadAttention.create(create)).stateDictShapes, 3);
    const kpm = (values) => ({ data: Float32Array.from(values), shape: [1, values.length] });
    const flags = await sameOnBoth(create, sd, { maxLength: 16 }, [
      ['4 finite rows', call(rowsOf(4, 1))],
      ['a NaN row, an Inf row, a finite one', call(rowsOf(3, 2, [[0, NaN], [1, Infinity]]))],
      ['fork, one row', (mha, caches) => { caches.b = caches.a.fork(); return call(rowsOf(1, 3))(mha, caches, 'b'); }],
      ['truncate(4)', (mha, caches) => { caches.a.truncate(4); return null; }],
      ['2 finite rows after truncate', call(rowsOf(2, 4))],
      ['a NaN key-padding entry', call(rowsOf(1, 5), { keyPaddingMask: kpm([0, 0, NaN, 1, 0, 0, 0]) })],
      ['the fork again: still poisoned', (mha, caches) => call(rowsOf(1, 6))(mha, caches, 'b')],
    ]);
    assert.equal(flags.nan, 4);
    assert.deepEqual(flags.failures, []);
    const slide = await sameOnBoth(create, sd, { window: 3 }, [
      ['a -Inf row among finite ones', call(rowsOf(3, 7, [[1, -Infinity]]))],
      ...[8, 9, 10, 11].map((seed) => [`one row (seed ${seed})`, call(rowsOf(1, seed))]),
    ]);
    assert.ok(slide.nan >= 1 && slide.nan < 5, `${slide.nan} NaN steps: the window slides past the poisoned row`);
    assert.deepEqual(slide.failures, []);
    const gqa = { embedDim: 16, numHeads: 4, numKvHeads: 2, rotary: {} };
    const shapes = (await api.MultiHeadAttention.create(gqa)).stateDictShapes;
    for (const dtype of ['float16', 'int8']) {
      const rope = await sameOnBoth(gqa, seededStateDict(shapes, 7), { maxLength: 12, dtype }, [
        ['3 finite rows', call(rowsOf(3, 1, [], 16))],
        ['an element of +Inf, then finite rows', call(rowsOf(3, 2, [[0, Infinity, 1]], 16))],
        ['one finite row', call(rowsOf(1, 3, [], 16))],
      ]);
      assert.equal(rope.nan, 2, dtype);
      assert.deepEqual(rope.failures, [], dtype);
    }
    const tensor = (values, shape) => ({ data: Float32Array.from(values), shape });
    const sd1 = {
      in_proj_weight: tensor([0.5, -0.7, 0.3], [3, 1]), in_proj_bias: tensor([0.1, -0.2, 0.3], [3]),
      'out_proj.weight': tensor([2], [1, 1]), 'out_proj.bias': tensor([0.25], [1]),
    };
    const one = await sameOnBoth({ embedDim: 1, numHeads: 1 }, sd1, { maxLength: 4 }, [['x = [-Inf]', call(tensor([-Infinity], [1, 1, 1]))]]);
    assert.equal(one.nan, 1);
    assert.deepEqual(one.failures, []);
  } finally {
    passHooks.onDispatches = null;
  }
  assert.ok(kernels.has('decodeReduceNan'), `kernels run: ${[...kernels]}`);
  assert.ok(!kernels.has('nonFiniteRows'), `kernels run: ${[...kernels]}`);
});
